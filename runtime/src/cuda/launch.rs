//! Prepare and launch: a step's kernel is rendered, compiled (NVRTC, cached by source) and
//! loaded once, when the plan is first run on the device ([`prepare`]); each launch then only
//! allocates the outputs and queues the kernel with its buffers' addresses and the scalars
//! rendered for its sizes.

use super::blas::{self, Matmul};
use super::device::{CudaDevice, Function, driver_error};
use super::memory::CudaBuffer;
use crate::buffer::Buffer;
use cudarc::driver::result;
use smelt_codegen::cuda::compile::{Image, KernelCache, source_hash};
use smelt_codegen::cuda::library::{LibraryKernel, render_library, runs_on_cublas};
use smelt_codegen::cuda::{CudaKernel, render};
use smelt_ir::{Access, Instr, Kernel, LibraryCall, Result, Work};
use std::ffi::c_void;
use std::sync::Arc;

/// What the CUDA backend works out for a step before its first launch.
#[derive(Debug)]
pub struct Prepared(pub(super) Step);

#[derive(Debug)]
pub(super) enum Step {
    /// A generated kernel.
    Kernel(Launch),
    /// A matmul on cuBLAS.
    Matmul(Box<Matmul>),
    /// A library routine as a rendered kernel, with the scratch bytes it needs.
    Library(Launch, usize),
}

/// A loaded kernel and how to launch it.
#[derive(Debug)]
pub(super) struct Launch {
    /// `None` for a launch with nothing to do (an empty iteration space).
    function: Option<Function>,
    grid: u32,
    block: u32,
    /// The `long long` parameters after the buffers.
    scalars: Vec<i64>,
}

/// Loads `source`'s `entry` on `dev`, compiling it at most once per process (and per on-disk
/// PTX cache).
fn load(dev: &CudaDevice, source: &str, entry: &str) -> Result<Function> {
    let key = source_hash(&[source, &dev.arch]);
    if let Some(f) = dev
        .functions
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&key)
    {
        return Ok(*f);
    }
    let cubin = KernelCache::global().get(source, &dev.arch, Image::Cubin)?;
    dev.bind()?;
    // SAFETY: the image is a CUBIN NVRTC made for this device's architecture, alive for the
    // call; the context is current.
    let module = unsafe { result::module::load_data(cubin.as_ptr().cast()) }
        .map_err(|e| driver_error("module load", e))?;
    let name = std::ffi::CString::new(entry)
        .map_err(|_| smelt_ir::Error::device("kernel entry name with a NUL byte"))?;
    // SAFETY: the module was just loaded and is never unloaded; the name is NUL-terminated.
    let f = unsafe { result::module::get_function(module, name) }
        .map_err(|e| driver_error("function lookup", e))?;
    let f = Function(f);
    dev.functions
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(key, f);
    Ok(f)
}

/// Loads a rendered kernel (nothing for an empty launch).
pub(super) fn loaded(dev: &CudaDevice, k: &CudaKernel) -> Result<Launch> {
    let function = if k.is_empty_launch() {
        None
    } else {
        Some(load(dev, &k.source(), &k.entry)?)
    };
    Ok(Launch {
        function,
        grid: k.grid,
        block: k.block,
        scalars: k.scalars.iter().map(|(_, v)| *v).collect(),
    })
}

/// What a step runs as, rendered once per plan: a kernel, a library routine's kernel, or a
/// product for cuBLAS (planned when it is loaded).
enum Rendered<'w> {
    Kernel(CudaKernel),
    Library(LibraryKernel),
    Cublas(&'w LibraryCall),
}

/// Works out how each of `works` runs on `dev`. Every kernel is rendered once and all of them
/// are compiled at once on the host's threads ([`KernelCache::warm`]) before they load one by
/// one: a plan's first run waits for about its slowest NVRTC compile, not for all of them in
/// turn. Products on cuBLAS have only their (rare) copy kernels, compiled as they come.
pub(super) fn prepare(dev: &CudaDevice, works: &[&Work]) -> Result<Vec<Prepared>> {
    let rendered: Vec<Rendered> = works
        .iter()
        .map(|work| match work {
            Work::Kernel(k) => {
                crate::reference::verify(k);
                Rendered::Kernel(render(k))
            }
            Work::Library(call) if runs_on_cublas(call) => Rendered::Cublas(call),
            Work::Library(call) => Rendered::Library(render_library(call)),
        })
        .collect();
    let sources: Vec<String> = rendered
        .iter()
        .filter_map(|r| match r {
            Rendered::Kernel(k) | Rendered::Library(LibraryKernel { kernel: k, .. }) => {
                (!k.is_empty_launch()).then(|| k.source())
            }
            Rendered::Cublas(_) => None,
        })
        .collect();
    KernelCache::global().warm(&sources, &dev.arch, Image::Cubin);
    rendered
        .into_iter()
        .map(|r| {
            Ok(Prepared(match r {
                Rendered::Kernel(k) => Step::Kernel(loaded(dev, &k)?),
                Rendered::Library(lib) => Step::Library(loaded(dev, &lib.kernel)?, lib.scratch),
                Rendered::Cublas(call) => match blas::prepare(dev, call)? {
                    Some(m) => Step::Matmul(Box::new(m)),
                    // A float matmul too large for cuBLAS's `int` sizes: a rendered kernel
                    // that accumulates in f64, as on the host.
                    None => {
                        let lib = render_library(call);
                        Step::Library(loaded(dev, &lib.kernel)?, lib.scratch)
                    }
                },
            }))
        })
        .collect()
}

/// Queues `launch` with buffer addresses `buffers` (in parameter order).
pub(super) fn queue(dev: &CudaDevice, launch: &Launch, buffers: &[u64]) -> Result<()> {
    let Some(Function(f)) = launch.function else {
        return Ok(());
    };
    dev.bind()?;
    let mut addresses: Vec<u64> = buffers.to_vec();
    let mut scalars = launch.scalars.clone();
    let mut params: Vec<*mut c_void> = addresses
        .iter_mut()
        .map(|a| (a as *mut u64).cast())
        .chain(scalars.iter_mut().map(|s| (s as *mut i64).cast()))
        .collect();
    // SAFETY: the function was loaded in this context; `params` points at one value per
    // parameter of its rendered signature (each buffer's address, then each `long long`
    // scalar), alive until the call returns (the driver copies them when queueing); every
    // access the kernel makes stays inside its buffer because the kernel IR (or the library
    // call's views) fits the buffers the caller passes, which are allocated for them.
    unsafe {
        result::launch_kernel(
            f,
            (launch.grid, 1, 1),
            (launch.block, 1, 1),
            0,
            dev.cu_stream(),
            &mut params,
        )
    }
    .map_err(|e| driver_error("kernel launch", e))
}

/// The device buffer of an argument: every buffer of a realisation on a device lives there.
pub(super) fn device_buffer(b: Buffer, dev: &CudaDevice) -> Arc<CudaBuffer> {
    let elsewhere = match b {
        Buffer::Cuda(c) if c.dev().ordinal == dev.ordinal => return c,
        Buffer::Cuda(c) => c.device(),
        Buffer::Host(_) => crate::device::Device::Cpu,
    };
    panic!(
        "invariant: a realisation on cuda:{} reads buffers there, got one on {elsewhere}",
        dev.ordinal
    )
}

/// Runs a prepared kernel on device buffers; returns its outputs in output order.
pub(super) fn run_kernel(
    dev: &CudaDevice,
    kernel: &Kernel,
    launch: &Launch,
    args: Vec<Buffer>,
) -> Result<Vec<Buffer>> {
    assert_eq!(
        args.len(),
        kernel.read_args(),
        "invariant: one buffer per read argument"
    );
    let args: Vec<Arc<CudaBuffer>> = args.into_iter().map(|b| device_buffer(b, dev)).collect();
    let loaded = |arg: usize| {
        kernel
            .body
            .iter()
            .any(|i| matches!(i, Instr::Load { arg: a, .. } if *a == arg))
    };
    let mut outs: Vec<Arc<CudaBuffer>> = Vec::with_capacity(kernel.outputs().len());
    for out_arg in kernel.outputs() {
        let spec = &kernel.args[out_arg];
        let out = match spec.access {
            Access::Write if kernel.overwrites(out_arg) => {
                Arc::new(CudaBuffer::uninit(dev, spec.dtype, spec.len)?)
            }
            Access::Write | Access::Read => Arc::new(CudaBuffer::zeros(dev, spec.dtype, spec.len)?),
            // The next version of a storage: its old memory when nothing else holds it and the
            // kernel does not also read the old values, else a copy.
            Access::Update { from } if !loaded(from) && Arc::strong_count(&args[from]) == 1 => {
                args[from].clone()
            }
            Access::Update { from } => Arc::new(args[from].duplicate()?),
        };
        assert!(
            out.dtype() == spec.dtype && out.len() >= spec.len,
            "invariant: kernel {}'s outputs have its arguments' dtypes and lengths",
            kernel.name
        );
        outs.push(out);
    }
    for (arg, b) in args.iter().enumerate() {
        let spec = &kernel.args[arg];
        assert!(
            b.dtype() == spec.dtype && (b.len() >= spec.len || !loaded(arg)),
            "invariant: kernel {}'s buffers have its arguments' dtypes and lengths",
            kernel.name
        );
    }
    let addresses: Vec<u64> = args.iter().chain(&outs).map(|b| b.ptr()).collect();
    queue(dev, launch, &addresses)?;
    Ok(outs.into_iter().map(Buffer::Cuda).collect())
}

/// Runs a prepared library step on device buffers.
pub(super) fn run_library(
    dev: &CudaDevice,
    call: &LibraryCall,
    step: &Step,
    args: Vec<Buffer>,
) -> Result<Buffer> {
    assert_eq!(
        args.len(),
        call.inputs.len(),
        "invariant: one buffer per library input"
    );
    let mut args: Vec<Arc<CudaBuffer>> = args.into_iter().map(|b| device_buffer(b, dev)).collect();
    // Buffers hold real parts: a complex view counts two per element (as on the host).
    for ((d, v), b) in call.inputs.iter().zip(&args) {
        assert!(
            v.fits_in(b.len() / d.parts()),
            "invariant: library input view {v} inside its buffer of {}",
            b.len()
        );
    }
    assert!(
        call.out.fits_in(call.out.read.len(call.len)),
        "invariant: library output view inside its buffer"
    );
    match step {
        Step::Matmul(m) => blas::run(dev, call, m, &args).map(Buffer::Cuda),
        Step::Library(launch, scratch) => {
            // The next version of a storage starts as the old one: its memory when nothing else
            // holds it, else a copy. The kernel never reads input 0, so its parameter may
            // name the output.
            let out = if call.op.updates_input_0() {
                assert_eq!(
                    args[0].len(),
                    call.len,
                    "invariant: an update reads the whole old version"
                );
                let old = std::mem::replace(&mut args[0], Arc::new(CudaBuffer::empty(dev)?));
                match Arc::try_unwrap(old) {
                    Ok(only) => only,
                    Err(shared) => shared.duplicate()?,
                }
            } else {
                CudaBuffer::zeros(dev, call.dtype, call.len)?
            };
            let scratch = match scratch {
                0 => None,
                bytes => Some(CudaBuffer::uninit(
                    dev,
                    smelt_ir::DType::I64,
                    bytes.div_ceil(8),
                )?),
            };
            let mut addresses: Vec<u64> = args.iter().map(|b| b.ptr()).collect();
            if call.op.updates_input_0() {
                addresses[0] = out.ptr();
            }
            addresses.push(out.ptr());
            addresses.extend(scratch.iter().map(CudaBuffer::ptr));
            queue(dev, launch, &addresses)?;
            Ok(Buffer::Cuda(Arc::new(out)))
        }
        Step::Kernel(_) => panic!("invariant: a library step is prepared as a library call"),
    }
}
