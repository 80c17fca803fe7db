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
//! f32 (and f16/bf16) exp, expm1, log, tanh, sigmoid, erf, sin, cos and pow are inline
//! polynomial approximations (`math.rs`, a few ulp from the interpreter's f64 libm answer, on
//! `f32x4` in SIMD loops). The other transcendentals, every f64 one and the rare integer
//! divisions call back into Rust functions the runtime registers ([`HELPERS`]), so their
//! results match the reference interpreter exactly.

mod helpers;
mod jit;
mod math;
mod translate;

pub use helpers::{BINARY_OPS, HELPERS, UNARY_OPS};
pub use jit::{CompiledKernel, CpuJit, KernelFn, Unsupported};

/// Whether the compiled code of `kernel` stashes a value of its last reduction pass in its
/// output for the final store pass (`translate::stash_plan`).
pub fn has_stash(kernel: &Kernel) -> bool {
    translate::stash_plan(kernel).is_some()
}

use smelt_ir::kernel::{Index, Instr, Kernel};
use std::fmt::Write as _;

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

/// The kernel's structure: dtypes, access kinds, the op DAG with its constants, which loads
/// and stores are contiguous or broadcast along the innermost dim, and each instruction's level
/// — everything compiled code depends on, and nothing about sizes. Kernels with equal keys
/// share compiled code.
pub fn structure_key(kernel: &Kernel) -> String {
    let mut s = format!("r{} k{} |", kernel.shape.len(), kernel.reduce_axes);
    for a in &kernel.args {
        let _ = write!(s, " {:?}:{:?}", a.dtype, a.access);
    }
    s.push_str(" |");
    for (instr, level) in kernel.body.iter().zip(kernel.levels()) {
        let l = match level {
            smelt_ir::kernel::Level::Row => 'r',
            smelt_ir::kernel::Level::Element => 'e',
        };
        let _ = match instr {
            Instr::Load { arg, index } => write!(s, " {l}ld{arg}{}", inner_class(index)),
            Instr::Store { arg, index, x } => write!(s, " {l}st{arg}{}%{x}", inner_class(index)),
            Instr::Const { value, dtype } => write!(s, " {l}c{value:?}{dtype:?}"),
            Instr::Unary { op, x, compute } => write!(s, " {l}{op:?}{compute:?}%{x}"),
            Instr::Binary { op, a, b, compute } => write!(s, " {l}{op:?}{compute:?}%{a},%{b}"),
            Instr::Where { cond, a, b } => write!(s, " {l}w%{cond},%{a},%{b}"),
            Instr::Cast { x, to } => write!(s, " {l}cast{to:?}%{x}"),
            Instr::Reduce { op, x } => write!(s, " {l}red{op:?}%{x}"),
        };
    }
    s
}
