//! smelt's code generators: kernel IR rendered to native code (cranelift, [`cpu`]).

pub mod cpu;
