//! Launch: renders and compiles a kernel (cached by source), loads it once per device, copies
//! the inputs in through the pool, launches with the rendered scalars and launch shape, and
//! copies the outputs back.

use super::device::{CudaDevice, driver_error};
use crate::buffer::Buffer;
use crate::memory::Memory;
use cudarc::driver::{LaunchConfig, PushKernelArg};
use half::{bf16, f16};
use smelt_codegen::cuda::compile::{PtxCache, source_hash};
use smelt_codegen::cuda::render;
use smelt_ir::{Access, DType, Kernel, Result};
use std::sync::Arc;

/// The bytes of `b` as the device stores them (bool as one byte, f16/bf16 as their bits).
pub(super) fn host_bytes(b: &Buffer) -> Vec<u8> {
    match b {
        Buffer::Bool(v) => v.iter().map(|&x| x as u8).collect(),
        Buffer::U8(v) => v.to_vec(),
        Buffer::I8(v) => v.iter().map(|&x| x as u8).collect(),
        Buffer::I16(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Buffer::I32(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Buffer::I64(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Buffer::F16(v) => v.iter().flat_map(|x| x.to_bits().to_ne_bytes()).collect(),
        Buffer::BF16(v) => v.iter().flat_map(|x| x.to_bits().to_ne_bytes()).collect(),
        Buffer::F32(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Buffer::F64(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
    }
}

pub(super) fn buffer_from_bytes(dtype: DType, bytes: &[u8]) -> Buffer {
    fn chunks<const N: usize>(bytes: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
        bytes
            .chunks_exact(N)
            .map(|c| c.try_into().expect("exact chunks"))
    }
    match dtype {
        DType::Bool => Buffer::Bool(bytes.iter().map(|&x| x != 0).collect()),
        DType::U8 => Buffer::U8(Memory::from_slice(bytes)),
        DType::I8 => Buffer::I8(bytes.iter().map(|&x| x as i8).collect()),
        DType::I16 => Buffer::I16(chunks(bytes).map(i16::from_ne_bytes).collect()),
        DType::I32 => Buffer::I32(chunks(bytes).map(i32::from_ne_bytes).collect()),
        DType::I64 => Buffer::I64(chunks(bytes).map(i64::from_ne_bytes).collect()),
        DType::F16 => Buffer::F16(
            chunks(bytes)
                .map(|c| f16::from_bits(u16::from_ne_bytes(c)))
                .collect(),
        ),
        DType::BF16 => Buffer::BF16(
            chunks(bytes)
                .map(|c| bf16::from_bits(u16::from_ne_bytes(c)))
                .collect(),
        ),
        DType::F32 => Buffer::F32(chunks(bytes).map(f32::from_ne_bytes).collect()),
        DType::F64 => Buffer::F64(chunks(bytes).map(f64::from_ne_bytes).collect()),
    }
}

/// Runs `kernel` on `dev` with host inputs in argument order; returns the output buffers in
/// output order.
pub fn run_kernel(
    dev: &CudaDevice,
    kernel: &Kernel,
    inputs: &[Arc<Buffer>],
) -> Result<Vec<Buffer>> {
    assert_eq!(
        inputs.len(),
        kernel.read_args(),
        "invariant: one buffer per read argument"
    );
    let rendered = render(kernel);
    let stream = &dev.stream;
    let mut device_inputs = Vec::with_capacity(inputs.len());
    for b in inputs {
        let bytes = host_bytes(b);
        let mut d = dev.pool.take(stream, bytes.len())?;
        if !bytes.is_empty() {
            stream
                .memcpy_htod(&bytes, &mut d)
                .map_err(|e| driver_error("host-to-device copy", e))?;
        }
        device_inputs.push(d);
    }
    // Each output starts as zeros (a fresh buffer) or a copy of its source (an update); it is
    // always its own memory, so loads of the source read the old values.
    let mut outs = Vec::with_capacity(kernel.outputs().len());
    for out_arg in kernel.outputs() {
        let spec = &kernel.args[out_arg];
        let initial = match spec.access {
            Access::Update { from } => host_bytes(&inputs[from]),
            Access::Write | Access::Read => vec![0u8; spec.len * spec.dtype.size()],
        };
        let mut out = dev.pool.take(stream, initial.len())?;
        if !initial.is_empty() {
            stream
                .memcpy_htod(&initial, &mut out)
                .map_err(|e| driver_error("host-to-device copy", e))?;
        }
        outs.push((spec.dtype, initial.len(), out));
    }
    if !rendered.is_empty_launch() {
        let source = rendered.source();
        let key = source_hash(&[&source, &dev.arch]);
        let function = {
            let mut functions = dev.functions.lock().unwrap_or_else(|p| p.into_inner());
            match functions.get(&key) {
                Some(f) => f.clone(),
                None => {
                    let ptx = PtxCache::global().get(&source, &dev.arch)?;
                    let module = stream
                        .context()
                        .load_module(cudarc::nvrtc::Ptx::from_src(ptx.as_str()))
                        .map_err(|e| driver_error("module load", e))?;
                    let f = module
                        .load_function(&rendered.entry)
                        .map_err(|e| driver_error("function lookup", e))?;
                    functions.insert(key, f.clone());
                    f
                }
            }
        };
        let scalars: Vec<i64> = rendered.scalars.iter().map(|(_, v)| *v).collect();
        let mut launch = stream.launch_builder(&function);
        for d in &device_inputs {
            launch.arg(d);
        }
        for (_, _, out) in &mut outs {
            launch.arg(out);
        }
        for s in &scalars {
            launch.arg(s);
        }
        let config = LaunchConfig {
            grid_dim: (rendered.grid, 1, 1),
            block_dim: (rendered.block, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the arguments follow the rendered signature (buffers in argument order,
        // then the rendered scalars); every access stays inside its buffer because the kernel
        // verified and each buffer holds its argument's `len` elements.
        unsafe { launch.launch(config) }.map_err(|e| driver_error("kernel launch", e))?;
    }
    let mut host = Vec::with_capacity(outs.len());
    for (dtype, len, out) in &outs {
        let mut bytes = vec![0u8; *len];
        if !bytes.is_empty() {
            stream
                .memcpy_dtoh(out, &mut bytes)
                .map_err(|e| driver_error("device-to-host copy", e))?;
        }
        host.push((*dtype, bytes));
    }
    stream
        .synchronize()
        .map_err(|e| driver_error("synchronize", e))?;
    for d in device_inputs {
        dev.pool.give(d);
    }
    for (_, _, out) in outs {
        dev.pool.give(out);
    }
    Ok(host
        .into_iter()
        .map(|(dtype, bytes)| buffer_from_bytes(dtype, &bytes))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip_every_dtype() {
        for dtype in DType::ALL {
            let b = Buffer::from_scalars(
                dtype,
                &[
                    smelt_ir::Scalar::Int(1),
                    smelt_ir::Scalar::Int(0),
                    smelt_ir::Scalar::Int(3),
                ],
            );
            assert_eq!(buffer_from_bytes(dtype, &host_bytes(&b)), b, "{dtype}");
        }
    }
}
