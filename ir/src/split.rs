//! Splitting a full reduction into blocks ([`Kernel::split_full_reduction`]).
//!
//! A kernel that reduces every dim (`x.sum()`, `x.amax()`) has no kept dim to spread over
//! threads. Its outermost reduced dim (`n0` long) is cut into `nb` blocks: the first kernel
//! keeps the block as its one kept dim and reduces each block to a partial, blocks running in
//! parallel; the second reduces the `nb` partials in block order and runs what followed the
//! reduction (its row-level instructions and stores).
//!
//! Why it is correct: every element lands in exactly one block, blocks are combined in order,
//! and partials keep the accumulator's precision (float sums in f64, integer sums in i64, as
//! the one-pass reduction accumulates), so only the grouping of the additions changes. Max,
//! min and integer sums give the same bits; a float sum can differ from one sequential f64 sum
//! in the last f64 bits, which its final rounding to f32 almost always hides. `nb` depends on
//! the shape alone, never on the thread count, so results do not depend on threads either.
//!
//! ```text
//! before:  kernel k space [4096, 4096] reduce 2            (x.sum())
//!            %0 = load a0[4096,1+0]; %1 = reduce_sum %0; %2 = store a1[0,0+0], %1
//! after:   kernel k_blocks space [64, 64, 4096] reduce 2   (64 partials, f64)
//!            %0 = load a0[262144,4096,1+0]; %1 = cast %0 to float64; %2 = reduce_sum %1
//!            %3 = store a1[1,0,0+0], %2
//!          kernel k_combine space [64] reduce 1
//!            %0 = load a1[1+0] : float64; %1 = reduce_sum %0; %2 = cast %1 to float32
//!            %3 = store a2[0+0], %2
//! ```

use crate::kernel::{Access, Arg, Index, Instr, Kernel, Level, ValueId};
use crate::{DType, ReduceOp};

/// Block counts tried, largest first: the first that divides the outermost reduced dim and
/// leaves at least [`MIN_BLOCK`] elements per block is taken.
const BLOCKS: [usize; 6] = [64, 32, 16, 8, 4, 2];
/// Elements a block must hold for the split to pay for its second launch.
const MIN_BLOCK: usize = 1 << 14;

impl Kernel {
    /// The kernel as (blocks, combine) when it reduces every dim with one sum, max or min of
    /// an element-level value, stores only after it and only row-level values, and is large
    /// enough; see the module docs. The blocks kernel reads this kernel's read arguments and
    /// writes the partials; the combine kernel reads the same arguments, then the partials,
    /// and writes this kernel's outputs (in the same order).
    pub fn split_full_reduction(&self) -> Option<(Kernel, Kernel)> {
        let rank = self.shape.len();
        if rank == 0 || self.reduce_axes != rank {
            return None;
        }
        // Runs before a kernel's first launch (and at every direct `run_kernel`): the size,
        // cheapest, first.
        let total: usize = self.shape.iter().product();
        let n0 = self.shape[0];
        let nb = BLOCKS
            .into_iter()
            .find(|&nb| n0.is_multiple_of(nb) && total / nb >= MIN_BLOCK)?;
        let [r] = self.reduces()[..] else {
            return None;
        };
        let Instr::Reduce { op, x } = self.body[r] else {
            return None;
        };
        let types = self.value_dtypes();
        let levels = self.levels();
        let dtype = types[r]?;
        if !matches!(op, ReduceOp::Sum | ReduceOp::Max | ReduceOp::Min)
            || dtype == DType::Bool
            || levels[x] != Level::Element
        {
            return None;
        }
        // Before the reduction nothing is stored; after it everything is row-level.
        let tail_ok = self.body.iter().enumerate().all(|(i, instr)| match instr {
            Instr::Store { .. } => i > r && levels[i] == Level::Row,
            Instr::Load { .. }
            | Instr::Const { .. }
            | Instr::Unary { .. }
            | Instr::Binary { .. }
            | Instr::Where { .. }
            | Instr::Cast { .. }
            | Instr::Reduce { .. }
            | Instr::Random { .. } => i < r || levels[i] == Level::Row,
        });
        if !tail_ok {
            return None;
        }
        // Sums accumulate as on the reference backend; max and min are exact in any dtype.
        let partial = if op == ReduceOp::Sum {
            dtype.accumulator()
        } else {
            dtype
        };
        Some((
            self.blocks(r, nb, partial, &types),
            self.combine(r, nb, partial, &types, &levels),
        ))
    }

    /// The first half of the split: `[nb, n0/nb, rest…]`, block dim kept, one partial each.
    fn blocks(&self, r: usize, nb: usize, partial: DType, types: &[Option<DType>]) -> Kernel {
        let rank = self.shape.len();
        let reads = self.read_args();
        let block = self.shape[0] / nb;
        let mut shape = vec![nb, block];
        shape.extend(&self.shape[1..]);
        let Instr::Reduce { op, x } = self.body[r] else {
            unreachable!("r is the reduction")
        };
        let mut body: Vec<Instr> = self.body[..r]
            .iter()
            .map(|instr| {
                // Dim 0 becomes blocks × rows of a block.
                let split = |index: &Index| {
                    let mut strides = vec![index.strides[0] * block as isize, index.strides[0]];
                    strides.extend(&index.strides[1..]);
                    Index {
                        strides,
                        offset: index.offset,
                    }
                };
                match instr {
                    Instr::Load { arg, index } => Instr::Load {
                        arg: *arg,
                        index: split(index),
                    },
                    Instr::Random {
                        dist,
                        dtype,
                        seed,
                        offset,
                        index,
                    } => Instr::Random {
                        dist: *dist,
                        dtype: *dtype,
                        seed: *seed,
                        offset: *offset,
                        index: split(index),
                    },
                    other @ (Instr::Const { .. }
                    | Instr::Unary { .. }
                    | Instr::Binary { .. }
                    | Instr::Where { .. }
                    | Instr::Cast { .. }
                    | Instr::Reduce { .. }
                    | Instr::Store { .. }) => other.clone(),
                }
            })
            .collect();
        let mut value = x;
        if types[x] != Some(partial) {
            body.push(Instr::Cast { x, to: partial });
            value = body.len() - 1;
        }
        body.push(Instr::Reduce { op, x: value });
        let mut strides = vec![0; rank + 1];
        strides[0] = 1;
        body.push(Instr::Store {
            arg: reads,
            index: Index { strides, offset: 0 },
            x: body.len() - 1,
        });
        let mut args = self.args[..reads].to_vec();
        args.push(Arg {
            dtype: partial,
            len: nb,
            access: Access::Write,
        });
        Kernel {
            name: format!("{}_blocks", self.name),
            shape,
            reduce_axes: rank,
            args,
            body,
        }
    }

    /// The second half: the partials reduced in block order, then the row-level
    /// instructions of the original (its indices at the one point they address).
    fn combine(
        &self,
        r: usize,
        nb: usize,
        partial: DType,
        types: &[Option<DType>],
        levels: &[Level],
    ) -> Kernel {
        let reads = self.read_args();
        let Instr::Reduce { op, .. } = self.body[r] else {
            unreachable!("r is the reduction")
        };
        let dtype = types[r].expect("a reduction has a value");
        let at = |index: &Index| Index {
            strides: vec![0],
            offset: index.offset,
        };
        let mut map: Vec<ValueId> = vec![usize::MAX; self.body.len()];
        let mut body = vec![];
        for (i, instr) in self.body.iter().enumerate() {
            if i == r {
                body.push(Instr::Load {
                    arg: reads,
                    index: Index {
                        strides: vec![1],
                        offset: 0,
                    },
                });
                body.push(Instr::Reduce {
                    op,
                    x: body.len() - 1,
                });
                if partial != dtype {
                    body.push(Instr::Cast {
                        x: body.len() - 1,
                        to: dtype,
                    });
                }
                map[i] = body.len() - 1;
                continue;
            }
            if levels[i] != Level::Row {
                continue;
            }
            let m = |v: ValueId| map[v];
            body.push(match instr {
                Instr::Load { arg, index } => Instr::Load {
                    arg: *arg,
                    index: at(index),
                },
                Instr::Store { arg, index, x } => Instr::Store {
                    arg: arg + 1,
                    index: at(index),
                    x: m(*x),
                },
                Instr::Const { value, dtype } => Instr::Const {
                    value: *value,
                    dtype: *dtype,
                },
                Instr::Unary { op, x, compute } => Instr::Unary {
                    op: *op,
                    x: m(*x),
                    compute: *compute,
                },
                Instr::Binary { op, a, b, compute } => Instr::Binary {
                    op: *op,
                    a: m(*a),
                    b: m(*b),
                    compute: *compute,
                },
                Instr::Where { cond, a, b } => Instr::Where {
                    cond: m(*cond),
                    a: m(*a),
                    b: m(*b),
                },
                Instr::Cast { x, to } => Instr::Cast { x: m(*x), to: *to },
                Instr::Random {
                    dist,
                    dtype,
                    seed,
                    offset,
                    index,
                } => Instr::Random {
                    dist: *dist,
                    dtype: *dtype,
                    seed: m(*seed),
                    offset: m(*offset),
                    index: at(index),
                },
                Instr::Reduce { .. } => unreachable!("one reduction, handled above"),
            });
            map[i] = body.len() - 1;
        }
        let mut args = self.args[..reads].to_vec();
        args.push(Arg {
            dtype: partial,
            len: nb,
            access: Access::Read,
        });
        args.extend(self.args[reads..].iter().cloned());
        Kernel {
            name: format!("{}_combine", self.name),
            shape: vec![nb],
            reduce_axes: 1,
            args,
            body,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum_kernel(shape: Vec<usize>, strides: Vec<isize>, dtype: DType) -> Kernel {
        let n: usize = shape.iter().product();
        let rank = shape.len();
        Kernel {
            name: "k".into(),
            shape,
            reduce_axes: rank,
            args: vec![
                Arg {
                    dtype,
                    len: n,
                    access: Access::Read,
                },
                Arg {
                    dtype,
                    len: 1,
                    access: Access::Write,
                },
            ],
            body: vec![
                Instr::Load {
                    arg: 0,
                    index: Index { strides, offset: 0 },
                },
                Instr::Reduce {
                    op: ReduceOp::Sum,
                    x: 0,
                },
                Instr::Const {
                    value: crate::Scalar::Float(0.5),
                    dtype,
                },
                Instr::Binary {
                    op: crate::BinaryOp::Mul,
                    a: 1,
                    b: 2,
                    compute: dtype,
                },
                Instr::Store {
                    arg: 1,
                    index: Index {
                        strides: vec![0; rank],
                        offset: 0,
                    },
                    x: 3,
                },
            ],
        }
    }

    #[test]
    fn split_halves_verify_and_keep_the_tail() {
        let k = sum_kernel(vec![4096, 4096], vec![4096, 1], DType::F32);
        let (blocks, combine) = k.split_full_reduction().expect("large enough to split");
        assert!(blocks.verify().is_empty(), "{:?}", blocks.verify());
        assert!(combine.verify().is_empty(), "{:?}", combine.verify());
        assert_eq!(blocks.shape, vec![64, 64, 4096]);
        assert_eq!(blocks.reduce_axes, 2);
        assert_eq!(blocks.args[1].dtype, DType::F64, "f32 partials are f64");
        assert_eq!(combine.shape, vec![64]);
        // load, reduce, cast back, the constant, the multiply, the store.
        assert_eq!(combine.body.len(), 6);
        assert!(matches!(combine.body[5], Instr::Store { arg: 2, x: 4, .. }));
    }

    #[test]
    fn small_or_unsuitable_kernels_are_not_split() {
        assert!(
            sum_kernel(vec![64, 64], vec![64, 1], DType::F32)
                .split_full_reduction()
                .is_none()
        );
        // A prime outermost dim has no block count.
        assert!(
            sum_kernel(vec![65537, 3], vec![3, 1], DType::F32)
                .split_full_reduction()
                .is_none()
        );
        // A kept dim: not a full reduction.
        let mut rows = sum_kernel(vec![4096, 4096], vec![4096, 1], DType::F32);
        rows.reduce_axes = 1;
        assert!(rows.split_full_reduction().is_none());
    }
}
