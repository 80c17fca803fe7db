//! `smelt bench`: the WORKLOADS.md list timed fused and unfused on the cpu backend, each result
//! checked against the reference backend first; `smelt bench bandwidth`: STREAM copy and triad;
//! the `tiny_ops` and `compile_latency` reports.

use smelt::Mode;
use smelt::frontend::{Backend, Tensor, realize_with};
use smelt::workloads;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// One measured row.
struct Row {
    workload: String,
    mode: Mode,
    median: Duration,
    ideal_bytes: Option<u64>,
    kernels: usize,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// STREAM-style copy and triad over f32 arrays far larger than the caches, on every core;
/// GB/s of the best of several runs (bytes read + written, no write-allocate traffic counted).
pub fn bandwidth() -> (f64, f64) {
    const N: usize = 1 << 25; // 128 MiB per array
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut a = vec![1.0f32; N];
    let b = vec![2.0f32; N];
    let c = vec![3.0f32; N];
    let chunk = N.div_ceil(threads);
    let time = |f: &mut dyn FnMut()| {
        (0..5)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .min()
            .unwrap_or_default()
    };
    let copy = time(&mut || {
        std::thread::scope(|s| {
            for (dst, src) in a.chunks_mut(chunk).zip(b.chunks(chunk)) {
                s.spawn(move || dst.copy_from_slice(src));
            }
        })
    });
    let triad = time(&mut || {
        std::thread::scope(|s| {
            for ((dst, x), y) in a
                .chunks_mut(chunk)
                .zip(b.chunks(chunk))
                .zip(c.chunks(chunk))
            {
                s.spawn(move || {
                    for ((d, x), y) in dst.iter_mut().zip(x).zip(y) {
                        *d = x + 3.0 * y;
                    }
                });
            }
        })
    });
    std::hint::black_box(&a);
    let gb = |bytes: usize, t: Duration| bytes as f64 / t.as_secs_f64() / 1e9;
    (gb(2 * 4 * N, copy), gb(3 * 4 * N, triad))
}

/// Largest difference of `got` from `want` beyond float tolerance, as a message.
fn compare(got: &Tensor, want: &Tensor) -> Result<(), String> {
    let (g, w) = (got.to_vec::<f32>(), want.to_vec::<f32>());
    if g.len() != w.len() {
        return Err(format!("{} elements vs {}", g.len(), w.len()));
    }
    for (i, (x, y)) in g.iter().zip(&w).enumerate() {
        let ok = x == y || x.is_nan() && y.is_nan() || (x - y).abs() <= 1e-5 + 1e-4 * y.abs();
        if !ok {
            return Err(format!("element {i}: cpu {x} vs reference {y}"));
        }
    }
    Ok(())
}

fn measure(name: &str, mode: Mode, inputs: &[Tensor], reps: usize) -> Result<Row, String> {
    let fresh = || workloads::program(name, inputs).ok_or(format!("unknown workload {name}"));
    // A fast wrong answer is a failure: check against the reference backend first.
    let got = fresh()?;
    realize_with(&[&got], mode, Backend::Cpu).map_err(|e| e.to_string())?;
    let want = fresh()?;
    realize_with(&[&want], Mode::Fused, Backend::Reference).map_err(|e| e.to_string())?;
    compare(&got, &want)?;
    drop((got, want));
    let kernels = smelt::explain_mode(&fresh()?, mode).kernels.len();
    let mut times = vec![];
    for _ in 0..reps {
        let y = fresh()?;
        let t = Instant::now();
        realize_with(&[&y], mode, Backend::Cpu).map_err(|e| e.to_string())?;
        times.push(t.elapsed());
    }
    // Each input read once, the output written once (compute-bound matmul has none).
    let out = fresh()?;
    let b = |t: &Tensor| (t.numel() * t.dtype().size()) as u64;
    let ideal_bytes =
        (name != "matmul_bias_relu").then(|| inputs.iter().map(b).sum::<u64>() + b(&out));
    Ok(Row {
        workload: name.to_string(),
        mode,
        median: median(times),
        ideal_bytes,
        kernels,
    })
}

/// `tiny_ops`: µs per lazy op for a 1000-op chain on a [16] tensor, built and realized.
fn tiny_ops() -> f64 {
    let x0 = Tensor::new([0.5f32; 16]);
    let run = || {
        let t = Instant::now();
        let mut x = x0.clone();
        for _ in 0..1000 {
            x = &x * 1.0001 + 0.5;
        }
        x.realize();
        t.elapsed()
    };
    run();
    median((0..5).map(|_| run()).collect()).as_secs_f64() * 1e6 / 2000.0
}

/// `compile_latency`: a 10-op chain never seen before, first realisation vs the next one.
fn compile_latency() -> (f64, f64) {
    let x = Tensor::new([1.5f32; 1024]);
    // Constants no other workload uses make the first realisation a cache miss.
    let salt = 1.0 + (Instant::now().elapsed().subsec_nanos() % 1000) as f64 * 1e-9;
    let chain = || {
        let mut y = x.clone();
        for i in 0..10 {
            y = match i % 3 {
                0 => &y * (1.25 * salt),
                1 => &y + salt,
                _ => y.relu(),
            };
        }
        let t = Instant::now();
        y.realize();
        t.elapsed().as_secs_f64() * 1e3
    };
    let first = chain();
    (first, chain())
}

pub fn run(args: &[String]) -> ExitCode {
    let json = args.iter().any(|a| a == "--json");
    let both = args.iter().any(|a| a == "--both");
    let modes: Vec<Mode> = if both {
        vec![Mode::Fused, Mode::Unfused]
    } else if args.iter().any(|a| a == "--unfused") {
        vec![Mode::Unfused]
    } else {
        vec![Mode::Fused]
    };
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .and_then(|n| n.parse::<usize>().ok())
    };
    let reps = value("--reps").unwrap_or(7).max(1);
    let shrink = value("--shrink").unwrap_or(1).max(1);
    let names: Vec<String> = args
        .iter()
        .filter(|a| !a.starts_with('-') && a.parse::<usize>().is_err())
        .cloned()
        .collect();
    let (copy, triad) = bandwidth();
    if names.iter().any(|n| n == "bandwidth") {
        if json {
            println!("{{\"copy_gbps\":{copy:.2},\"triad_gbps\":{triad:.2}}}");
        } else {
            println!("STREAM copy {copy:.1} GB/s, triad {triad:.1} GB/s (all threads)");
        }
        return ExitCode::SUCCESS;
    }
    let names: Vec<String> = if names.is_empty() {
        workloads::NAMES.iter().map(|s| s.to_string()).collect()
    } else {
        names
    };
    if !json {
        println!("cpu backend, triad limit {triad:.1} GB/s, median of {reps}");
        println!(
            "{:<18} {:<8} {:>10} {:>8} {:>7} {:>8} {:>9}",
            "workload", "mode", "median ms", "GB/s", "% bw", "kernels", "speed-up"
        );
    }
    let mut failed = false;
    for name in &names {
        match name.as_str() {
            "tiny_ops" => {
                let us = tiny_ops();
                if json {
                    println!("{{\"workload\":\"tiny_ops\",\"us_per_op\":{us:.3}}}");
                } else {
                    println!("tiny_ops: {us:.3} µs per lazy op (1000-op chain on [16])");
                }
                continue;
            }
            "compile_latency" => {
                let (first, next) = compile_latency();
                if json {
                    println!(
                        "{{\"workload\":\"compile_latency\",\"first_ms\":{first:.3},\"next_ms\":{next:.3}}}"
                    );
                } else {
                    println!("compile_latency: first realisation {first:.3} ms, next {next:.3} ms");
                }
                continue;
            }
            _ => {}
        }
        let Some(inputs) = workloads::inputs(name, shrink) else {
            eprintln!("smelt bench: unknown workload {name}");
            return ExitCode::from(2);
        };
        let mut fused_ms = None;
        for &mode in &modes {
            let row = match measure(name, mode, &inputs, reps) {
                Ok(r) => r,
                Err(why) => {
                    eprintln!("smelt bench: {name} ({}) FAILED: {why}", mode.name());
                    failed = true;
                    continue;
                }
            };
            let ms = row.median.as_secs_f64() * 1e3;
            let gbps = row
                .ideal_bytes
                .map(|b| b as f64 / row.median.as_secs_f64() / 1e9);
            let speedup = match (mode, fused_ms) {
                (Mode::Unfused, Some(f)) => Some(ms / f),
                (Mode::Unfused, None) | (Mode::Fused, _) => None,
            };
            if mode == Mode::Fused {
                fused_ms = Some(ms);
            }
            if json {
                let g = gbps.map_or("null".into(), |g| format!("{g:.2}"));
                println!(
                    "{{\"workload\":\"{}\",\"mode\":\"{}\",\"device\":\"cpu\",\"median_ms\":{ms:.3},\"gbps\":{g},\"limit_gbps\":{triad:.2},\"kernels\":{}}}",
                    row.workload,
                    row.mode.name(),
                    row.kernels
                );
            } else {
                let g = gbps.map_or("—".into(), |g| format!("{g:.1}"));
                let pct = gbps.map_or("—".into(), |g| format!("{:.0}%", 100.0 * g / triad));
                let sp = speedup.map_or(String::new(), |s| format!("{s:.2}×"));
                println!(
                    "{:<18} {:<8} {ms:>10.2} {g:>8} {pct:>7} {:>8} {sp:>9}",
                    row.workload,
                    row.mode.name(),
                    row.kernels
                );
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
