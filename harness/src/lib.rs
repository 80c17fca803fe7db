//! What the `smelt` command-line tool, the tests and the benchmarks share, kept out of the
//! library's public surface: the conformance runner (replays PyTorch's recorded cases), the
//! WORKLOADS.md programs, the check-then-time measuring code, the random-program generator
//! behind the fuzzing tests (`fuzz`), `smelt fuzz` (`fuzzer`: random conformance-format
//! programs realised in every mode and compared), and the GPT-2-style block the example, its
//! test and the benchmark share (`gpt`).

pub mod conformance;
pub mod fuzz;
pub mod fuzzer;
pub mod gpt;
pub mod measure;
pub mod workloads;
