//! Which backend runs kernel IR: `SMELT_BACKEND=reference|cpu` (default `cpu`). The reference
//! interpreter stays the oracle every other backend is checked against.

/// A kernel backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The kernel IR interpreter (`reference.rs`).
    Reference,
    /// Cranelift-compiled native code (`cpu.rs`), falling back to the interpreter per kernel.
    Cpu,
}

impl Backend {
    /// Every backend, for tests that run on each (STYLE 12).
    pub const ALL: [Backend; 2] = [Backend::Reference, Backend::Cpu];

    pub fn name(self) -> &'static str {
        match self {
            Backend::Reference => "reference",
            Backend::Cpu => "cpu",
        }
    }

    /// The backend `SMELT_BACKEND` names; `cpu` when unset or unknown.
    pub fn from_env() -> Backend {
        match std::env::var("SMELT_BACKEND").as_deref() {
            Ok("reference") => Backend::Reference,
            _ => Backend::Cpu,
        }
    }

    /// Runs one kernel on this backend; returns its output buffers in output order.
    pub fn run_kernel(
        self,
        kernel: &smelt_ir::Kernel,
        inputs: Vec<std::sync::Arc<crate::Buffer>>,
    ) -> Vec<crate::Buffer> {
        match self {
            Backend::Reference => crate::reference::run_kernel(kernel, inputs),
            Backend::Cpu => crate::cpu::run_kernel(kernel, inputs),
        }
    }

    /// [`Backend::run_kernel`] for a schedule's step, whose `memo` keeps what a backend works
    /// out before the first launch for the later ones.
    pub fn run_step_kernel(
        self,
        kernel: &smelt_ir::Kernel,
        memo: &smelt_ir::LaunchMemo,
        inputs: Vec<std::sync::Arc<crate::Buffer>>,
    ) -> Vec<crate::Buffer> {
        match self {
            Backend::Reference => crate::reference::run_kernel(kernel, inputs),
            Backend::Cpu => crate::cpu::run_step_kernel(kernel, memo, inputs),
        }
    }
}
