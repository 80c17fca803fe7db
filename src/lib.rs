//! smelt.
