//! Matmul on a CUDA device through cuBLAS (cudarc's `cublas`): the inputs are copied in, one
//! `gemmStridedBatched` runs per outer batch point as [`super::gemm_plan`] maps the views, and
//! the product is copied back (the epilogue, if any, is the next fused kernel in the schedule).
//!
//! f32 and f64 run here; other dtypes (f16 and bf16 included: the workspace builds cudarc
//! without its `f16` feature) and problems cuBLAS cannot take (empty, or a size past its
//! `int`) run the host routine. libcublas is probed before cudarc is called, since cudarc
//! panics on a missing library.

use super::device::{CudaDevice, driver_error};
use super::gemm_plan::{Prepared, prepare, scatter};
use super::launch::{buffer_from_bytes, host_bytes};
use crate::buffer::Buffer;
use crate::library::{check_call, check_matmul_views, run_library};
use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, StridedBatchedConfig};
use cudarc::driver::{CudaSlice, DeviceRepr};
use smelt_ir::{DType, Error, LibraryCall, LibraryOp, Result};
use std::sync::{Arc, OnceLock};

/// The cuBLAS library cudarc loads, and the library it needs in turn.
const CUBLAS: &str = "libcublas.so.12";
const CUBLAS_LT: &str = "libcublasLt.so.12";

/// Whether libcublas loads: `Err` names what is missing.
pub fn cublas_status() -> Result<()> {
    static STATUS: OnceLock<Result<()>> = OnceLock::new();
    STATUS
        .get_or_init(|| {
            // SAFETY: probing dlopens cudarc's candidate names for libcublas and closes them.
            if unsafe { cudarc::cublas::sys::is_culib_present() } {
                return Ok(());
            }
            // SAFETY: loading libcublasLt runs its initialisers, which have no preconditions;
            // the handle is closed at once.
            let lt_loads = unsafe { libloading::Library::new(CUBLAS_LT) }.is_ok();
            let why = if lt_loads {
                format!("{CUBLAS} was not found")
            } else {
                format!("{CUBLAS} (or {CUBLAS_LT}, which it needs) was not found")
            };
            Err(Error::device(format!(
                "cuBLAS is unavailable: {why} (install the CUDA toolkit's cuBLAS, or put it \
                 on the library path)"
            )))
        })
        .clone()
}

/// Whether `call` runs on cuBLAS: a matmul of f32 or f64.
pub fn runs_on_cublas(call: &LibraryCall) -> bool {
    match call.op {
        LibraryOp::Matmul => {
            matches!(call.dtype, DType::F32 | DType::F64)
                && call.inputs.iter().all(|(d, _)| *d == call.dtype)
        }
        LibraryOp::Gather { .. }
        | LibraryOp::IndexSelect { .. }
        | LibraryOp::Take
        | LibraryOp::Index { .. }
        | LibraryOp::IndexPut { .. }
        | LibraryOp::ArgMax { .. }
        | LibraryOp::ArgMin { .. }
        | LibraryOp::CumSum { .. }
        | LibraryOp::CumProd { .. }
        | LibraryOp::Sort { .. } => false,
    }
}

/// The device's cuBLAS handle, created on first use (on the device's stream).
fn handle(dev: &CudaDevice) -> Result<&CudaBlas> {
    cublas_status()?;
    dev.blas
        .get_or_init(|| {
            CudaBlas::new(dev.stream.clone())
                .map_err(|e| Error::device(format!("cuBLAS handle creation failed: {e}")))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Runs the matmul `call` (f32 or f64, see [`runs_on_cublas`]) on `dev`.
pub fn run_matmul(dev: &CudaDevice, call: &LibraryCall, inputs: &[Arc<Buffer>]) -> Result<Buffer> {
    assert!(
        runs_on_cublas(call),
        "invariant: only f32/f64 matmuls reach cuBLAS"
    );
    let blas = handle(dev)?;
    check_call(call, inputs);
    let (av, bv, ov) = check_matmul_views(call);
    assert!(
        ov.internal_overlap() == Some(false) || ov.numel() <= 1,
        "invariant: a matmul output view does not overlap itself: {ov}"
    );
    if inputs.iter().any(|b| b.dtype() != call.dtype) {
        // Buffers disagreeing with the call's dtype: the host routine handles any pair.
        return Ok(run_library(call, inputs));
    }
    let Some(prepared) = prepare(&inputs[0], &inputs[1], av, bv, ov, call.len) else {
        // Empty, or too large for cuBLAS's `int`: the host routine.
        return Ok(run_library(call, inputs));
    };
    let c = match call.dtype {
        DType::F32 => gemm::<f32>(dev, blas, &prepared, DType::F32)?,
        DType::F64 => gemm::<f64>(dev, blas, &prepared, DType::F64)?,
        DType::Bool
        | DType::U8
        | DType::I8
        | DType::I16
        | DType::I32
        | DType::I64
        | DType::F16
        | DType::BF16 => unreachable!("runs_on_cublas admits f32 and f64 only"),
    };
    Ok(match &prepared.scatter {
        Some(real) => {
            let mut out = Buffer::zeros(call.dtype, call.len);
            scatter(&c, real, &mut out);
            out
        }
        None => c,
    })
}

fn op(transposed: bool) -> cublasOperation_t {
    if transposed {
        cublasOperation_t::CUBLAS_OP_T
    } else {
        cublasOperation_t::CUBLAS_OP_N
    }
}

fn upload(dev: &CudaDevice, b: &Buffer) -> Result<CudaSlice<u8>> {
    let bytes = host_bytes(b);
    let mut d = dev.pool.take(&dev.stream, bytes.len())?;
    if !bytes.is_empty() {
        dev.stream
            .memcpy_htod(&bytes, &mut d)
            .map_err(|e| driver_error("host-to-device copy", e))?;
    }
    Ok(d)
}

/// The planned calls on `dev`; returns cuBLAS's C (`prepared.c_len` elements of `dtype`).
fn gemm<T>(dev: &CudaDevice, blas: &CudaBlas, prepared: &Prepared, dtype: DType) -> Result<Buffer>
where
    T: DeviceRepr + From<f32>,
    CudaBlas: Gemm<T>,
{
    let p = &prepared.plan;
    let stream = &dev.stream;
    let a = upload(dev, &prepared.a)?;
    let b = upload(dev, &prepared.b)?;
    let c_bytes = prepared.c_len * dtype.size();
    let mut c = dev.pool.take(stream, c_bytes)?;
    // Elements outside the output view stay zero, as on the host.
    stream
        .memset_zeros(&mut c)
        .map_err(|e| driver_error("memset", e))?;
    // cuBLAS runs in the current context: make it the device's on this thread (the copies
    // above bound it too; this states the requirement).
    stream
        .context()
        .bind_to_thread()
        .map_err(|e| driver_error("context binding", e))?;
    let mut calls = Vec::new();
    p.for_each_call(|oa, ob, oc| calls.push((oa, ob, oc)));
    let cfg = |batch_size| StridedBatchedConfig {
        gemm: GemmConfig {
            transa: op(p.transa),
            transb: op(p.transb),
            // `plan` checked that sizes and leading dimensions fit an `int`.
            m: p.m as i32,
            n: p.n as i32,
            k: p.k as i32,
            alpha: T::from(1.0),
            lda: p.lda as i32,
            ldb: p.ldb as i32,
            beta: T::from(0.0),
            ldc: p.ldc as i32,
        },
        batch_size,
        stride_a: p.stride_a as i64,
        stride_b: p.stride_b as i64,
        stride_c: p.stride_c as i64,
    };
    {
        // SAFETY: the pool's byte buffers hold `len` elements of `T` (uploaded from buffers of
        // that dtype, or sized `c_len · size`), and device memory is aligned for any `T`.
        let (a_t, b_t, mut c_t) = unsafe {
            (
                a.transmute::<T>(prepared.a.len()),
                b.transmute::<T>(prepared.b.len()),
                c.transmute_mut::<T>(prepared.c_len),
            )
        };
        let (a_t, b_t) = (
            a_t.expect("invariant: upload holds the buffer"),
            b_t.expect("invariant: upload holds the buffer"),
        );
        let c_t = c_t.as_mut().expect("invariant: c holds c_len elements");
        for (oa, ob, oc) in calls {
            let (a_v, b_v, mut c_v) = (a_t.slice(oa..), b_t.slice(ob..), c_t.slice_mut(oc..));
            // SAFETY: `plan` maps every address cuBLAS forms from these arguments to an address
            // of the smelt view it came from (size-1 dims never move the address), and every
            // view fits inside its buffer (`check_call`, or a contiguous copy); the output
            // view does not overlap itself, so no two batches or elements write one address.
            unsafe { blas.gemm_strided_batched(cfg(p.batch as i32), &a_v, &b_v, &mut c_v) }
                .map_err(|e| Error::device(format!("cuBLAS gemm failed: {e}")))?;
        }
    }
    let mut bytes = vec![0u8; c_bytes];
    if !bytes.is_empty() {
        stream
            .memcpy_dtoh(&c, &mut bytes)
            .map_err(|e| driver_error("device-to-host copy", e))?;
    }
    stream
        .synchronize()
        .map_err(|e| driver_error("synchronize", e))?;
    for d in [a, b, c] {
        dev.pool.give(d);
    }
    Ok(buffer_from_bytes(dtype, &bytes))
}
