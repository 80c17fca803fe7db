//! smelt's code generators: kernel IR in, native or device code out — cranelift for the
//! CPU ([`cpu`]), CUDA C through NVRTC ([`cuda`]). Loading and launching live in `smelt-runtime`.

pub mod cpu;
pub mod cuda;
