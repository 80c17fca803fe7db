//! Compiles the CUDA C of every library call the conformance suite makes (gather, take,
//! advanced indexing, argmax, cumsum, sort, sparse segment sums and SpMM, integer matmul …: the routines that run as
//! rendered kernels on a device) with NVRTC, and assembles it for sm_90 with ptxas: no GPU
//! needed. Float matmuls run on cuBLAS and have no kernel of their own; the copy kernels
//! around them are ordinary kernels (`Kernel::copy`), compiled here too.
//!
//! NVRTC and ptxas come from NVIDIA's PyPI wheels (`scripts/install-cuda-tools.sh`, run by
//! `.ci/run`, which sets `$SMELT_CUDA_TOOLS`); when that variable is set and they are missing,
//! the test fails.

use smelt_codegen::cuda::compile::{
    DEFAULT_ARCH, TOOLS_ENV, compile_ptx, nvrtc_status, tools_ptxas,
};
use smelt_codegen::cuda::library::{render_library, runs_on_cublas};
use smelt_codegen::cuda::render;
use smelt_ir::{DType, Kernel, LibraryCall, LibraryOp, View, Work};
use smelt_runtime::record::record_work;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The library calls of the conformance files, rendered, keyed by source (one per structure).
fn collect() -> BTreeMap<String, (String, String)> {
    let suite = root().join("../shared/conformance");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&suite)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", suite.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    let mut calls: Vec<(String, LibraryCall)> = vec![];
    for file in &files {
        let (result, work) = record_work(|| smelt_harness::conformance::run_file(file));
        result.unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        let name = file.file_stem().unwrap().to_string_lossy().to_string();
        calls.extend(work.into_iter().filter_map(|w| match w {
            Work::Library(c) => Some((name.clone(), c)),
            Work::Kernel(_) => None,
        }));
    }
    // `matmul_add` (the `fold_bias` pass's call; CUDA targets do not run that pass, so none is
    // recorded above), rendered for each kind of dtype it adds in.
    let relus = [false, true];
    let kinds = [DType::BF16, DType::F16, DType::F32, DType::I64, DType::C64];
    for (dtype, relu) in kinds.into_iter().flat_map(|d| relus.map(|r| (d, r))) {
        if relu && dtype.is_complex() {
            continue;
        }
        let row = View::new(vec![3, 4], vec![0, 1], 0);
        calls.push((
            "matmul_add".to_string(),
            LibraryCall {
                op: LibraryOp::MatmulAdd { relu },
                inputs: vec![
                    (dtype, View::contiguous(&[3, 5])),
                    (dtype, View::contiguous(&[5, 4])),
                    (dtype, row),
                ],
                dtype,
                len: 12,
                out: View::contiguous(&[3, 4]),
            },
        ));
    }
    let mut unique = BTreeMap::new();
    for (origin, call) in calls {
        let (source, entry) = if runs_on_cublas(&call) {
            // What cuBLAS cannot read in place is copied by a copy kernel.
            let a = &call.inputs[0].1;
            let reach = a.address_range().map_or(1, |(_, hi)| hi as usize + 1);
            let k = Kernel::copy(call.dtype, a, reach, &View::contiguous(&a.shape), a.numel());
            let c = render(&k);
            (c.source(), c.entry)
        } else {
            let lib = render_library(&call);
            (lib.kernel.source(), lib.kernel.entry)
        };
        unique
            .entry(source)
            .or_insert((format!("{origin}: {}", call.op.name()), entry));
    }
    unique
}

#[test]
fn every_library_kernel_compiles_with_nvrtc_and_ptxas() {
    let Some(tools) = std::env::var_os(TOOLS_ENV).map(PathBuf::from) else {
        // Not asked for (a plain `cargo test` without the tools): say so. `.ci/run` sets it.
        eprintln!("cuda_library_compile: {TOOLS_ENV} is not set, nothing compiled");
        return;
    };
    // Asked for: the tools must be there.
    nvrtc_status().unwrap_or_else(|e| panic!("{TOOLS_ENV} is set but NVRTC is unusable: {e}"));
    let ptxas = tools_ptxas(&tools);
    assert!(
        ptxas.is_file(),
        "{TOOLS_ENV} is set but ptxas is missing at {}",
        ptxas.display()
    );
    let kernels = collect();
    // Every routine that runs as a kernel on a device appears in the suite.
    for op in [
        "gather",
        "index_select",
        "take",
        "index",
        "index_put",
        "argmax",
        "argmin",
        "cumsum",
        "cumprod",
        "sort_values",
        "sort_indices",
        "segment_sum",
        "segment_first",
        "spmm",
    ] {
        assert!(
            kernels
                .values()
                .any(|(o, _)| o.contains(&format!(": {op}"))),
            "no {op} call in the conformance suite"
        );
    }
    let scratch = std::env::temp_dir().join(format!("smelt-cuda-lib-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("scratch dir");
    let mut failures = vec![];
    for (i, (source, (origin, _))) in kernels.iter().enumerate() {
        let ptx = match compile_ptx(source, DEFAULT_ARCH) {
            Ok(ptx) => ptx,
            Err(e) => {
                failures.push(format!("{origin}: NVRTC: {e}\n{source}"));
                continue;
            }
        };
        let path = scratch.join(format!("lib{i}.ptx"));
        std::fs::write(&path, &ptx).expect("write ptx");
        let out = Command::new(&ptxas)
            .arg(format!("-arch={DEFAULT_ARCH}"))
            .arg("-o")
            .arg(scratch.join(format!("lib{i}.cubin")))
            .arg(&path)
            .output()
            .expect("run ptxas");
        if !out.status.success() {
            failures.push(format!(
                "{origin}: ptxas: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    assert!(
        failures.is_empty(),
        "{} of {} library kernels failed:\n{}",
        failures.len(),
        kernels.len(),
        failures.join("\n\n")
    );
    eprintln!(
        "cuda_library_compile: {} library kernels compiled and assembled for {DEFAULT_ARCH}",
        kernels.len()
    );
}
