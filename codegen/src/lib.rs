//! smelt-codegen.
