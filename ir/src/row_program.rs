//! The row program of a kernel, stated once for every backend: what runs once per kept point
//! and what runs in each pass over the reduced dims.
//!
//! A kernel runs its row-level instructions once per kept point (a row) and its element-level
//! ones in passes over the row ([`Kernel::levels`]): one pass per reduction, in body order,
//! evaluating only what that reduction's operand needs and folding it; then a final pass
//! evaluating the element-level stores and what they need (a softmax's normalised values, a
//! fused elementwise tail). Row-level instructions between two reductions run between their
//! passes, because they may read the first reduction's result. The reference interpreter, the
//! cranelift row program and the CUDA renderer all walk [`Kernel::passes`]; an elementwise
//! kernel (no reduced dims) is one final pass with every instruction row-level.

use crate::kernel::{Instr, Kernel, Level};
use std::ops::Range;

/// One pass of the row program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowPass {
    /// The body range whose row-level instructions (reductions aside) run once, before the
    /// walk over the row.
    pub row: Range<usize>,
    /// The reduction this pass folds; `None` for the final pass.
    pub reduce: Option<usize>,
    /// The element-level instructions evaluated at each point of the row, in body order: the
    /// operand of `reduce` and what it needs (stores excluded: they run once, in the final
    /// pass), or, in the final pass, the element-level stores and what they need. Empty when
    /// the final pass has nothing to store.
    pub elements: Vec<usize>,
}

impl Kernel {
    /// The element-level instructions that `roots` depend on, themselves included, as a mask
    /// over the body; the walk does not look past `stops` (values the caller provides another
    /// way, such as a stashed one or one read back).
    pub fn element_cone(&self, levels: &[Level], roots: &[usize], stops: &[usize]) -> Vec<bool> {
        let mut seen = vec![false; self.body.len()];
        let mut stack = roots.to_vec();
        while let Some(i) = stack.pop() {
            if seen[i] || levels[i] != Level::Element {
                continue;
            }
            seen[i] = true;
            if !stops.contains(&i) {
                stack.extend(self.body[i].operands());
            }
        }
        seen
    }

    /// The element-level stores, in body order: what the final pass writes.
    pub fn element_stores(&self, levels: &[Level]) -> Vec<usize> {
        (0..self.body.len())
            .filter(|&i| matches!(self.body[i], Instr::Store { .. }) && levels[i] == Level::Element)
            .collect()
    }

    /// The row program: one pass per reduction, in body order, then the final pass.
    pub fn passes(&self) -> Vec<RowPass> {
        let levels = self.levels();
        let listed = |mask: Vec<bool>| -> Vec<usize> {
            mask.iter()
                .enumerate()
                .filter(|&(i, &inside)| inside && !matches!(self.body[i], Instr::Store { .. }))
                .map(|(i, _)| i)
                .collect()
        };
        let mut passes = vec![];
        let mut row_done = 0;
        for r in self.reduces() {
            let Instr::Reduce { x, .. } = self.body[r] else {
                unreachable!("reduces() lists Reduce instructions")
            };
            passes.push(RowPass {
                row: row_done..r,
                reduce: Some(r),
                elements: listed(self.element_cone(&levels, &[x], &[])),
            });
            row_done = r;
        }
        let stores = self.element_stores(&levels);
        let cone = self.element_cone(&levels, &stores, &[]);
        passes.push(RowPass {
            row: row_done..self.body.len(),
            reduce: None,
            elements: (0..self.body.len()).filter(|&i| cone[i]).collect(),
        });
        passes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{Access, Arg, Index};
    use crate::{BinaryOp, DType, ReduceOp, UnaryOp};

    /// softmax over rows of `[2, 5]`: max pass, exp-sum pass, final normalised store.
    fn softmax() -> Kernel {
        let ix = |strides: Vec<isize>| Index { strides, offset: 0 };
        let f32 = DType::F32;
        Kernel {
            name: "softmax".into(),
            shape: vec![2, 5],
            reduce_axes: 1,
            args: vec![
                Arg {
                    dtype: f32,
                    len: 10,
                    access: Access::Read,
                },
                Arg {
                    dtype: f32,
                    len: 10,
                    access: Access::Write,
                },
            ],
            body: vec![
                Instr::Load {
                    arg: 0,
                    index: ix(vec![5, 1]),
                },
                Instr::Reduce {
                    op: ReduceOp::Max,
                    x: 0,
                },
                Instr::Binary {
                    op: BinaryOp::Sub,
                    a: 0,
                    b: 1,
                    compute: f32,
                },
                Instr::Unary {
                    op: UnaryOp::Exp,
                    x: 2,
                    compute: f32,
                },
                Instr::Reduce {
                    op: ReduceOp::Sum,
                    x: 3,
                },
                Instr::Unary {
                    op: UnaryOp::Reciprocal,
                    x: 4,
                    compute: f32,
                },
                Instr::Binary {
                    op: BinaryOp::Mul,
                    a: 3,
                    b: 5,
                    compute: f32,
                },
                Instr::Store {
                    arg: 1,
                    index: ix(vec![5, 1]),
                    x: 6,
                },
            ],
        }
    }

    #[test]
    fn a_softmax_runs_two_reduction_passes_and_a_store_pass() {
        let passes = softmax().passes();
        assert_eq!(
            passes,
            vec![
                RowPass {
                    row: 0..1,
                    reduce: Some(1),
                    elements: vec![0],
                },
                RowPass {
                    row: 1..4,
                    reduce: Some(4),
                    elements: vec![0, 2, 3],
                },
                RowPass {
                    row: 4..8,
                    reduce: None,
                    elements: vec![0, 2, 3, 6, 7],
                },
            ]
        );
        let k = softmax();
        let levels = k.levels();
        assert_eq!(k.element_stores(&levels), vec![7]);
        // Stopping at the exp (a stashed value) leaves its operands out.
        let cone = k.element_cone(&levels, &[7], &[3]);
        assert_eq!(
            (0..8).filter(|&i| cone[i]).collect::<Vec<_>>(),
            vec![3, 6, 7]
        );
    }

    #[test]
    fn an_elementwise_kernel_is_one_row_level_pass() {
        let mut k = softmax();
        k.reduce_axes = 0;
        k.body.truncate(1);
        k.body.push(Instr::Store {
            arg: 1,
            index: Index {
                strides: vec![5, 1],
                offset: 0,
            },
            x: 0,
        });
        assert_eq!(
            k.passes(),
            vec![RowPass {
                row: 0..2,
                reduce: None,
                elements: vec![],
            }]
        );
    }
}
