//! The reference backend: interprets kernel IR with plain strided loops, one element at a time,
//! every dtype through [`Scalar`]. Slow and obviously correct; the oracle for every other path.

use crate::buffer::Buffer;
use crate::scalar_ops::{binary, reduce_finish, reduce_identity, reduce_step, unary};
use smelt_ir::Scalar;
use smelt_ir::kernel::{Access, Index, Instr, Kernel};
use std::sync::Arc;

fn address(index: &Index, point: &[usize]) -> usize {
    let mut a = index.offset;
    for (i, s) in point.iter().zip(&index.strides) {
        a += *i as isize * s;
    }
    a as usize
}

/// Advances a row-major multi-index over `shape`; false when it wraps around.
fn next(point: &mut [usize], shape: &[usize]) -> bool {
    for d in (0..shape.len()).rev() {
        point[d] += 1;
        if point[d] < shape[d] {
            return true;
        }
        point[d] = 0;
    }
    false
}

/// Runs `kernel` with its read arguments `inputs` (in argument order) and returns its one
/// output buffer. An `Update` output reuses its source's memory when no one else holds it.
pub fn run_kernel(kernel: &Kernel, mut inputs: Vec<Arc<Buffer>>) -> Buffer {
    let errors = kernel.verify();
    assert!(
        errors.is_empty(),
        "invariant: kernel IR verifies before it runs: {errors:?}\n{kernel}"
    );
    let out_arg = kernel.args.len() - 1;
    assert_eq!(
        inputs.len(),
        out_arg,
        "invariant: one buffer per read argument"
    );
    let spec = &kernel.args[out_arg];
    let mut out = match spec.access {
        Access::Write | Access::Read => Buffer::zeros(spec.dtype, spec.len),
        Access::Update { from } => {
            let src = std::mem::replace(&mut inputs[from], Arc::new(Buffer::zeros(spec.dtype, 0)));
            let b = Arc::try_unwrap(src).unwrap_or_else(|shared| {
                crate::stats::count_allocation(shared.nbytes());
                (*shared).clone()
            });
            // Other loads of the same argument keep reading the old values.
            if kernel
                .body
                .iter()
                .any(|i| matches!(i, Instr::Load { arg, .. } if *arg == from))
            {
                inputs[from] = Arc::new(b.clone());
            }
            b
        }
    };
    let rank = kernel.shape.len();
    let outer_rank = rank - kernel.reduce_axes;
    let outer_shape = &kernel.shape[..outer_rank];
    let inner_shape = &kernel.shape[outer_rank..];
    if outer_shape.contains(&0) {
        return out;
    }
    let split = kernel.reduce_at().map(|r| r + 1).unwrap_or(0);
    let types = kernel.value_dtypes();
    let mut values = vec![Scalar::Bool(false); kernel.body.len()];
    let mut outer = vec![0usize; outer_rank];
    let mut point = vec![0usize; rank];
    loop {
        point[..outer_rank].copy_from_slice(&outer);
        if let Some(r) = kernel.reduce_at() {
            let Instr::Reduce { op, x } = kernel.body[r] else {
                unreachable!("reduce_at points at a Reduce")
            };
            let dtype = types[r].expect("reductions have a value");
            let mut acc = reduce_identity(op, dtype);
            if !inner_shape.contains(&0) {
                let mut inner = vec![0usize; inner_shape.len()];
                loop {
                    point[outer_rank..].copy_from_slice(&inner);
                    eval(kernel, 0..r, &point, &inputs, &mut out, &mut values);
                    acc = reduce_step(op, acc, values[x], dtype);
                    if !next(&mut inner, inner_shape) {
                        break;
                    }
                }
            }
            values[r] = reduce_finish(acc, dtype);
            point[outer_rank..].iter_mut().for_each(|p| *p = 0);
        }
        eval(
            kernel,
            split..kernel.body.len(),
            &point,
            &inputs,
            &mut out,
            &mut values,
        );
        if !next(&mut outer, outer_shape) {
            break;
        }
    }
    out
}

fn eval(
    kernel: &Kernel,
    range: std::ops::Range<usize>,
    point: &[usize],
    inputs: &[Arc<Buffer>],
    out: &mut Buffer,
    values: &mut [Scalar],
) {
    for i in range {
        values[i] = match &kernel.body[i] {
            Instr::Load { arg, index } => inputs[*arg].get(address(index, point)),
            Instr::Const { value, dtype } => value.cast(*dtype),
            Instr::Unary { op, x, compute } => unary(*op, values[*x], *compute),
            Instr::Binary { op, a, b, compute } => binary(*op, values[*a], values[*b], *compute),
            Instr::Where { cond, a, b } => {
                if values[*cond].as_bool() {
                    values[*a]
                } else {
                    values[*b]
                }
            }
            Instr::Cast { x, to } => values[*x].cast(*to),
            Instr::Reduce { .. } => {
                unreachable!("invariant: reductions are evaluated by the loop driver")
            }
            Instr::Store { index, x, .. } => {
                out.set(address(index, point), values[*x]);
                Scalar::Bool(false)
            }
        };
    }
}
