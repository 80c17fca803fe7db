//! The `smelt` command-line tool: `demo`, `conformance DIR`, `info`, `explain`, `bench`,
//! `fuzz`.

use std::path::PathBuf;
use std::process::ExitCode;

mod bench;
mod demo;

fn usage() -> ExitCode {
    eprintln!(
        "usage: smelt <command>\n\n  demo                      an eager-looking program, its lazy graph, its kernels, its result;\n                            then real fused kernels, checked and timed against unfused\n  conformance DIR [--verbose]  replay PyTorch's recorded cases (*.jsonl in DIR)\n  info                      backends and their status, codegen SIMD vs the host's\n  explain WORKLOAD|all [--unfused] [--json] [--shrink N]\n                            the kernels a workload runs, why each boundary exists, bytes moved\n  bench [WORKLOAD…|bandwidth|tiny_ops|compile_latency] [--unfused|--both] [--json] [--reps N] [--shrink N] [--warm]\n                            time workloads on the cpu backend (checked against the reference first;\n                            caches emptied before each repetition unless --warm)\n  bench WORKLOAD --serve    check it, then time one realisation per line read from stdin
  fuzz [--seed N] [--count N | --minutes M] [--json] [--out DIR] [--program I] [--shrink-secs S]
       [--modes ORACLE,MODE…] [--replay FILE] [--batch N]
                            random programs realised fused, unfused and on the reference
                            interpreter (and CUDA), compared; failures shrunk to cases in DIR"
    );
    ExitCode::from(2)
}

fn conformance(args: &[String]) -> ExitCode {
    let verbose = args.iter().any(|a| a == "--verbose" || a == "-v");
    let Some(dir) = args.iter().find(|a| !a.starts_with('-')) else {
        return usage();
    };
    let dir = PathBuf::from(dir);
    let results = if dir.is_file() {
        smelt_harness::conformance::run_file(&dir).map(|r| vec![r])
    } else {
        smelt_harness::conformance::run_dir(&dir)
    };
    let results = match results {
        Ok(r) => r,
        Err(e) => {
            eprintln!("smelt conformance: cannot read {}: {e}", dir.display());
            return ExitCode::from(2);
        }
    };
    let (mut passed, mut failed) = (0, 0);
    for file in &results {
        println!("{}: {}/{}", file.file, file.passed(), file.total());
        passed += file.passed();
        failed += file.total() - file.passed();
        if verbose {
            for case in &file.cases {
                if let Some(why) = &case.failure {
                    println!("  FAIL {}: {why}", case.id);
                }
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn explain(args: &[String]) -> ExitCode {
    let json = args.iter().any(|a| a == "--json");
    let mode = if args.iter().any(|a| a == "--unfused") {
        smelt::Mode::Unfused
    } else {
        smelt::Mode::Fused
    };
    let shrink = args
        .iter()
        .position(|a| a == "--shrink")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(1);
    let names: Vec<&str> = match args
        .iter()
        .find(|a| !a.starts_with('-') && a.parse::<usize>().is_err())
    {
        None => return usage(),
        Some(a) if a == "all" => smelt_harness::workloads::NAMES.to_vec(),
        Some(a) => vec![a.as_str()],
    };
    for name in names {
        let Some(w) = smelt_harness::workloads::build(name, shrink) else {
            eprintln!(
                "smelt explain: unknown workload {name}; known: {}",
                smelt_harness::workloads::all_names()
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            return ExitCode::from(2);
        };
        let plan = smelt::explain_mode(&w.output, mode);
        if json {
            println!("{}", plan.to_json(name));
        } else {
            let ideal = w
                .ideal_bytes
                .map(|b| format!(", ideal {b} bytes"))
                .unwrap_or_default();
            println!("== {name} ({}{ideal}) ==\n{plan}", mode.name());
        }
    }
    ExitCode::SUCCESS
}

fn info() -> ExitCode {
    println!("smelt {}", env!("CARGO_PKG_VERSION"));
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("threads: {threads}");
    let codegen = codegen_simd().unwrap_or_else(|| "none (scalar loops)".into());
    println!("codegen SIMD: {codegen}, cranelift; host: {}", host_simd());
    let host = smelt_codegen::cpu::host::host();
    let kib = |b: usize| b >> 10;
    println!(
        "caches ({}): L1d {} KiB, L2 {} KiB, last level {} KiB, {}-byte lines; {} CPU, {} threads, {}-bit vectors",
        host.source,
        kib(host.l1d),
        kib(host.l2),
        kib(host.llc),
        host.line,
        host.vendor.name(),
        host.cores,
        host.vector_bits
    );
    let tuning = smelt_codegen::cpu::host::tuning();
    let prefetch = match tuning.prefetch_ahead {
        0 => "no prefetch ahead of streamed loads".to_string(),
        n => format!("prefetch {n} bytes ahead"),
    };
    println!(
        "tuning: transpose tiles {} x {}, streaming stores from {} KiB outputs (unless the \
         launch's buffers are in the last {} KiB the kernels moved), {prefetch}",
        tuning.transpose_tile.0,
        tuning.transpose_tile.1,
        kib(tuning.stream_min),
        kib(tuning.cache_share),
    );
    println!("matmul: gemm {}", smelt_runtime::library::gemm_kernels());
    println!(
        "jit refusals: {} (launches run by the interpreter)",
        smelt_runtime::refused_kernels()
    );
    println!("backends: reference (kernel IR interpreter) — available");
    println!(
        "          cpu (cranelift JIT) — available, the default (SMELT_BACKEND=reference|cpu)"
    );
    println!(
        "          cuda — {}",
        match smelt_runtime::cuda::device_count() {
            0 => "unavailable (below: what is missing)".to_string(),
            n => format!("available: {n} device(s)"),
        }
    );
    for line in smelt_runtime::cuda::report() {
        println!("  {line}");
    }
    for (ordinal, stats) in (0..smelt_runtime::cuda::device_count())
        .filter_map(|n| smelt_runtime::cuda::memory_stats(n).map(|s| (n, s)))
    {
        println!(
            "  cuda:{ordinal} memory: {} bytes held, peak {} in use",
            stats.held, stats.peak_in_use
        );
    }
    println!(
        "default device: {} (SMELT_DEVICE)",
        smelt::Device::from_env()
            .map_or_else(|e| format!("cpu ({})", e.message), |d| d.to_string())
    );
    ExitCode::SUCCESS
}

/// The widest vector registers this CPU has, as the feature that provides them.
fn host_simd() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return "avx512f (512-bit)";
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return "avx2 (256-bit)";
        }
        "sse2 (128-bit)"
    }
    #[cfg(target_arch = "aarch64")]
    {
        "neon (128-bit)"
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        "unknown"
    }
}

/// The vectors the cpu backend really emits: the widest vector type in the CLIF it compiles for
/// a contiguous f32 elementwise kernel (`x * 2 + 1`), e.g. `128-bit (f32x4)`; `None` when the
/// kernel runs scalar loops (or the JIT is unavailable).
fn codegen_simd() -> Option<String> {
    let x = smelt::Tensor::new([1.0f32; 64]);
    let mut graph = (&x * 2.0 + 1.0).graph().graph().clone();
    smelt_passes::optimize(&mut graph);
    let kernel = smelt_passes::schedule(&graph)
        .steps
        .into_iter()
        .find_map(|step| match step.work {
            smelt_ir::kernel::Work::Kernel(k) => Some(k),
            smelt_ir::kernel::Work::Library(_) => None,
        })?;
    let code = smelt_runtime::cpu::compiled(&kernel).ok()?;
    widest_vector(&code.clif).map(|(bits, ty)| format!("{bits}-bit ({ty})"))
}

/// The widest `<lane type>x<lanes>` vector type named in CLIF text, with its width in bits.
fn widest_vector(clif: &str) -> Option<(u32, &str)> {
    clif.split(|c: char| !c.is_ascii_alphanumeric())
        .filter_map(|word| {
            let (lane, lanes) = word.split_once('x')?;
            let lane_bits = match lane {
                "i8" => 8,
                "i16" | "f16" => 16,
                "i32" | "f32" => 32,
                "i64" | "f64" => 64,
                "i128" | "f128" => 128,
                _ => return None,
            };
            Some((lane_bits * lanes.parse::<u32>().ok()?, word))
        })
        // The widest; among equals a float type (the data, rather than a lane mask).
        .max_by_key(|(bits, word)| (*bits, word.starts_with('f')))
}

/// The value after flag `name`, parsed (`Err`: present but unparsable).
fn flag<T: std::str::FromStr>(args: &[String], name: &str) -> Result<Option<T>, String> {
    match args.iter().position(|a| a == name) {
        None => Ok(None),
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .map(Some)
            .ok_or_else(|| format!("{name} needs a value")),
    }
}

fn fuzz(args: &[String]) -> ExitCode {
    use smelt_harness::fuzzer::{Config, fuzz, supervise};
    let parsed = (|| -> Result<Config, String> {
        let known = [
            "--seed",
            "--count",
            "--minutes",
            "--json",
            "--out",
            "--program",
            "--shrink-secs",
            "--modes",
            "--replay",
            "--from",
            "--in-process",
            "--batch",
        ];
        if let Some(a) = args
            .iter()
            .find(|a| a.starts_with("--") && !known.contains(&a.as_str()))
        {
            return Err(format!("unknown flag {a}"));
        }
        let mut config = Config::new(flag(args, "--seed")?.unwrap_or(0));
        config.count = flag(args, "--count")?;
        config.duration =
            flag::<f64>(args, "--minutes")?.map(|m| std::time::Duration::from_secs_f64(m * 60.0));
        config.only = flag(args, "--program")?;
        config.first = flag(args, "--from")?.unwrap_or(0);
        config.json = args.iter().any(|a| a == "--json");
        // Shrunk cases go to target/fuzz unless told; a replay writes cases only when told.
        config.out = match flag::<PathBuf>(args, "--out")? {
            Some(dir) => Some(dir),
            None if args.iter().any(|a| a == "--replay") => None,
            None => Some(PathBuf::from("target/fuzz")),
        };
        if let Some(list) = flag::<String>(args, "--modes")? {
            config.modes = list
                .split(',')
                .map(|m| {
                    smelt_harness::fuzzer::exec::Mode::parse(m.trim())
                        .ok_or_else(|| format!("unknown mode {m}"))
                })
                .collect::<Result<_, _>>()?;
            if config.modes.is_empty() {
                return Err("--modes needs at least the oracle".into());
            }
        }
        if let Some(s) = flag::<f64>(args, "--shrink-secs")? {
            config.shrink_budget = std::time::Duration::from_secs_f64(s);
        }
        Ok(config)
    })();
    let config = match parsed {
        Ok(c) => c,
        Err(e) => {
            eprintln!("smelt fuzz: {e}");
            return usage();
        }
    };
    let replay = match flag::<PathBuf>(args, "--replay") {
        Ok(r) => r,
        Err(e) => {
            eprintln!("smelt fuzz: {e}");
            return usage();
        }
    };
    // Runs longer than a batch go to child processes (bounded memory; a crash ends a batch,
    // not the run), unless this is such a child.
    let batch = match flag::<u64>(args, "--batch") {
        Ok(b) => b,
        Err(e) => {
            eprintln!("smelt fuzz: {e}");
            return usage();
        }
    };
    let in_process = args.iter().any(|a| a == "--in-process")
        || config.only.is_some()
        || batch.is_none()
            && config.count.is_some_and(|n| n <= supervise::BATCH)
            && config.duration.is_none();
    let batch = batch.unwrap_or(supervise::BATCH).max(1);
    let out = &mut std::io::stdout().lock();
    let ran = match (replay, std::env::current_exe()) {
        (Some(file), _) => smelt_harness::fuzzer::replay(&config, &file, out),
        (None, Ok(exe)) if !in_process => supervise::supervise(&config, &exe, batch, out),
        (None, _) => fuzz(&config, out),
    };
    match ran {
        Ok(s) if s.failed == 0 => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("smelt fuzz: {e}");
            ExitCode::from(2)
        }
    }
}

fn main() -> ExitCode {
    // Rust ignores SIGPIPE, so a write into a pipe whose reader has gone (`smelt info | head
    // -3`) fails and `println!` panics. Like other Unix tools, the command ends quietly
    // there instead: the signal's default action.
    #[cfg(unix)]
    // SAFETY: called first in `main`, before any other thread exists; SIG_DFL is a valid
    // disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("demo") => demo::run(),
        Some("conformance") => conformance(&args[1..]),
        Some("info") => info(),
        Some("explain") => explain(&args[1..]),
        Some("bench") => bench::run(&args[1..]),
        Some("fuzz") => fuzz(&args[1..]),
        _ => usage(),
    }
}

#[cfg(test)]
mod tests {
    use super::widest_vector;

    #[test]
    fn widest_vector_reads_clif_vector_types() {
        let clif =
            "v3 = load.f32x4 notrap aligned v1\n v4 = splat.i64x2 v0\n v5 = iconst.i64 0x3f80";
        assert_eq!(widest_vector(clif), Some((128, "f32x4")));
        assert_eq!(
            widest_vector("v1 = fadd.f32 v0, v0\n v2 = iconst.i64 0x10"),
            None
        );
    }

    #[test]
    fn the_cpu_backend_reports_the_vectors_it_emits() {
        // Whatever the width, it is one the CLIF of a real compiled kernel named.
        if let Some(line) = super::codegen_simd() {
            assert!(line.ends_with(')') && line.contains("-bit ("), "{line}");
        }
    }
}
