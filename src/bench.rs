//! `smelt bench`: the WORKLOADS.md list timed fused and unfused on the cpu backend, each result
//! checked against the reference backend first; `smelt bench bandwidth`: STREAM copy and triad;
//! the `tiny_ops` and `compile_latency` reports; `matmul_bias_relu` beside the GEMM crate alone.
//! The measuring itself lives in `smelt::measure`, shared with `cargo bench` and the demo.

use smelt::Mode;
use smelt::frontend::Tensor;
use smelt::measure;
use smelt::workloads;
use std::process::ExitCode;
use std::time::{Duration, Instant};

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

/// `tiny_ops`: the median time to record the 1000-step chain on a [16] tensor and realize it
/// (checked against the reference first), and the kernels it runs.
fn tiny_ops() -> Result<(Duration, usize), String> {
    let x0 = measure::tiny_input();
    measure::check_with(&|| Ok(measure::tiny_chain(&x0)), Mode::Fused)?;
    let kernels = smelt::explain(&measure::tiny_chain(&x0)).kernels.len();
    let run = || {
        let t = Instant::now();
        let x = measure::tiny_chain(&x0);
        measure::realize_cpu(&x, Mode::Fused).map(|()| t.elapsed())
    };
    let times = (0..5).map(|_| run()).collect::<Result<Vec<_>, _>>()?;
    Ok((measure::median(times), kernels))
}

/// `compile_latency`: a 10-op chain never seen before, its first realisation and the next one
/// (ms), and the kernels it runs.
fn compile_latency() -> Result<(f64, f64, usize), String> {
    let x = measure::chain_input();
    // Constants no other workload uses make the first realisation a cache miss.
    let salt = 1.0 + (Instant::now().elapsed().subsec_nanos() % 1000) as f64 * 1e-9;
    let chain = || {
        let y = measure::op_chain(&x, salt);
        let t = Instant::now();
        measure::realize_cpu(&y, Mode::Fused).map(|()| t.elapsed().as_secs_f64() * 1e3)
    };
    let first = chain()?;
    let next = chain()?;
    measure::check_with(&|| Ok(measure::op_chain(&x, salt)), Mode::Fused)?;
    let kernels = smelt::explain(&measure::op_chain(&x, salt)).kernels.len();
    Ok((first, next, kernels))
}

/// One `--json` line: the keys every row has, then `extra` (`,"key":value…`).
fn json_line(
    name: &str,
    mode: &str,
    ms: f64,
    gbps: Option<f64>,
    triad: f64,
    kernels: usize,
    extra: &str,
) -> String {
    let gbps = gbps.map_or("null".into(), |g| format!("{g:.2}"));
    format!(
        "{{\"workload\":\"{name}\",\"mode\":\"{mode}\",\"device\":\"cpu\",\"median_ms\":{ms:.3},\"gbps\":{gbps},\"limit_gbps\":{triad:.2},\"kernels\":{kernels}{extra}}}"
    )
}

/// One measured row of the table.
struct Row {
    mode: &'static str,
    median: Duration,
    ideal_bytes: Option<u64>,
    kernels: usize,
    /// Floating-point operations of one run (matmul).
    flops: Option<u64>,
    /// Unfused time over fused time.
    speedup: Option<f64>,
    /// This row's time over the GEMM crate alone on the same shapes (matmul).
    vs_gemm: Option<f64>,
}

/// Checks workload `name` in `mode` against the reference backend, then times it.
fn measure_workload(name: &str, mode: Mode, inputs: &[Tensor], reps: usize) -> Result<Row, String> {
    // A fast wrong answer is a failure: check against the reference backend first.
    measure::check(name, mode, inputs)?;
    let out = measure::program(name, inputs)?;
    let kernels = smelt::explain_mode(&out, mode).kernels.len();
    let median = measure::time_workload(name, mode, inputs, reps)?;
    Ok(Row {
        mode: mode.name(),
        median,
        ideal_bytes: workloads::ideal_bytes(name, inputs, &out),
        kernels,
        flops: workloads::flops(name, inputs),
        speedup: None,
        vs_gemm: None,
    })
}

/// The GEMM crate alone on `matmul_bias_relu`'s A and B, checked, then timed.
fn measure_gemm(inputs: &[Tensor], reps: usize) -> Result<Row, String> {
    let mut gemm = measure::gemm_alone_for(inputs)?;
    gemm.check()?;
    gemm.run();
    Ok(Row {
        mode: "gemm_alone",
        median: gemm.time(reps),
        ideal_bytes: None,
        kernels: 1,
        flops: Some(gemm.flops()),
        speedup: None,
        vs_gemm: None,
    })
}

fn print_row(name: &str, row: &Row, json: bool, triad: f64) {
    let secs = row.median.as_secs_f64();
    let ms = secs * 1e3;
    let gbps = row.ideal_bytes.map(|b| b as f64 / secs / 1e9);
    let gflops = row.flops.map(|f| f as f64 / secs / 1e9);
    if json {
        let mut extra = String::new();
        if let Some(g) = gflops {
            extra += &format!(",\"gflops\":{g:.2}");
        }
        if let Some(r) = row.vs_gemm {
            extra += &format!(",\"vs_gemm\":{r:.3}");
        }
        if let Some(s) = row.speedup {
            extra += &format!(",\"speedup\":{s:.3}");
        }
        let line = json_line(name, row.mode, ms, gbps, triad, row.kernels, &extra);
        println!("{line}");
        return;
    }
    let g = gbps.map_or("—".into(), |g| format!("{g:.1}"));
    let pct = gbps.map_or("—".into(), |g| format!("{:.0}%", 100.0 * g / triad));
    let sp = row.speedup.map_or(String::new(), |s| format!("{s:.2}×"));
    let mut note = gflops.map_or(String::new(), |g| format!("{g:.0} GFLOP/s"));
    match (row.vs_gemm, row.mode) {
        (Some(r), "fused") => note += &format!(", {r:.2}× the GEMM crate alone (goal ≤ 1.5×)"),
        (Some(r), _) => note += &format!(", {r:.2}× the GEMM crate alone"),
        (None, "gemm_alone") => note += ", gemm crate A@B only, same threads",
        (None, _) => {}
    }
    println!(
        "{name:<18} {:<10} {ms:>10.2} {g:>8} {pct:>7} {:>8} {sp:>9}  {note}",
        row.mode, row.kernels
    );
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
            "{:<18} {:<10} {:>10} {:>8} {:>7} {:>8} {:>9}",
            "workload", "mode", "median ms", "GB/s", "% bw", "kernels", "speed-up"
        );
    }
    let mut failed = false;
    let mut fail = |name: &str, what: &str, why: String| {
        eprintln!("smelt bench: {name} ({what}) FAILED: {why}");
        failed = true;
    };
    for name in &names {
        match name.as_str() {
            "tiny_ops" => {
                match tiny_ops() {
                    Ok((t, kernels)) if json => {
                        let ms = t.as_secs_f64() * 1e3;
                        let us = ms * 1e3 / measure::TINY_OPS as f64;
                        let extra = format!(",\"us_per_op\":{us:.3}");
                        println!(
                            "{}",
                            json_line(name, "fused", ms, None, triad, kernels, &extra)
                        );
                    }
                    Ok((t, kernels)) => println!(
                        "tiny_ops: {:.3} µs per lazy op ({}-op chain on [16], {kernels} kernel(s), {:.2} ms)",
                        t.as_secs_f64() * 1e6 / measure::TINY_OPS as f64,
                        measure::TINY_OPS,
                        t.as_secs_f64() * 1e3
                    ),
                    Err(why) => fail(name, "fused", why),
                }
                continue;
            }
            "compile_latency" => {
                match compile_latency() {
                    Ok((first, next, kernels)) if json => {
                        // One cold realisation: its time is the figure (no median to take).
                        let extra = format!(",\"first_ms\":{first:.3},\"next_ms\":{next:.3}");
                        let line = json_line(name, "fused", first, None, triad, kernels, &extra);
                        println!("{line}");
                    }
                    Ok((first, next, _)) => println!(
                        "compile_latency: first realisation {first:.3} ms, next {next:.3} ms"
                    ),
                    Err(why) => fail(name, "fused", why),
                }
                continue;
            }
            _ => {}
        }
        let Some(inputs) = workloads::inputs(name, shrink) else {
            eprintln!("smelt bench: unknown workload {name}");
            return ExitCode::from(2);
        };
        // The GEMM crate alone on the same shapes, the yardstick of the matmul rows.
        let gemm = match (name == "matmul_bias_relu").then(|| measure_gemm(&inputs, reps)) {
            Some(Ok(row)) => Some(row),
            Some(Err(why)) => {
                fail(name, "gemm_alone", why);
                None
            }
            None => None,
        };
        let mut fused = None;
        for &mode in &modes {
            let mut row = match measure_workload(name, mode, &inputs, reps) {
                Ok(r) => r,
                Err(why) => {
                    fail(name, mode.name(), why);
                    continue;
                }
            };
            let secs = row.median.as_secs_f64();
            row.vs_gemm = gemm.as_ref().map(|g| secs / g.median.as_secs_f64());
            match mode {
                Mode::Fused => fused = Some(secs),
                Mode::Unfused => row.speedup = fused.map(|f| secs / f),
            }
            print_row(name, &row, json, triad);
        }
        if let Some(g) = &gemm {
            print_row(name, g, json, triad);
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
