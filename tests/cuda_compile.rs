//! Compiles the CUDA C of every kernel the conformance suite, the workloads and a few
//! multi-output programs produce with NVRTC, then assembles the PTX for sm_90 with ptxas: no
//! GPU needed, any error fails.
//!
//! NVRTC and ptxas come from NVIDIA's PyPI wheels (`scripts/install-cuda-tools.sh`, run by
//! `.ci/run`), found through `$SMELT_CUDA_TOOLS` or `.tools/cuda`. Where `$SMELT_CUDA_TOOLS` is
//! set (`.ci/run` always sets it) the tools were asked for, and their absence fails the test;
//! without it and without `.tools/cuda` the test prints why it skipped and passes.

use smelt::prelude::*;
use smelt_codegen::cuda::compile::{
    DEFAULT_ARCH, TOOLS_ENV, compile_ptx, nvrtc_status, tools_ptxas,
};
use smelt_codegen::cuda::{PRELUDE, render};
use smelt_ir::Kernel;
use smelt_runtime::record::record_kernels;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// Kernels per NVRTC translation unit (the fp16/bf16 headers dominate a small compile).
const BATCH: usize = 128;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every kernel the conformance files and the workloads run, rendered, deduplicated by source.
fn collect_kernels() -> BTreeMap<String, (String, Kernel)> {
    let mut kernels: Vec<(String, Kernel)> = vec![];
    let suite = root().join("../shared/conformance");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&suite)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", suite.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    for file in files {
        let (result, ks) = record_kernels(|| smelt_harness::conformance::run_file(&file));
        result.unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        let name = file.file_stem().map(|s| s.to_string_lossy().to_string());
        kernels.extend(
            ks.into_iter()
                .map(|k| (name.clone().unwrap_or_default(), k)),
        );
    }
    for name in smelt_harness::workloads::NAMES {
        let w = smelt_harness::workloads::build(name, 16).expect("known workload");
        let (result, ks) = record_kernels(|| smelt::realize(&[&w.output]));
        result.unwrap_or_else(|e| panic!("{name}: {e}"));
        kernels.extend(ks.into_iter().map(|k| (name.to_string(), k)));
    }
    // Every real dtype through an elementwise chain, a reduction of each kind and a cast.
    for dtype in DType::REAL {
        let a = Tensor::arange(0.0, 12.0, 1.0, Some(DType::I64))
            .reshape(&[3, 4])
            .to_dtype(dtype);
        a.realize();
        let (result, ks) = record_kernels(|| {
            let outs = [
                a.sum(&[1], false, None),
                a.max(),
                a.min(),
                a.prod(Some(0), false, None),
                a.maximum(&a).to_dtype(DType::F16),
            ];
            smelt::realize(&outs.iter().collect::<Vec<_>>())
        });
        result.unwrap_or_else(|e| panic!("{dtype}: {e}"));
        kernels.extend(ks.into_iter().map(|k| (format!("dtype {dtype}"), k)));
    }
    // Complex dtypes: arithmetic with a conjugate view and a real operand, the math with real
    // results, reductions, and casts both ways.
    for dtype in [DType::C64, DType::C128] {
        let (a, b) = complex_operands(dtype);
        let (result, ks) = record_kernels(|| {
            let outs = [
                (&(&a * &b.conj()) / &b + 1.5).exp().sqrt().log(),
                a.abs(),
                a.angle(),
                a.sgn().reciprocal(),
                (&a - &b.real()).eq(&b),
                a.sum(&[1], false, None),
                a.mean(&[0], false, None),
                a.prod(Some(1), false, None),
                a.real().to_dtype(DType::F16) + a.imag().to_dtype(DType::F16),
                b.real().to_dtype(dtype),
            ];
            smelt::realize(&outs.iter().collect::<Vec<_>>())
        });
        result.unwrap_or_else(|e| panic!("{dtype}: {e}"));
        kernels.extend(ks.into_iter().map(|k| (format!("dtype {dtype}"), k)));
    }
    // Multi-output kernels: outputs sharing an intermediate, sibling row reductions with a
    // requested element-level value, mean and var of the same rows.
    for dtype in [DType::F32, DType::F16, DType::BF16, DType::F64] {
        let x = Tensor::arange(0.0, 12.0, 1.0, Some(DType::F32))
            .reshape(&[3, 4])
            .to_dtype(dtype);
        x.realize();
        let outs = {
            let m = &x * 2.0;
            let e = x.exp();
            vec![
                &m + 1.0,
                m.exp(),
                e.sum(&[1], false, None),
                e.amax(&[1], false),
                e,
                x.mean(&[1], false, None),
                x.var(&[1], 1.0, false),
            ]
        };
        let (result, ks) = record_kernels(|| smelt::realize(&outs.iter().collect::<Vec<_>>()));
        result.unwrap_or_else(|e| panic!("multi-output {dtype}: {e}"));
        assert!(
            ks.iter().any(|k| k.outputs().len() > 1),
            "multi-output {dtype}: no kernel with several outputs"
        );
        kernels.extend(ks.into_iter().map(|k| (format!("multi-output {dtype}"), k)));
    }
    let mut unique = BTreeMap::new();
    for (origin, k) in kernels {
        let c = render(&k);
        unique
            .entry(c.body)
            .or_insert((format!("{origin}: {}", k.name), k));
    }
    unique
}

/// Two realized [3, 4] complex tensors of `dtype` with distinct real and imaginary parts.
fn complex_operands(dtype: DType) -> (Tensor, Tensor) {
    let re = Tensor::arange(0.0, 12.0, 1.0, Some(DType::F64)).reshape(&[3, 4]);
    let im = Tensor::arange(-6.0, 6.0, 1.0, Some(DType::F64)).reshape(&[3, 4]);
    let a = Tensor::complex(&re, &im).to_dtype(dtype);
    let b = Tensor::complex(&(&im * 0.5 + 1.0), &re).to_dtype(dtype);
    a.realize();
    b.realize();
    (a, b)
}

/// `body` with its entry point renamed to `name` (kernels of one batch may share a name).
fn renamed(kernel: &Kernel, name: &str) -> String {
    let c = render(kernel);
    c.body
        .replacen(&format!("{}(", c.entry), &format!("{name}("), 1)
}

fn tools_dir() -> PathBuf {
    std::env::var_os(TOOLS_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".tools/cuda"))
}

/// The tools cannot be used, for `why`: fails the test where `$SMELT_CUDA_TOOLS` asked for
/// them (`asked`: CI must not pass by compiling nothing), skips it with the reason otherwise.
fn missing_tools(asked: bool, why: &str) {
    assert!(
        !asked,
        "cuda_compile: {TOOLS_ENV} asks for the CUDA tools, but {why}"
    );
    println!("cuda_compile SKIPPED: {why}");
    eprintln!("cuda_compile SKIPPED: {why}");
}

#[test]
fn every_generated_kernel_compiles_with_nvrtc_and_ptxas() {
    let asked = std::env::var_os(TOOLS_ENV).is_some();
    let tools = tools_dir();
    if !asked {
        // SAFETY: this binary's only test sets it before any thread reads the environment.
        unsafe { std::env::set_var(TOOLS_ENV, &tools) };
    }
    if let Err(e) = nvrtc_status() {
        return missing_tools(asked, &e.to_string());
    }
    let ptxas = tools_ptxas(&tools);
    if !ptxas.is_file() {
        return missing_tools(
            asked,
            &format!(
                "ptxas not found at {} (run scripts/install-cuda-tools.sh)",
                ptxas.display()
            ),
        );
    }
    let started = std::time::Instant::now();
    let kernels: Vec<(String, Kernel)> = collect_kernels().into_values().collect();
    let collected = started.elapsed();
    assert!(
        kernels.len() > 50,
        "only {} kernels collected",
        kernels.len()
    );
    let scratch = std::env::temp_dir().join(format!("smelt-cuda-compile-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("scratch dir");
    let batches: Vec<&[(String, Kernel)]> = kernels.chunks(BATCH).collect();
    let failures: Vec<String> = std::thread::scope(|s| {
        let workers = 2;
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let (batches, scratch, ptxas) = (&batches, &scratch, &ptxas);
                s.spawn(move || {
                    let mut failures = vec![];
                    for (b, batch) in batches.iter().enumerate().skip(w).step_by(workers) {
                        failures.extend(compile_batch(b, batch, scratch, ptxas));
                    }
                    failures
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("worker panicked"))
            .collect()
    });
    let _ = std::fs::remove_dir_all(&scratch);
    assert!(
        failures.is_empty(),
        "{} of {} kernels failed to compile:\n{}",
        failures.len(),
        kernels.len(),
        failures.join("\n\n")
    );
    println!(
        "cuda_compile: {} distinct kernels compiled with NVRTC and assembled by ptxas for \
         {DEFAULT_ARCH} (collected in {:.1?}, compiled in {:.1?})",
        kernels.len(),
        collected,
        started.elapsed() - collected
    );
}

/// Compiles one batch as one translation unit; on failure compiles its kernels one by one to
/// name the culprits (the batch itself when none fails alone). Returns the failures.
fn compile_batch(
    b: usize,
    batch: &[(String, Kernel)],
    scratch: &std::path::Path,
    ptxas: &std::path::Path,
) -> Vec<String> {
    let mut source = PRELUDE.to_string();
    for (i, (_, k)) in batch.iter().enumerate() {
        source.push('\n');
        source.push_str(&renamed(k, &format!("k{i}")));
    }
    match compile_ptx(&source, DEFAULT_ARCH) {
        Ok(ptx) => {
            let path = scratch.join(format!("batch{b}.ptx"));
            std::fs::write(&path, &ptx).expect("write ptx");
            let out = Command::new(ptxas)
                .arg(format!("-arch={DEFAULT_ARCH}"))
                .arg("-o")
                .arg(scratch.join(format!("batch{b}.cubin")))
                .arg(&path)
                .output()
                .expect("run ptxas");
            if out.status.success() {
                vec![]
            } else {
                vec![format!(
                    "batch {b} ({}): ptxas failed:\n{}",
                    origins(batch),
                    String::from_utf8_lossy(&out.stderr)
                )]
            }
        }
        Err(batch_error) => {
            let alone: Vec<String> = batch
                .iter()
                .filter_map(|(origin, k)| {
                    let c = render(k);
                    compile_ptx(&c.source(), DEFAULT_ARCH)
                        .err()
                        .map(|e| format!("{origin}:\n{e}\n{}", k.to_text()))
                })
                .collect();
            if alone.is_empty() {
                // Every kernel compiles on its own, yet not beside the others (clashing
                // helper or entry names, say): a failure all the same, of the batch.
                vec![format!(
                    "batch {b} ({}): NVRTC failed on the batch although each kernel compiles \
                     alone:\n{batch_error}",
                    origins(batch)
                )]
            } else {
                alone
            }
        }
    }
}

/// Where a batch's kernels came from (each origin once), for a failure that names no single
/// kernel.
fn origins(batch: &[(String, Kernel)]) -> String {
    let distinct: std::collections::BTreeSet<&str> =
        batch.iter().map(|(o, _)| o.as_str()).collect();
    distinct.into_iter().collect::<Vec<_>>().join(", ")
}
