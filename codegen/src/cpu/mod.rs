//! The cranelift CPU backend, shaped like cranelift-jit-demo: [`CpuJit`] is long-lived and owns
//! the JIT module and reusable contexts; a short-lived `Translator` renders one kernel with one
//! `match` over kernel IR instructions.
//!
//! Every compiled kernel has the signature (the "kernel ABI")
//!
//! ```text
//! extern "C" fn(bufs: *const *mut u8, sizes: *const i64, strides: *const i64, begin: i64, end: i64)
//! ```
//!
//! `bufs` holds one base pointer per kernel argument; `sizes` the kernel's iteration shape;
//! `strides` per load/store instruction (in body order) its `rank` strides and then its offset,
//! all in elements. The generated code runs indices `begin..end` of dimension 0 (the whole of
//! a rank-0 or fully reduced kernel when called with `0..1`). Sizes and strides are data, so
//! one compiled kernel serves every size of the same [`structure_key`].
//!
//! f32 (and f16/bf16) exp, expm1, log, tanh, sigmoid, erf, sin, cos and pow, and f64 exp,
//! expm1, log, tanh and sigmoid, are inline polynomial approximations (`math.rs`, a few ulp
//! from the interpreter's libm answer, on `f32x4`/`f64x2` in SIMD loops). The other
//! transcendentals (f64 erf, sin, cos and pow among them) and the rare integer divisions call
//! back into Rust functions the runtime registers ([`HELPERS`]), so their results match the
//! reference interpreter exactly.

mod helpers;
pub mod host;
mod jit;
mod math;
mod prefetch;
mod stream;
mod translate;

pub use helpers::HELPERS;
pub use jit::{CompiledKernel, CpuJit, KernelFn, Unsupported};
pub use translate::is_transposing_load;

/// Whether the compiled code of `kernel` runs its reductions in columns (SIMD lanes across
/// rows of its innermost kept dim; `translate::columns`).
pub fn runs_in_columns(kernel: &Kernel) -> bool {
    translate::columns(kernel)
}

/// For a kernel whose SIMD code runs in columns along its dim 0 (one kept dim, `x.sum(0)`):
/// the rows of its widest column blocks ([`CompiledKernel::column_rows`]).
fn column_task_rows(kernel: &Kernel) -> Option<usize> {
    (kernel.shape.len() - kernel.reduce_axes == 1 && translate::columns(kernel))
        .then(|| translate::column_block_rows(kernel))
}

/// Whether `instr` is a transcendental (`UnaryOp::is_transcendental`, or pow):
/// far dearer than a load and a store.
pub fn is_transcendental(instr: &Instr) -> bool {
    match instr {
        Instr::Unary { op, .. } => op.is_transcendental(),
        Instr::Binary { op, .. } => *op == BinaryOp::Pow,
        // Ten Philox rounds and a helper call per element.
        Instr::Random { .. } => true,
        Instr::Load { .. }
        | Instr::Store { .. }
        | Instr::Const { .. }
        | Instr::Where { .. }
        | Instr::Cast { .. }
        | Instr::Reduce { .. } => false,
    }
}

/// Whether the cpu backend computes `instr` with an inline approximation (`math.rs`, a few
/// ulp) rather than the interpreter's f64 libm call (`inline_math`; `pow` in f32).
pub fn is_inline_math(instr: &Instr) -> bool {
    match instr {
        Instr::Unary { op, compute, .. } => inline_math(*op, *compute),
        Instr::Binary { op, compute, .. } => {
            *op == BinaryOp::Pow && compute.compute_dtype() == DType::F32
        }
        Instr::Load { .. }
        | Instr::Store { .. }
        | Instr::Const { .. }
        | Instr::Where { .. }
        | Instr::Cast { .. }
        | Instr::Reduce { .. }
        | Instr::Random { .. } => false,
    }
}

/// Whether `op` computed in `compute` has an inline approximation in `math.rs`
/// ([`math::Inline`]): in f32 (f16 and bf16 compute in f32) every inline routine, in f64
/// those with an f64 form.
pub(crate) fn inline_math(op: UnaryOp, compute: DType) -> bool {
    math::Inline::of(op).is_some_and(|f| match compute.compute_dtype() {
        DType::F32 => true,
        DType::F64 => f.has_f64(),
        DType::Bool
        | DType::U8
        | DType::I8
        | DType::I16
        | DType::I32
        | DType::I64
        | DType::F16
        | DType::BF16 => false,
        DType::C64 | DType::C128 => panic!("{REAL_KERNELS}"),
    })
}

/// Whether the compiled code of `kernel` stashes a value of its last reduction pass in its
/// output for the final store pass (`translate::stash_plan`).
pub fn has_stash(kernel: &Kernel) -> bool {
    translate::stash_plan(kernel).is_some()
}

/// Whether `kernel` has a streaming variant worth running ([`CpuJit::compile_streaming`]):
/// rank 2 or more, an f32 store contiguous along the innermost dim (a store of a row's
/// result does not move along it) and no column reduction. A stash (which the final pass
/// reads back from cache) moves to a scratch row in that variant ([`scratch_row`]). A tiled
/// kernel (a transpose) streams too: each row of its blocks is whole cache lines (asserted
/// in `translate/tiles.rs`), which the write-combining buffers then send out whole
/// (`docs/benchmarks.md`, "Figures behind the code's constants").
pub fn streaming_candidate(kernel: &Kernel) -> bool {
    kernel.shape.len() >= 2
        && !runs_in_columns(kernel)
        && kernel.body.iter().any(|i| {
            matches!(i, Instr::Store { arg, index, .. }
                if kernel.args[*arg].dtype == DType::F32 && index.strides.last() == Some(&1))
        })
}

/// The bytes of the scratch row a launch of `kernel`'s streaming variant passes after its
/// arguments' addresses (one per concurrent call, 16-byte aligned; passed even when empty,
/// since the code reads the address on entry): the row of its stash, whose values the final
/// pass reads back from cache while it streams the output, then the row of its reread value
/// (`translate::reread_plan`), which the passes after the first read back. `None` where the
/// kernel has neither. The ordinary code needs the rows only where its output cannot hold the
/// stash or there is a reread ([`plain_scratch_row`]). The bytes depend on the row's length,
/// which compiled code shared by kernels of one structure does not fix: each launch passes its
/// kernel's.
pub fn scratch_row(kernel: &Kernel) -> Option<usize> {
    let stash = translate::stash_plan(kernel).map_or(0, |st| st.dtype.size());
    let reread = translate::reread_plan(kernel).map_or(0, |_| DType::F32.size());
    let row = *kernel.shape.last()?;
    (stash + reread > 0).then_some(row * (stash + reread))
}

/// The bytes of the scratch row a launch of `kernel`'s ordinary code passes after its
/// arguments' addresses, as [`scratch_row`]: only where the stash cannot wait in the output
/// (an f16 or bf16 output of an f32 value, such as a bfloat16 softmax) or there is a reread
/// value. `None` otherwise.
pub fn plain_scratch_row(kernel: &Kernel) -> Option<usize> {
    let stash_there = translate::stash_plan(kernel).is_some_and(|st| st.in_scratch);
    (stash_there || translate::reread_plan(kernel).is_some())
        .then(|| scratch_row(kernel))
        .flatten()
}

/// Whether the compiled code of `kernel` writes a value of its first reduction pass to a
/// scratch row for the later passes to read back (`translate::reread_plan`).
pub fn has_reread(kernel: &Kernel) -> bool {
    translate::reread_plan(kernel).is_some()
}

/// Whether every vector store of a launch of `kernel` with buffers at `bases` (one address per
/// argument) is 16-byte aligned, as a streaming store must be ([`CpuJit::compile_streaming`]).
///
/// In a kernel of rank 2 or more, SIMD loops start the innermost dim at 0 (or at a multiple
/// of 4, in tiles) and step it by 4, and only a store contiguous along it is a vector store.
/// Such a store's address is then `base + 4·(offset + Σ point[d]·stride[d])` with the
/// innermost point a multiple of 4: a multiple of 16 for every point when the base is, and the
/// offset and every other stride are multiples of 4 elements.
pub fn streams_aligned(kernel: &Kernel, bases: &[usize]) -> bool {
    kernel.shape.len() >= 2
        && kernel.body.iter().all(|i| match i {
            Instr::Store { arg, index, .. }
                if kernel.args[*arg].dtype == DType::F32 && index.strides.last() == Some(&1) =>
            {
                let rest = &index.strides[..index.strides.len() - 1];
                bases.get(*arg).is_some_and(|b| b % 16 == 0)
                    && index.offset % 4 == 0
                    && rest.iter().all(|s| s % 4 == 0)
            }
            Instr::Store { .. }
            | Instr::Load { .. }
            | Instr::Const { .. }
            | Instr::Unary { .. }
            | Instr::Binary { .. }
            | Instr::Where { .. }
            | Instr::Cast { .. }
            | Instr::Reduce { .. }
            | Instr::Random { .. } => true,
        })
}

use smelt_ir::kernel::{Access, Index, Instr, Kernel, Level};
use smelt_ir::{BinaryOp, DType, REAL_KERNELS, Scalar, UnaryOp};

/// How an index moves along the innermost dimension; the one stride fact compiled code depends
/// on (contiguous loads vectorise, broadcast ones splat).
fn inner_class(index: &Index) -> char {
    match index.strides.last() {
        None => '-',
        Some(0) => 'b',
        Some(1) => 'c',
        Some(_) => 's',
    }
}

/// Appends `n` in decimal and a `;` (numbers are self-delimiting, so keys are injective).
fn push_num(s: &mut String, n: u64) {
    let mut digits = [b';'; 21];
    let mut i = digits.len() - 1;
    let mut n = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    s.push_str(std::str::from_utf8(&digits[i..]).expect("ASCII digits"));
}

/// The kernel's structure: dtypes, access kinds, the op DAG with its constants (by their
/// bits), which loads and stores are contiguous or broadcast along the innermost dim, and each
/// instruction's level — everything compiled code depends on, and nothing about sizes.
/// Kernels with equal keys share compiled code. Built with plain pushes (no formatting
/// machinery): every kernel not yet prepared for its schedule step computes it to find its code.
pub fn structure_key(kernel: &Kernel) -> String {
    let mut s = String::with_capacity(16 + 4 * kernel.args.len() + 12 * kernel.body.len());
    s.push('r');
    push_num(&mut s, kernel.shape.len() as u64);
    s.push('k');
    push_num(&mut s, kernel.reduce_axes as u64);
    for a in &kernel.args {
        s.push('a');
        push_num(&mut s, a.dtype as u64);
        match a.access {
            Access::Read => s.push('R'),
            Access::Write => s.push('W'),
            Access::Update { from } => {
                s.push('U');
                push_num(&mut s, from as u64);
            }
        }
    }
    // A reduction kernel's accesses along its innermost kept dim (see `translate::columns`).
    let rank = kernel.shape.len();
    let lane = (kernel.reduce_axes > 0 && kernel.reduce_axes < rank)
        .then(|| rank - kernel.reduce_axes - 1);
    s.push('|');
    for (instr, level) in kernel.body.iter().zip(kernel.levels()) {
        if let (Some(lane), Some(index)) = (lane, instr.index()) {
            s.push(match index.strides[lane] {
                0 => 'B',
                1 => 'C',
                _ => 'S',
            });
        }
        s.push(match level {
            Level::Row => 'r',
            Level::Element => 'e',
        });
        match instr {
            Instr::Load { arg, index } => {
                s.push('L');
                push_num(&mut s, *arg as u64);
                s.push(inner_class(index));
                if translate::is_transposing_load(instr) {
                    s.push('T');
                }
            }
            Instr::Store { arg, index, x } => {
                s.push('S');
                push_num(&mut s, *arg as u64);
                s.push(inner_class(index));
                push_num(&mut s, *x as u64);
            }
            Instr::Const { value, dtype } => {
                s.push('C');
                push_num(&mut s, *dtype as u64);
                let (kind, bits) = match *value {
                    Scalar::Bool(b) => ('b', b as u64),
                    Scalar::Int(i) => ('i', i as u64),
                    Scalar::Float(f) => ('f', f.to_bits()),
                    Scalar::Complex(..) => panic!("{REAL_KERNELS}"),
                };
                s.push(kind);
                push_num(&mut s, bits);
            }
            Instr::Unary { op, x, compute } => {
                s.push('u');
                push_num(&mut s, *op as u64);
                push_num(&mut s, *compute as u64);
                push_num(&mut s, *x as u64);
            }
            Instr::Binary { op, a, b, compute } => {
                s.push('b');
                push_num(&mut s, *op as u64);
                push_num(&mut s, *compute as u64);
                push_num(&mut s, *a as u64);
                push_num(&mut s, *b as u64);
            }
            Instr::Where { cond, a, b } => {
                s.push('w');
                push_num(&mut s, *cond as u64);
                push_num(&mut s, *a as u64);
                push_num(&mut s, *b as u64);
            }
            Instr::Cast { x, to } => {
                s.push('c');
                push_num(&mut s, *to as u64);
                push_num(&mut s, *x as u64);
            }
            Instr::Reduce { op, x } => {
                s.push('x');
                push_num(&mut s, *op as u64);
                push_num(&mut s, *x as u64);
            }
            Instr::Random {
                dist,
                dtype,
                seed,
                offset,
                ..
            } => {
                s.push('R');
                push_num(&mut s, dist.pack(*dtype) as u64);
                push_num(&mut s, *seed as u64);
                push_num(&mut s, *offset as u64);
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use smelt_ir::kernel::{Arg, Index};
    use smelt_ir::{BinaryOp, DType};

    fn kernel(value: Scalar, inner_stride: isize) -> Kernel {
        let index = |s: isize| Index {
            strides: vec![4, s],
            offset: 0,
        };
        Kernel {
            name: "k".into(),
            shape: vec![3, 4],
            reduce_axes: 0,
            args: vec![
                Arg {
                    dtype: DType::F32,
                    len: 12,
                    access: Access::Read,
                },
                Arg {
                    dtype: DType::F32,
                    len: 12,
                    access: Access::Write,
                },
            ],
            body: vec![
                Instr::Load {
                    arg: 0,
                    index: index(inner_stride),
                },
                Instr::Const {
                    value,
                    dtype: DType::F32,
                },
                Instr::Binary {
                    op: BinaryOp::Mul,
                    a: 0,
                    b: 1,
                    compute: DType::F32,
                },
                Instr::Store {
                    arg: 1,
                    index: index(1),
                    x: 2,
                },
            ],
        }
    }

    #[test]
    fn structure_key_separates_what_code_depends_on() {
        let base = structure_key(&kernel(Scalar::Float(2.0), 1));
        assert_eq!(base, structure_key(&kernel(Scalar::Float(2.0), 1)));
        // Sizes do not matter; constants (to the bit), dtypes and inner strides do.
        let mut bigger = kernel(Scalar::Float(2.0), 1);
        bigger.shape = vec![30, 4];
        bigger.args[0].len = 120;
        bigger.args[1].len = 120;
        assert_eq!(base, structure_key(&bigger));
        assert_ne!(base, structure_key(&kernel(Scalar::Float(-2.0), 1)));
        assert_ne!(
            structure_key(&kernel(Scalar::Float(0.0), 1)),
            structure_key(&kernel(Scalar::Float(-0.0), 1))
        );
        assert_ne!(base, structure_key(&kernel(Scalar::Int(2), 1)));
        assert_ne!(base, structure_key(&kernel(Scalar::Float(2.0), 0)));
        assert_ne!(base, structure_key(&kernel(Scalar::Float(2.0), 2)));
        let mut f64_input = kernel(Scalar::Float(2.0), 1);
        f64_input.args[0].dtype = DType::F64;
        assert_ne!(base, structure_key(&f64_input));
    }
}
