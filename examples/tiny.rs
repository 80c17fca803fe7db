//! The `tiny_ops` chain alone, for profiling the per-op cost (`perf record`, `valgrind
//! --tool=dhat`): `cargo run --release --example tiny [CHAINS] [build]`, where `build` records
//! the chains without realizing them. Prints µs per lazy op, in all and for building alone.
use smelt_harness::measure;
use std::time::Instant;
fn main() {
    let x0 = measure::tiny_input();
    let n: usize = std::env::args().nth(1).map_or(2000, |s| s.parse().unwrap());
    let mode = std::env::args().nth(2).unwrap_or_default();
    let t = Instant::now();
    let mut build = 0.0;
    for _ in 0..n {
        let t0 = Instant::now();
        let x = measure::tiny_chain(&x0);
        build += t0.elapsed().as_secs_f64();
        if mode != "build" {
            measure::realize_cpu(&x, smelt::Mode::Fused).unwrap();
        }
    }
    let per = t.elapsed().as_secs_f64() / (n * measure::TINY_OPS) as f64 * 1e6;
    println!(
        "{per:.3} µs/op total, build {:.3}",
        build / (n * measure::TINY_OPS) as f64 * 1e6
    );
}
