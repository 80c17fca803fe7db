//! The smelt command-line tool.
fn main() {}
