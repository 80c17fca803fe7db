//! The reference backend: interprets kernel IR with plain strided loops, one element at a time,
//! every dtype through [`Scalar`]. Slow and obviously correct; the oracle for every other path.

use crate::backend::{Backend, Executable, prepared_once};
use crate::buffer::{Buffer, HostBuffer};
use crate::device::Target;
use crate::scalar_ops::{binary, reduce_finish, reduce_identity, reduce_step, unary};
use smelt_ir::kernel::{Access, Index, Instr, Kernel, Level};
use smelt_ir::random::{self, RandomDist};
use smelt_ir::{DType, LibraryCall, Result, Scalar, Work};
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

/// The output buffers of `kernel`, in output order: fresh zeros, or for an `Update` its
/// source's memory when no one else holds it (a copy otherwise). Shared by every backend.
/// Errors: a `memory` error when the system cannot allocate one.
pub(crate) fn prepare_outputs(
    kernel: &Kernel,
    inputs: &mut [Arc<HostBuffer>],
) -> Result<Vec<HostBuffer>> {
    assert_eq!(
        inputs.len(),
        kernel.read_args(),
        "invariant: one buffer per read argument"
    );
    kernel
        .outputs()
        .map(|out_arg| {
            let spec = &kernel.args[out_arg];
            match spec.access {
                Access::Write if kernel.overwrites(out_arg) => {
                    HostBuffer::try_for_overwrite(spec.dtype, spec.len)
                }
                Access::Write | Access::Read => HostBuffer::try_zeros(spec.dtype, spec.len),
                Access::Update { from } => {
                    let src = std::mem::replace(
                        &mut inputs[from],
                        Arc::new(HostBuffer::zeros(spec.dtype, 0)),
                    );
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
                    Ok(b)
                }
            }
        })
        .collect()
}

/// Runs `kernel` with its read arguments `inputs` (in argument order) and returns its output
/// buffers, in output order. An `Update` output reuses its source's memory when no one else
/// holds it.
/// Panics when an output cannot be allocated (the backend's `run_kernel` returns the error).
pub fn run_kernel(kernel: &Kernel, inputs: Vec<Arc<HostBuffer>>) -> Vec<HostBuffer> {
    verify(kernel);
    run_verified(kernel, inputs).unwrap_or_else(|e| panic!("{e}"))
}

/// Asserts that `kernel` verifies: a kernel that does not is a compiler bug.
pub(crate) fn verify(kernel: &Kernel) {
    let errors = kernel.verify();
    assert!(
        errors.is_empty(),
        "invariant: kernel IR verifies before it runs: {errors:?}\n{kernel}"
    );
}

/// The reference backend: the interpreter on host buffers, library routines as host loops.
#[derive(Clone, Copy, Debug)]
pub struct Reference;

impl Backend for Reference {
    type Prepared = ();

    fn target(&self) -> Target {
        Target::Reference
    }

    fn prepare(&self, work: &Work) -> Result<()> {
        match work {
            Work::Kernel(k) => verify(k),
            Work::Library(_) => {}
        }
        Ok(())
    }

    fn prepared(&self, exec: &Executable) -> Result<Arc<[()]>> {
        prepared_once(self, exec, &exec.reference)
    }

    fn run_kernel(&self, kernel: &Kernel, _: &(), args: Vec<Buffer>) -> Result<Vec<Buffer>> {
        let args = args.into_iter().map(Buffer::into_host).collect();
        Ok(run_verified(kernel, args)?
            .into_iter()
            .map(Buffer::from)
            .collect())
    }

    fn run_library(&self, call: &LibraryCall, _: &(), args: Vec<Buffer>) -> Result<Buffer> {
        let args: Vec<_> = args.into_iter().map(Buffer::into_host).collect();
        Ok(crate::library::try_run_library(call, &args)?.into())
    }

    fn zeros(&self, dtype: DType, len: usize) -> Result<Buffer> {
        Ok(HostBuffer::try_zeros(dtype, len)?.into())
    }

    fn upload(&self, host: Arc<HostBuffer>) -> Result<Buffer> {
        Ok(Buffer::Host(host))
    }

    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
}

/// [`run_kernel`] for a kernel known to verify.
pub(crate) fn run_verified(
    kernel: &Kernel,
    mut inputs: Vec<Arc<HostBuffer>>,
) -> Result<Vec<HostBuffer>> {
    let mut out = Outputs {
        first: kernel.read_args(),
        buffers: prepare_outputs(kernel, &mut inputs)?,
    };
    let rank = kernel.shape.len();
    let outer_rank = rank - kernel.reduce_axes;
    let outer_shape = &kernel.shape[..outer_rank];
    let inner_shape = &kernel.shape[outer_rank..];
    if outer_shape.contains(&0) {
        return Ok(out.buffers);
    }
    let types = kernel.value_dtypes();
    let levels = kernel.levels();
    let passes = kernel.passes();
    let mut values = vec![Scalar::Bool(false); kernel.body.len()];
    let mut outer = vec![0usize; outer_rank];
    let mut point = vec![0usize; rank];
    let mut inner = vec![0usize; inner_shape.len()];
    // Calls `f` at every point of the current row (never for an empty row).
    let mut walk_row = |point: &mut [usize], f: &mut dyn FnMut(&[usize])| {
        if inner_shape.contains(&0) {
            return;
        }
        inner.iter_mut().for_each(|p| *p = 0);
        loop {
            point[outer_rank..].copy_from_slice(&inner);
            f(point);
            if !next(&mut inner, inner_shape) {
                break;
            }
        }
        point[outer_rank..].iter_mut().for_each(|p| *p = 0);
    };
    loop {
        point[..outer_rank].copy_from_slice(&outer);
        point[outer_rank..].iter_mut().for_each(|p| *p = 0);
        // The row program (`Kernel::passes`): row-level instructions, then a walk over the row.
        for pass in &passes {
            let row = pass.row.clone().filter(|&i| {
                levels[i] == Level::Row && !matches!(kernel.body[i], Instr::Reduce { .. })
            });
            eval(kernel, row, &point, &inputs, &mut out, &mut values);
            match pass.reduce {
                Some(r) => {
                    let Instr::Reduce { op, x } = kernel.body[r] else {
                        unreachable!("a pass folds a Reduce instruction")
                    };
                    let dtype = types[r].expect("reductions have a value");
                    let mut acc = reduce_identity(op, dtype);
                    walk_row(&mut point, &mut |p| {
                        eval(
                            kernel,
                            pass.elements.iter().copied(),
                            p,
                            &inputs,
                            &mut out,
                            &mut values,
                        );
                        acc = reduce_step(op, acc, values[x], dtype);
                    });
                    values[r] = reduce_finish(acc, dtype);
                }
                None if !pass.elements.is_empty() => walk_row(&mut point, &mut |p| {
                    eval(
                        kernel,
                        pass.elements.iter().copied(),
                        p,
                        &inputs,
                        &mut out,
                        &mut values,
                    );
                }),
                None => {}
            }
        }
        if !next(&mut outer, outer_shape) {
            break;
        }
    }
    Ok(out.buffers)
}

/// The output buffers of a run, addressed by kernel argument.
struct Outputs {
    /// The argument of the first output.
    first: usize,
    buffers: Vec<HostBuffer>,
}

/// Evaluates the instructions `which` (never a reduction: the row program folds those).
fn eval(
    kernel: &Kernel,
    which: impl Iterator<Item = usize>,
    point: &[usize],
    inputs: &[Arc<HostBuffer>],
    out: &mut Outputs,
    values: &mut [Scalar],
) {
    for i in which {
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
            Instr::Reduce { .. } => unreachable!("the row program folds reductions"),
            Instr::Random {
                dist,
                dtype,
                seed,
                offset,
                index,
            } => {
                let (seed, offset) = (values[*seed].as_i64(), values[*offset].as_i64());
                let position = address(index, point) as i64;
                match dist {
                    RandomDist::Bits => {
                        Scalar::Int(random::draw(*dist, *dtype, seed, offset, position) as i64)
                    }
                    RandomDist::Uniform | RandomDist::Normal | RandomDist::Exponential => {
                        Scalar::Float(random::draw_value(*dist, *dtype, seed, offset, position))
                    }
                }
            }
            Instr::Store { arg, index, x } => {
                out.buffers[*arg - out.first].set(address(index, point), values[*x]);
                Scalar::Bool(false)
            }
        };
    }
}
