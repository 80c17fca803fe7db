//! `smelt demo`: an eager-looking program, its lazy graph, the kernels it ran, its result; then
//! real fused kernels on moderate sizes, checked against the reference and timed against unfused.

use smelt::Mode;
use smelt::prelude::*;
use smelt_harness::{measure, workloads};
use std::process::ExitCode;

/// The WORKLOADS.md programs the demo compiles and times, and their size divisor per dim.
const PROGRAMS: &[&str] = &["ew_chain", "softmax_rows", "layernorm"];
const SHRINK: usize = 4;
const REPS: usize = 5;

pub fn run() -> ExitCode {
    small_program();
    match fused_kernels() {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("smelt demo: {why}");
            ExitCode::FAILURE
        }
    }
}

/// The eager-looking program on a 2×3 tensor: lazy graph, kernels, result.
fn small_program() {
    println!("== smelt demo: eager-looking code, lazy execution ==\n");
    let a = Tensor::new([[1.0f32, -2.0, 3.0], [-4.0, 5.0, -6.0]]);
    let b = Tensor::arange(0, 6, 1, Some(DType::F32)).view(&[2, 3]);
    println!("let a = Tensor::new([[1., -2., 3.], [-4., 5., -6.]]);");
    println!("let b = Tensor::arange(0, 6, 1, f32).view(&[2, 3]);");
    println!("let y = (a.t().relu() * 0.5 + b.t()).exp();   // nothing has run yet\n");
    let y = ((a.t().relu() * 0.5) + b.t()).exp();
    println!(
        "y: shape {:?}, stride {:?}, realized: {}\n",
        y.shape(),
        y.stride(),
        y.is_realized()
    );
    println!("-- the lazy graph (text) --\n{}", y.graph());
    let fused = smelt::explain(&y);
    let unfused = smelt::explain_mode(&y, smelt::Mode::Unfused);
    println!(
        "-- the kernels it will run: {} fused (vs {} unfused, one per op) --\n{}",
        fused.kernels.len(),
        unfused.kernels.len(),
        fused
    );
    println!("-- result --\ny = {y}\n");
    println!("realized now: {}", y.is_realized());
}

/// One program's measurements.
struct Timing {
    name: &'static str,
    kernels: (usize, usize),
    ms: (f64, f64),
}

/// Real workloads at moderate sizes: the fused kernels, the results checked against the
/// reference interpreter in both modes, then the median time fused vs unfused.
fn fused_kernels() -> Result<(), String> {
    println!("\n== real fused kernels, timed against unfused ==\n");
    println!(
        "WORKLOADS.md programs with each dim divided by {SHRINK}, on the cpu backend (cranelift JIT)."
    );
    println!(
        "Each result is checked against the reference interpreter first; then the median of {REPS} interleaved"
    );
    println!(
        "realisations, fused (the default pipeline) vs unfused (one kernel per op, same codegen)."
    );
    let mut rows = vec![];
    for &name in PROGRAMS {
        let inputs = workloads::inputs(name, SHRINK).ok_or(format!("unknown workload {name}"))?;
        let shapes: Vec<String> = inputs.iter().map(|t| format!("{:?}", t.shape())).collect();
        println!(
            "\n-- {name}: {} on {} --",
            workloads::source(name).unwrap_or(name),
            shapes.join(", ")
        );
        let program = measure::program(name, &inputs)?;
        let fused = smelt::explain_mode(&program, Mode::Fused);
        let unfused = smelt::explain_mode(&program, Mode::Unfused);
        print!("{fused}");
        for mode in [Mode::Fused, Mode::Unfused] {
            measure::check(name, mode, &inputs)
                .map_err(|e| format!("{name} ({}): {e}", mode.name()))?;
        }
        println!("\nchecked: fused and unfused results match the reference interpreter");
        let times = measure::time_interleaved(name, &[Mode::Fused, Mode::Unfused], &inputs, REPS)?;
        let ms = |i: usize| times[i].as_secs_f64() * 1e3;
        let row = Timing {
            name,
            kernels: (fused.kernels.len(), unfused.kernels.len()),
            ms: (ms(0), ms(1)),
        };
        let gbps = |ms: f64| {
            workloads::ideal_bytes(name, &inputs, &program).map_or(String::new(), |b| {
                format!(" ({:.1} GB/s of ideal bytes)", b as f64 / ms / 1e6)
            })
        };
        println!(
            "fused:   {} kernel(s) {:>8.2} ms{}",
            row.kernels.0,
            row.ms.0,
            gbps(row.ms.0)
        );
        println!(
            "unfused: {} kernel(s) {:>8.2} ms{}",
            row.kernels.1,
            row.ms.1,
            gbps(row.ms.1)
        );
        let speedup = row.ms.1 / row.ms.0;
        if speedup >= 1.0 {
            println!("fused is {speedup:.2}× faster than unfused");
        } else {
            println!("fused is {:.2}× slower than unfused", 1.0 / speedup);
        }
        rows.push(row);
    }
    println!("\n-- summary (median ms; timings on a shared machine are noisy) --");
    println!(
        "{:<14} {:>16} {:>10} {:>11} {:>9}",
        "program", "kernels (f / u)", "fused ms", "unfused ms", "speed-up"
    );
    for r in &rows {
        println!(
            "{:<14} {:>16} {:>10.2} {:>11.2} {:>8.2}×",
            r.name,
            format!("{} / {}", r.kernels.0, r.kernels.1),
            r.ms.0,
            r.ms.1,
            r.ms.1 / r.ms.0
        );
    }
    Ok(())
}
