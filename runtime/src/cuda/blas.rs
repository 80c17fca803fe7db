//! Float matmuls on cuBLAS: `cublasGemmStridedBatchedEx` on the device buffers, f32 and f64
//! in their own precision, f16 and bf16 with f32 accumulation, one call per outer batch point
//! as [`super::gemm_plan`] maps the views. An operand cuBLAS cannot read in place is first
//! copied contiguous by a copy kernel, and an output view it cannot write is computed densely
//! and copied into place by another: everything stays on the device. The epilogue (bias,
//! ReLU) is the next fused kernel of the schedule.
//!
//! libcublas (CUDA 13 or 12, found as NVRTC is: `smelt_codegen::cuda::libraries`) is loaded
//! before cudarc is called, since cudarc panics on a missing library.

use super::device::{CudaDevice, driver_error};
use super::gemm_plan::{LOOP_MIN_MACS, MatmulPlan, prepare as plan_matmul, staging};
use super::launch::{Launch, loaded, queue};
use super::memory::CudaBuffer;
use crate::library::check_matmul_views;
use cudarc::cublas::sys::{cublasComputeType_t, cublasGemmAlgo_t, cublasOperation_t, cudaDataType};
use smelt_codegen::cuda::libraries::{Found, MAJORS, load};
use smelt_codegen::cuda::render;
use smelt_ir::{DType, Error, Kernel, LibraryCall, Result, View};
use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock};

/// The cuBLAS library loaded, or why there is none.
pub fn cublas_library() -> Result<Found> {
    static FOUND: OnceLock<Result<Found>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let majors: Vec<u32> = match smelt_codegen::cuda::libraries::driver_version() {
                Some((major, _)) => MAJORS.into_iter().filter(|&m| m <= major).collect(),
                None => MAJORS.to_vec(),
            };
            let found = load("cublas", &majors, &["cublasLt"]).map_err(|why| {
                Error::device(format!(
                    "cuBLAS is unavailable: {why} (install the CUDA toolkit's cuBLAS or \
                     NVIDIA's cuBLAS wheel)"
                ))
            })?;
            // SAFETY: probing dlopens cudarc's candidate names for libcublas and closes them.
            if !unsafe { cudarc::cublas::sys::is_culib_present() } {
                return Err(Error::device(format!(
                    "cuBLAS is unavailable: {} loaded but cudarc's search did not find it",
                    found.path.display()
                )));
            }
            Ok(found)
        })
        .clone()
}

/// The file cudarc's cuBLAS calls go to.
pub fn cublas_in_use() -> Option<std::path::PathBuf> {
    cublas_library().ok()?;
    // SAFETY: cuBLAS is loaded (above); looking a symbol up has no other effect.
    let lib = unsafe { cudarc::cublas::sys::culib() };
    // SAFETY: the symbol is only used as an address for `dladdr`, never called.
    let symbol = unsafe { lib.get::<*const c_void>(b"cublasCreate_v2\0") }.ok()?;
    smelt_codegen::cuda::libraries::loaded_from(*symbol as usize)
}

/// A matmul prepared for cuBLAS: the plan and the copy kernels it needs.
#[derive(Debug)]
pub(super) struct Matmul {
    plan: MatmulPlan,
    dtype: DType,
    copy_a: Option<Launch>,
    copy_b: Option<Launch>,
    scatter: Option<Launch>,
}

/// The elements a view reaches in its buffer.
fn reach(v: &View) -> usize {
    v.address_range()
        .map_or(v.offset + 1, |(_, hi)| hi as usize + 1)
}

/// Plans `call` for cuBLAS; `None` when cuBLAS cannot take it (an empty problem, or sizes past
/// its `int`): the caller renders a kernel instead.
/// The multiply-adds per cuBLAS call from which a plan loops over batch dims that do not nest
/// rather than copying operands dense for one call ([`LOOP_MIN_MACS`]);
/// `SMELT_CUBLAS_LOOP_MACS=N` sets it for the process, so that one GPU session can time both
/// choices (0: always loop; a huge number: copy whenever that removes the loop).
fn loop_min_macs() -> usize {
    static MACS: OnceLock<usize> = OnceLock::new();
    *MACS.get_or_init(|| {
        std::env::var("SMELT_CUBLAS_LOOP_MACS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(LOOP_MIN_MACS)
    })
}

pub(super) fn prepare(dev: &CudaDevice, call: &LibraryCall) -> Result<Option<Matmul>> {
    cublas_library()?;
    let (av, bv, ov) = check_matmul_views(call);
    assert!(
        ov.internal_overlap() == Some(false) || ov.numel() <= 1,
        "invariant: a matmul output view does not overlap itself: {ov}"
    );
    let Some(plan) = plan_matmul(av, bv, ov, call.len, loop_min_macs()) else {
        return Ok(None);
    };
    let dtype = call.dtype;
    let copy = |v: &View| {
        let dense = staging(v);
        loaded(
            dev,
            &render(&Kernel::copy(dtype, v, reach(v), &dense, v.numel())),
        )
    };
    Ok(Some(Matmul {
        copy_a: plan.copy_a.as_ref().map(copy).transpose()?,
        copy_b: plan.copy_b.as_ref().map(copy).transpose()?,
        scatter: plan
            .scatter
            .as_ref()
            .map(|real| {
                let dense = View::contiguous(&real.shape);
                loaded(
                    dev,
                    &render(&Kernel::copy(dtype, &dense, dense.numel(), real, call.len)),
                )
            })
            .transpose()?,
        plan,
        dtype,
    }))
}

/// The device's cuBLAS handle, created on first use (on the device's stream).
fn handle(dev: &CudaDevice) -> Result<&Mutex<cudarc::cublas::CudaBlas>> {
    cublas_library()?;
    dev.blas
        .get_or_init(|| {
            cudarc::cublas::CudaBlas::new(dev.stream.clone())
                .map(Mutex::new)
                .map_err(|e| Error::device(format!("cuBLAS handle creation failed: {e}")))
        })
        .as_ref()
        .map_err(Clone::clone)
}

fn op(transposed: bool) -> cublasOperation_t {
    if transposed {
        cublasOperation_t::CUBLAS_OP_T
    } else {
        cublasOperation_t::CUBLAS_OP_N
    }
}

/// cuBLAS's data type and compute type for `dtype`, and whether alpha/beta are doubles.
fn types(dtype: DType) -> (cudaDataType, cublasComputeType_t, bool) {
    use cublasComputeType_t::{CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_64F};
    match dtype {
        DType::F64 => (cudaDataType::CUDA_R_64F, CUBLAS_COMPUTE_64F, true),
        DType::F32 => (cudaDataType::CUDA_R_32F, CUBLAS_COMPUTE_32F, false),
        DType::F16 => (cudaDataType::CUDA_R_16F, CUBLAS_COMPUTE_32F, false),
        DType::BF16 => (cudaDataType::CUDA_R_16BF, CUBLAS_COMPUTE_32F, false),
        DType::C64 => (cudaDataType::CUDA_C_32F, CUBLAS_COMPUTE_32F, false),
        DType::C128 => (cudaDataType::CUDA_C_64F, CUBLAS_COMPUTE_64F, true),
        DType::Bool | DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => {
            unreachable!("runs_on_cublas admits float and complex matmuls only")
        }
    }
}

/// `v` (elements of `dtype`) of `src` copied into a fresh dense buffer by `launch`.
fn dense_copy(
    dev: &CudaDevice,
    launch: &Launch,
    src: &CudaBuffer,
    dtype: DType,
    v: &View,
) -> Result<CudaBuffer> {
    let out = CudaBuffer::uninit(dev, dtype, v.numel())?;
    queue(dev, launch, &[src.ptr(), out.ptr()])?;
    Ok(out)
}

/// Runs a prepared matmul on `args` (a, b); returns the output buffer.
pub(super) fn run(
    dev: &CudaDevice,
    call: &LibraryCall,
    m: &Matmul,
    args: &[Arc<CudaBuffer>],
) -> Result<Arc<CudaBuffer>> {
    let (av, bv, _) = check_matmul_views(call);
    let blas = handle(dev)?;
    let copied_a = match &m.copy_a {
        Some(l) => Some(dense_copy(dev, l, &args[0], m.dtype, av)?),
        None => None,
    };
    let copied_b = match &m.copy_b {
        Some(l) => Some(dense_copy(dev, l, &args[1], m.dtype, bv)?),
        None => None,
    };
    let a = copied_a.as_ref().unwrap_or(&args[0]);
    let b = copied_b.as_ref().unwrap_or(&args[1]);
    let p = &m.plan.plan;
    let (first, second) = if p.swapped { (b, a) } else { (a, b) };
    // Elements outside the output view stay zero, as on the host; a buffer the calls write
    // whole is not zeroed first (a memset launch per product).
    let c = if m.plan.covers_c {
        CudaBuffer::uninit(dev, m.dtype, m.plan.c_len)?
    } else {
        CudaBuffer::zeros(dev, m.dtype, m.plan.c_len)?
    };
    let (data, compute, double) = types(m.dtype);
    let size = m.dtype.size() as u64;
    // Complex types read alpha and beta as (real, imaginary) pairs; real ones the first.
    let (alpha32, beta32, alpha64, beta64) =
        ([1.0f32, 0.0], [0.0f32, 0.0], [1.0f64, 0.0], [0.0f64, 0.0]);
    let (alpha, beta): (*const c_void, *const c_void) = if double {
        (alpha64.as_ptr().cast(), beta64.as_ptr().cast())
    } else {
        (alpha32.as_ptr().cast(), beta32.as_ptr().cast())
    };
    let blas = blas.lock().unwrap_or_else(|p| p.into_inner());
    dev.bind()?;
    let mut calls = vec![];
    p.for_each_call(|oa, ob, oc| calls.push((oa as u64, ob as u64, oc as u64)));
    for (oa, ob, oc) in calls {
        // SAFETY: `plan` maps every address cuBLAS forms from these arguments (sizes, leading
        // dimensions, batch strides, from these element offsets) to an address of the smelt
        // view it came from, and every view fits inside its buffer (checked by the caller, or
        // a dense copy), so every access stays inside `first`, `second` and `c`; the output
        // view does not overlap itself (asserted in `prepare`), so no two elements are written
        // at one address; alpha and beta live until the call returns (cuBLAS reads them while
        // queueing, in host pointer mode); the handle runs on the device's stream.
        unsafe {
            cudarc::cublas::result::gemm_strided_batched_ex(
                *blas.handle(),
                op(p.transa),
                op(p.transb),
                p.m as i32,
                p.n as i32,
                p.k as i32,
                alpha,
                (first.ptr() + oa * size) as *const c_void,
                data,
                p.lda as i32,
                p.stride_a as i64,
                (second.ptr() + ob * size) as *const c_void,
                data,
                p.ldb as i32,
                p.stride_b as i64,
                beta,
                (c.ptr() + oc * size) as *mut c_void,
                data,
                p.ldc as i32,
                p.stride_c as i64,
                p.batch as i32,
                compute,
                cublasGemmAlgo_t::CUBLAS_GEMM_DFALT,
            )
        }
        .map_err(|e| driver_error("cuBLAS gemm", e))?;
    }
    drop(blas);
    Ok(Arc::new(match &m.scatter {
        Some(l) => {
            let out = CudaBuffer::zeros(dev, m.dtype, call.len)?;
            queue(dev, l, &[c.ptr(), out.ptr()])?;
            out
        }
        None => c,
    }))
}
