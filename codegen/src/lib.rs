//! smelt's code generators: kernel IR in, device code out (render and compile; loading and
//! launching live in `smelt-runtime`).

pub mod cuda;
