//! The cpu backend: loads kernels compiled by `smelt_codegen::cpu` and launches them over rayon.
//!
//! Compiled code is cached by structure (`structure_key`: dtypes, op DAG, contiguous or
//! broadcast inner loads — never sizes) in one hashbrown map shared by all threads; a second
//! realisation of the same graph shape compiles nothing. A kernel the JIT cannot compile runs
//! on the reference interpreter instead (`SMELT_DUMP=kernels` says so). The one `unsafe` call
//! of a JIT function pointer is `launch`.

use crate::backend::{Backend, Executable, prepared_once};
use crate::buffer::{Buffer, HostBuffer};
use crate::device::Target;
use crate::reference::{Reference, prepare_outputs};
use crate::residency;
use hashbrown::HashMap;
use smelt_codegen::cpu::{
    CompiledKernel, CpuJit, KernelFn, Unsupported, plain_scratch_row, scratch_row,
    streaming_candidate, streams_aligned, structure_key,
};
use smelt_ir::kernel::{Instr, Kernel};
use smelt_ir::{DType, LibraryCall, Result, Work};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

/// What the cache holds per structure: code, or why there is none.
type Entry = Result<Arc<CompiledKernel>, Unsupported>;

struct CpuState {
    jit: Result<Mutex<CpuJit>, Unsupported>,
    cache: RwLock<HashMap<String, Entry>>,
    pool: Option<rayon::ThreadPool>,
}

fn cpu() -> &'static CpuState {
    static CPU: OnceLock<CpuState> = OnceLock::new();
    CPU.get_or_init(|| {
        let pool = std::env::var("SMELT_THREADS")
            .ok()
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|n| rayon::ThreadPoolBuilder::new().num_threads(n).build().ok());
        CpuState {
            jit: CpuJit::new(&crate::cpu_helpers::symbols()).map(Mutex::new),
            cache: RwLock::new(HashMap::new()),
            pool,
        }
    })
}

/// Whether `SMELT_DUMP` names `what` or `all` (the backends' dumps: `timing`).
pub(crate) fn dump(what: &str) -> bool {
    smelt_ir::dump_requested(what) || smelt_ir::dump_requested("all")
}

/// Launches the cpu backend has handed to the reference interpreter ([`refused_kernels`]).
static REFUSED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many kernel launches in this process ran on the reference interpreter because the JIT
/// refused the kernel. A comparison of the cpu backend with the reference then compares the
/// interpreter with itself, so the end-to-end tests assert that this stays 0.
pub fn refused_kernels() -> usize {
    REFUSED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Compiled code for `kernel`, from the cache or freshly compiled.
pub fn compiled(kernel: &Kernel) -> Entry {
    cached(kernel, structure_key(kernel), CpuJit::compile)
}

/// What a streaming variant's cache key ends with.
const STREAM_KEY: &str = "|stream";

/// The streaming variant of `kernel` (`codegen/src/cpu/stream.rs`), from the cache or freshly
/// compiled; only for launches whose vector stores are all aligned (`streams_aligned`).
pub fn compiled_streaming(kernel: &Kernel) -> Entry {
    let mut key = structure_key(kernel);
    key.push_str(STREAM_KEY);
    cached(kernel, key, CpuJit::compile_streaming)
}

/// The cache's entry under `key`, made by `compile` on a miss.
fn cached(
    kernel: &Kernel,
    key: String,
    compile: fn(&mut CpuJit, &Kernel) -> Result<CompiledKernel, Unsupported>,
) -> Entry {
    let cpu = cpu();
    if let Some(e) = cpu
        .cache
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(&key)
    {
        return e.clone();
    }
    let entry = match &cpu.jit {
        Err(e) => Err(e.clone()),
        Ok(jit) => {
            let mut jit = jit.lock().unwrap_or_else(|p| p.into_inner());
            compile(&mut jit, kernel).map(Arc::new)
        }
    };
    match &entry {
        Ok(k) if dump("clif") => eprintln!("clif for {}:\n{}", kernel.name, k.clif),
        Ok(k) if dump("asm") => eprintln!("asm for {}:\n{}", kernel.name, k.asm),
        // Without a streaming variant the plain code runs; without plain code, the interpreter.
        Err(why) if dump("kernels") && key.ends_with(STREAM_KEY) => eprintln!(
            "cpu: kernel {} has no streaming variant (its plain code runs): {why}",
            kernel.name
        ),
        Err(why) if dump("kernels") => eprintln!(
            "cpu: kernel {} runs on the reference interpreter: {why}",
            kernel.name
        ),
        Ok(_) | Err(_) => {}
    }
    cpu.cache
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .insert(key, entry.clone());
    entry
}

/// Kernels in the cache (compiled or refused).
pub fn cached_kernels() -> usize {
    cpu().cache.read().unwrap_or_else(|p| p.into_inner()).len()
}

/// The argument block of one launch: buffer addresses, sizes, strides and offsets.
struct Launch {
    entry: KernelFn,
    bufs: Vec<usize>,
    sizes: Vec<i64>,
    strides: Vec<i64>,
    /// Bytes of the scratch row each call passes after the buffers (the stash of a streaming
    /// variant, `scratch_row`, or of a half-precision output, `plain_scratch_row`).
    scratch: Option<usize>,
}

/// Runs rows `begin..end` of dimension 0.
fn launch(l: &Launch, begin: i64, end: i64) {
    crate::float_mode::apply();
    let Some(bytes) = l.scratch else {
        return call(l, &l.bufs, begin, end);
    };
    // This call's own row, 16-byte aligned (u128 is); never empty, so its address is one.
    let mut row = vec![0u128; bytes.div_ceil(16).max(1)];
    let mut bufs = l.bufs.clone();
    bufs.push(row.as_mut_ptr() as usize);
    call(l, &bufs, begin, end);
}

/// Calls `l`'s entry on `bufs` for rows `begin..end` of dimension 0.
fn call(l: &Launch, bufs: &[usize], begin: i64, end: i64) {
    // SAFETY: `entry` was compiled for this kernel's structure with the kernel ABI. Every
    // buffer outlives the call; `Kernel::verify` (checked in `prepare`, before any launch)
    // proved that each load and store over the whole iteration space stays inside its
    // argument's length (the code's prefetches may name addresses past a buffer's end, but a
    // prefetch reads nothing into the program and never faults; the JIT defines no code whose
    // prefetch loads it could not rewrite), and `run_prepared` checked each buffer against its
    // argument; a streaming variant's stores, which fault where an address is not a multiple
    // of 16, run only where `streams_aligned` proved every one is; only the outputs are
    // written; each output is a buffer of its own (`prepare_outputs`), aliased by no input and
    // no other output. Code with a stash in a scratch row (a streaming variant, or an f16 or
    // bf16 output) also reads and writes the row after the buffers, at the reduced dim's
    // indices only: `launch` makes it that long (`scratch_row`), one per call. Concurrent
    // launches cover disjoint ranges of dimension 0, along which every store of every output
    // moves (checked in `run_prepared`).
    unsafe {
        (l.entry)(
            bufs.as_ptr() as *const *mut u8,
            l.sizes.as_ptr(),
            l.strides.as_ptr(),
            begin,
            end,
        )
    }
}

/// Elements below which a kernel stays on the calling thread, and the least work per task.
const GRAIN: usize = 1 << 15;

/// When kernels write with streaming stores (`compiled_streaming`), where their stores allow:
/// from an output size at which the output leaves the caches before anything reads it, so each
/// ordinary store's read of its line first is wasted traffic, unless what the launch touches
/// is still cached from the launches before. Chosen from the host's last-level cache
/// (`smelt_codegen::cpu::host::Tuning`: `stream_min` 16 MiB on the machines measured,
/// `cache_share` a fifth of the cache; `docs/benchmarks.md`, "Streaming stores").
fn streams() -> Streams {
    let t = smelt_codegen::cpu::host::tuning();
    Streams {
        min: t.stream_min,
        share: t.cache_share,
    }
}

/// When a launch runs its kernel's streaming variant: outputs of at least `min` bytes, unless
/// the launch's buffers are likely in a cache of `share` bytes ([`residency::cached`]).
#[derive(Clone, Copy, Debug)]
struct Streams {
    min: usize,
    share: usize,
}

/// Whether streaming variants may run at all: `SMELT_STREAM=0` says never (for comparisons).
fn streaming_enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("SMELT_STREAM").map_or(true, |v| v != "0"))
}

/// Runs `kernel` on compiled code (or the interpreter where the JIT refused it); returns its
/// output buffers in output order.
/// Panics when an output cannot be allocated (the backend's `run_kernel` returns the error).
pub fn run_kernel(kernel: &Kernel, inputs: Vec<Arc<HostBuffer>>) -> Vec<HostBuffer> {
    run_prepared(kernel, &prepare(kernel), inputs, streams()).unwrap_or_else(|e| panic!("{e}"))
}

/// Launches of a streaming variant so far (the tests check that it ran).
#[cfg(test)]
pub(crate) static STREAMED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// [`run_kernel`] with the streaming variant whatever the output's size, where the kernel has
/// one and its stores are aligned (the tests' way to run that code on small buffers).
#[cfg(test)]
pub(crate) fn run_kernel_streaming(
    kernel: &Kernel,
    inputs: Vec<Arc<HostBuffer>>,
) -> Vec<HostBuffer> {
    let always = Streams { min: 0, share: 0 };
    run_prepared(kernel, &prepare(kernel), inputs, always).unwrap_or_else(|e| panic!("{e}"))
}

/// The cpu backend: cranelift-compiled kernels over rayon, library routines on the host.
#[derive(Clone, Copy, Debug)]
pub struct Cpu;

impl Backend for Cpu {
    type Prepared = Prepared;

    fn target(&self) -> Target {
        Target::Cpu
    }

    fn prepare(&self, work: &Work) -> Result<Prepared> {
        Ok(Prepared(match work {
            Work::Kernel(k) => Some(prepare(k)),
            Work::Library(_) => None,
        }))
    }

    fn prepared(&self, exec: &Executable) -> Result<Arc<[Prepared]>> {
        prepared_once(self, exec, &exec.cpu)
    }

    fn run_kernel(
        &self,
        kernel: &Kernel,
        prepared: &Prepared,
        args: Vec<Buffer>,
    ) -> Result<Vec<Buffer>> {
        let args = args.into_iter().map(Buffer::into_host).collect();
        let outs = match &prepared.0 {
            Some(how) => run_prepared(kernel, how, args, streams())?,
            None => panic!("invariant: a kernel step is prepared as a kernel"),
        };
        Ok(outs.into_iter().map(Buffer::from).collect())
    }

    // Library routines and host memory are the reference backend's: the same host loops
    // (matmul through the `gemm` crate) and the same buffers.
    fn run_library(&self, call: &LibraryCall, _: &Prepared, args: Vec<Buffer>) -> Result<Buffer> {
        let t0 = std::time::Instant::now();
        let out = Reference.run_library(call, &(), args);
        if dump("timing") {
            eprint!(
                "cpu: {:.3} ms {}",
                t0.elapsed().as_secs_f64() * 1e3,
                call.to_text()
            );
        }
        out
    }

    fn zeros(&self, dtype: DType, len: usize) -> Result<Buffer> {
        Reference.zeros(dtype, len)
    }

    fn upload(&self, host: Arc<HostBuffer>) -> Result<Buffer> {
        Reference.upload(host)
    }

    fn synchronize(&self) -> Result<()> {
        Reference.synchronize()
    }
}

/// What the cpu backend works out for a step before its first launch: for a kernel, how it
/// runs (verified, split, compiled); nothing for a library call.
pub struct Prepared(Option<How>);

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match &self.0 {
            Some(How::Split(_)) => "Prepared(split)",
            Some(How::Whole(Ok(_), ..)) => "Prepared(compiled)",
            Some(How::Whole(Err(_), ..)) => "Prepared(interpreted)",
            None => "Prepared(library)",
        })
    }
}

/// How a kernel runs, whatever its buffers.
enum How {
    /// A large full reduction: blocks in parallel, then their combination
    /// (`Kernel::split_full_reduction`: the split depends on the shape alone).
    Split(Box<[(Kernel, How); 2]>),
    /// Compiled code, or why the interpreter runs it; the bytes of the scratch row each call
    /// of that code needs (`plain_scratch_row`: a half-precision output's stash); and for a
    /// kernel that may stream its stores (`streaming_candidate`), how that variant runs.
    Whole(Entry, Option<usize>, Option<Streaming>),
}

/// A kernel's streaming variant: its code, compiled at the first launch that uses it, and the
/// bytes of the scratch row each call of it needs (`scratch_row`).
struct Streaming {
    code: OnceLock<Entry>,
    scratch: Option<usize>,
}

fn prepare(kernel: &Kernel) -> How {
    crate::reference::verify(kernel);
    match kernel.split_full_reduction() {
        Some((blocks, combine)) => {
            let (b, c) = (prepare(&blocks), prepare(&combine));
            How::Split(Box::new([(blocks, b), (combine, c)]))
        }
        None => How::Whole(
            compiled(kernel),
            plain_scratch_row(kernel),
            streaming_candidate(kernel).then(|| Streaming {
                code: OnceLock::new(),
                scratch: scratch_row(kernel),
            }),
        ),
    }
}

/// Runs `kernel` as `prepared`, with its streaming variant where `streams` says and the
/// stores allow.
fn run_prepared(
    kernel: &Kernel,
    prepared: &How,
    mut inputs: Vec<Arc<HostBuffer>>,
    streams: Streams,
) -> Result<Vec<HostBuffer>> {
    let (code, plain_scratch, streaming) = match prepared {
        How::Split(halves) => {
            let [(blocks, b), (combine, c)] = &**halves;
            let partials = run_prepared(blocks, b, inputs.clone(), streams)?
                .pop()
                .expect("the blocks kernel has one output");
            inputs.push(Arc::new(partials));
            return run_prepared(combine, c, inputs, streams);
        }
        How::Whole(Ok(code), scratch, streaming) => (code, *scratch, streaming),
        How::Whole(Err(_), ..) => {
            REFUSED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return crate::reference::run_verified(kernel, inputs);
        }
    };
    let timing = dump("timing");
    let t0 = std::time::Instant::now();
    let mut outs = prepare_outputs(kernel, &mut inputs)?;
    // What `verify` proved holds for buffers of the arguments' dtypes and lengths: check that
    // these are. (An `Update`'s source moved into its output leaves an empty buffer behind,
    // which nothing loads.)
    let loaded = |arg: usize| {
        kernel
            .body
            .iter()
            .any(|i| matches!(i, Instr::Load { arg: a, .. } if *a == arg))
    };
    let fits = |b: &HostBuffer, arg: usize| {
        let spec = &kernel.args[arg];
        b.dtype() == spec.dtype && (b.len() >= spec.len || !loaded(arg))
    };
    assert!(
        inputs.iter().enumerate().all(|(arg, b)| fits(b, arg))
            && outs
                .iter()
                .zip(kernel.outputs())
                .all(|(b, arg)| fits(b, arg)),
        "invariant: kernel {}'s buffers have its arguments' dtypes and lengths",
        kernel.name
    );
    let rank = kernel.shape.len();
    let kept = rank - kernel.reduce_axes;
    if kernel.shape[..kept].contains(&0) {
        return Ok(outs);
    }
    let mut bufs: Vec<usize> = inputs.iter().map(|b| b.as_ptr() as usize).collect();
    bufs.extend(outs.iter_mut().map(|out| out.as_mut_ptr() as usize));
    let mut strides = vec![];
    for index in kernel.body.iter().filter_map(Instr::index) {
        strides.extend(index.strides.iter().map(|s| *s as i64));
        strides.push(index.offset as i64);
    }
    let out_bytes: usize = outs.iter().map(|b| b.len() * b.dtype().size()).sum();
    // What the launch touches, for the cache model: each buffer's first byte and length.
    let touched: Vec<residency::Range> = inputs
        .iter()
        .map(|b| &**b)
        .chain(outs.iter())
        .map(|b| (b.as_ptr() as usize, b.len() * b.dtype().size()))
        .collect();
    let stream = out_bytes >= streams.min && !residency::cached(&touched, streams.share);
    residency::touched(&touched);
    let (entry, scratch) = match streaming {
        Some(variant) if stream && streaming_enabled() && streams_aligned(kernel, &bufs) => {
            match variant.code.get_or_init(|| compiled_streaming(kernel)) {
                Ok(streams) => {
                    #[cfg(test)]
                    STREAMED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    (streams.entry, variant.scratch)
                }
                Err(_) => (code.entry, plain_scratch),
            }
        }
        Some(_) | None => (code.entry, plain_scratch),
    };
    let l = Launch {
        entry,
        scratch,
        bufs,
        sizes: kernel.shape.iter().map(|s| *s as i64).collect(),
        strides,
    };
    let rows = if kept == 0 { 1 } else { kernel.shape[0] };
    let total: usize = kernel.shape.iter().product();
    // Rows of dim 0 may run in parallel only when every store (of every output) moves along it.
    let disjoint = kept > 0
        && kernel.body.iter().all(|i| {
            if let Instr::Store { index, .. } = i {
                index.strides[0] != 0
            } else {
                true
            }
        });
    let threads = cpu()
        .pool
        .as_ref()
        .map_or_else(rayon::current_num_threads, |p| p.current_num_threads());
    let tasks = (total / GRAIN).min(rows).min(threads * 4);
    if !disjoint || tasks <= 1 {
        launch(&l, 0, rows as i64);
        return Ok(outs);
    }
    // A column reduction along dim 0 splits into whole blocks of its widest column code
    // where there are enough for every thread (the last task takes what is left).
    let unit = code
        .column_rows
        .filter(|&w| rows / w >= threads)
        .unwrap_or(1);
    let units = rows / unit;
    let tasks = tasks.min(units);
    let run = || {
        rayon::scope(|s| {
            for t in 0..tasks {
                let begin = units * t / tasks * unit;
                let end = if t + 1 == tasks {
                    rows
                } else {
                    units * (t + 1) / tasks * unit
                };
                let l = &l;
                s.spawn(move |_| launch(l, begin as i64, end as i64));
            }
        })
    };
    let t1 = std::time::Instant::now();
    match &cpu().pool {
        Some(pool) => pool.install(run),
        None => run(),
    }
    if timing {
        eprintln!(
            "cpu: {} output {:.3} ms, run {:.3} ms on {tasks} tasks",
            kernel.name,
            (t1 - t0).as_secs_f64() * 1e3,
            t1.elapsed().as_secs_f64() * 1e3
        );
    }
    Ok(outs)
}
