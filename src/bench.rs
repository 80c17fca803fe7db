//! `smelt bench`: the WORKLOADS.md list timed fused and unfused on the cpu backend, each result
//! checked against the reference backend first; `smelt bench bandwidth`: STREAM copy, triad
//! and read; the `tiny_ops` and `compile_latency` reports; `matmul_bias_relu` beside the GEMM
//! crate alone, `spmm` beside the same program on `to_dense()`.
//! The measuring itself lives in `smelt_harness::measure`, shared with `cargo bench` and the demo.

use smelt::Device;
use smelt::Mode;
use smelt::Tensor;
use smelt_harness::measure;
use smelt_harness::workloads;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// STREAM-style arrays far larger than the caches (128 MiB of f32 each), allocated once, and
/// the copy, read and triad kernels over them on every core.
struct Stream {
    a: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
    chunk: usize,
}

impl Stream {
    const N: usize = 1 << 25;

    fn new() -> Stream {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        Stream {
            a: vec![1.0f32; Stream::N],
            b: vec![2.0f32; Stream::N],
            c: vec![3.0f32; Stream::N],
            chunk: Stream::N.div_ceil(threads),
        }
    }

    /// One copy `a = b`: GB/s (bytes read + written, no write-allocate traffic counted).
    fn copy(&mut self) -> f64 {
        let t = Instant::now();
        std::thread::scope(|s| {
            for (dst, src) in self.a.chunks_mut(self.chunk).zip(self.b.chunks(self.chunk)) {
                s.spawn(move || dst.copy_from_slice(src));
            }
        });
        let t = t.elapsed();
        std::hint::black_box(&self.a);
        gb(2 * 4 * Stream::N, t)
    }

    /// One read of `b` and `c` (every element, nothing stored, prefetching ahead as smelt's
    /// kernels do): GB/s. The limit of a workload that only reads, like `sum_sq_diff`.
    fn read(&self) -> f64 {
        let t = Instant::now();
        std::thread::scope(|s| {
            for (x, y) in self.b.chunks(self.chunk).zip(self.c.chunks(self.chunk)) {
                s.spawn(move || {
                    let mut acc = 0u32;
                    let ahead = prefetch_distance();
                    for (i, (x16, y16)) in x.chunks(LINE).zip(y.chunks(LINE)).enumerate() {
                        prefetch_ahead(x, i * LINE, ahead);
                        prefetch_ahead(y, i * LINE, ahead);
                        for (a, b) in x16.iter().zip(y16) {
                            acc = acc.wrapping_add(a.to_bits() ^ b.to_bits());
                        }
                    }
                    std::hint::black_box(acc)
                });
            }
        });
        gb(2 * 4 * Stream::N, t.elapsed())
    }

    /// One triad `a = b + 3c`, prefetching ahead of `b` and `c` as smelt's kernels do, where
    /// they do (on the Intel Xeon it was measured on, the triad was about 6 % slower without,
    /// and a kernel could show more than 100 % of it; on the AMD EPYC neither prefetches):
    /// GB/s, counted as [`Stream::copy`] counts.
    fn triad(&mut self) -> f64 {
        self.triad_with(|dst, x, y| {
            let lines = dst.chunks_mut(LINE).zip(x.chunks(LINE)).zip(y.chunks(LINE));
            let ahead = prefetch_distance();
            for (i, ((d16, x16), y16)) in lines.enumerate() {
                prefetch_ahead(x, i * LINE, ahead);
                prefetch_ahead(y, i * LINE, ahead);
                for ((d, a), b) in d16.iter_mut().zip(x16).zip(y16) {
                    *d = a + 3.0 * b;
                }
            }
        })
    }

    /// [`Stream::triad`] with streaming stores (`movntps`, as smelt's kernels write outputs of
    /// 16 MiB or more: `codegen/src/cpu/stream.rs`), which skip the read of each written line:
    /// GB/s, counted the same way. The limit of such a kernel; `% bw` stays against the
    /// ordinary triad.
    fn triad_streaming(&mut self) -> f64 {
        self.triad_with(stream_triad)
    }

    /// `a = b + 3c` by `kernel` on each thread's chunk: GB/s, counted as [`Stream::copy`]
    /// counts.
    fn triad_with(&mut self, kernel: fn(&mut [f32], &[f32], &[f32])) -> f64 {
        let t = Instant::now();
        std::thread::scope(|s| {
            for ((dst, x), y) in self
                .a
                .chunks_mut(self.chunk)
                .zip(self.b.chunks(self.chunk))
                .zip(self.c.chunks(self.chunk))
            {
                s.spawn(move || kernel(dst, x, y));
            }
        });
        let t = t.elapsed();
        std::hint::black_box(&self.a);
        gb(3 * 4 * Stream::N, t)
    }
}

/// `dst = x + 3y` with streaming stores of 16-byte aligned groups of four (plain stores before
/// the first and after the last), prefetching ahead of `x` and `y`.
fn stream_triad(dst: &mut [f32], x: &[f32], y: &[f32]) {
    let n = dst.len().min(x.len()).min(y.len());
    let head = dst.as_ptr().align_offset(16).min(n);
    let body = head + (n - head) / LINE * LINE;
    for i in (0..head).chain(body..n) {
        dst[i] = x[i] + 3.0 * y[i];
    }
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_add_ps, _mm_loadu_ps, _mm_mul_ps, _mm_set1_ps};
        use std::arch::x86_64::{_mm_sfence, _mm_stream_ps};
        let ahead = prefetch_distance();
        for i in (head..body).step_by(LINE) {
            prefetch_ahead(x, i, ahead);
            prefetch_ahead(y, i, ahead);
            for k in (i..i + LINE).step_by(4) {
                // SAFETY: SSE is part of every x86_64 target; `k + 4 <= body <= n` bounds every
                // access by the three slices' lengths, and `dst[k]` is 16-byte aligned (`head`
                // aligns it, and `k − head` is a multiple of four).
                unsafe {
                    let v = _mm_add_ps(
                        _mm_loadu_ps(x.as_ptr().add(k)),
                        _mm_mul_ps(_mm_set1_ps(3.0), _mm_loadu_ps(y.as_ptr().add(k))),
                    );
                    _mm_stream_ps(dst.as_mut_ptr().add(k), v);
                }
            }
        }
        // SAFETY: a fence has no operands; it orders the streaming stores above.
        unsafe { _mm_sfence() };
    }
    #[cfg(not(target_arch = "x86_64"))]
    for i in head..body {
        dst[i] = x[i] + 3.0 * y[i];
    }
}

/// f32 elements in a cache line.
const LINE: usize = 16;

/// How far ahead of their streamed loads smelt's kernels prefetch, in f32 elements
/// (`codegen/src/cpu/prefetch.rs`: 2 KiB, or none on AMD CPUs), read once per loop.
fn prefetch_distance() -> usize {
    smelt_codegen::cpu::host::tuning().prefetch_ahead as usize / 4
}

/// Asks for the cache line `ahead` elements past element `at` of `v` (into every cache level),
/// as smelt's kernels prefetch ahead of their streamed loads; nothing when `ahead` is 0. The
/// address may lie past the end of `v`: a prefetch reads nothing and never faults.
#[inline(always)]
fn prefetch_ahead(v: &[f32], at: usize, ahead: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        if ahead == 0 {
            return;
        }
        let p = v.as_ptr().wrapping_add(at + ahead).cast::<i8>();
        // SAFETY: SSE is part of every x86_64 target, and a prefetch dereferences nothing
        // (any address is allowed; it never faults).
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (v, at, ahead);
}

/// Empties every cache level of the workloads' data between timed repetitions: a clean read
/// (no stores, so nothing dirty is left to write back during the next repetition) of a tensor
/// twice the size of the last-level cache. Without it, a workload whose data fits in a large
/// last-level cache (this machine's L3 is 260 MiB) is timed reading the cache its previous
/// repetition filled, against a DRAM bandwidth limit.
///
/// The read is a smelt sum, so it runs on the runtime's own worker threads, like the kernels
/// timed next. Read from threads of its own, it left the workers asleep meanwhile, and their
/// wake-up on this virtual machine made the next repetition up to 1.5× slower and noisier
/// (`sum_sq_diff`: 9.6–13.4 ms against 7.6–7.8 read on the workers, and 7.7–8.4 for the
/// hand-written C, whose OpenMP threads flush and compute alike).
struct Flush {
    data: Tensor,
}

impl Flush {
    fn new() -> Flush {
        let bytes = (2 * last_level_cache_bytes()).clamp(64 << 20, 1 << 30);
        // Ones, written once: every page is backed (a zeroed allocation could read one shared
        // page and evict nothing).
        let data = Tensor::ones(&[(bytes / 4) as i64], Some(smelt::DType::F32));
        data.realize();
        Flush { data }
    }

    fn run(&self) {
        self.data.sum(&[0][..], false, None).realize();
    }
}

/// The largest cache's size from sysfs (64 MiB when it cannot be read).
fn last_level_cache_bytes() -> usize {
    let parse = |text: &str| {
        let text = text.trim();
        let (digits, unit) = match text.strip_suffix('K') {
            Some(d) => (d, 1 << 10),
            None => match text.strip_suffix('M') {
                Some(d) => (d, 1 << 20),
                None => (text, 1),
            },
        };
        digits.parse::<usize>().ok().map(|n| n * unit)
    };
    (0..8)
        .filter_map(|i| {
            std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu0/cache/index{i}/size"))
                .ok()
                .and_then(|t| parse(&t))
        })
        .max()
        .unwrap_or(64 << 20)
}

fn gb(bytes: usize, t: Duration) -> f64 {
    bytes as f64 / t.as_secs_f64() / 1e9
}

/// The best of five runs of `f` (GB/s).
fn best_of_five(f: &mut dyn FnMut() -> f64) -> f64 {
    (0..5).map(|_| f()).fold(0.0, f64::max)
}

/// STREAM-style copy and triad on every core: GB/s of the best of five runs each.
fn bandwidth(stream: &mut Stream) -> (f64, f64) {
    let copy = best_of_five(&mut || stream.copy());
    let triad = best_of_five(&mut || stream.triad());
    (copy, triad)
}

/// `tiny_ops`: the median time to record the 1000-step chain on a [16] tensor and realize it
/// (checked against the reference first), and the kernels it runs.
fn tiny_ops() -> Result<(Duration, usize), String> {
    let x0 = measure::tiny_input();
    let tiny = |i: &[Tensor]| Ok(measure::tiny_chain(&i[0]));
    measure::check_with(&tiny, std::slice::from_ref(&x0), Mode::Fused)?;
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
    let chain = |i: &[Tensor]| Ok(measure::op_chain(&i[0], salt));
    measure::check_with(&chain, std::slice::from_ref(&x), Mode::Fused)?;
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
    let device = DEVICE_LABEL.with(|d| d.borrow().clone());
    format!(
        "{{\"workload\":\"{name}\",\"mode\":\"{mode}\",\"device\":\"{device}\",\"median_ms\":{ms:.3},\"gbps\":{gbps},\"limit_gbps\":{triad:.2},\"kernels\":{kernels}{extra}}}"
    )
}

thread_local! {
    /// What the rows' `"device"` says: `cpu`, or `cuda:0 NVIDIA H200` (set by [`run`]).
    static DEVICE_LABEL: std::cell::RefCell<String> = std::cell::RefCell::new("cpu".into());
}

/// The bandwidth limit rows are measured against: the host's STREAM triad, or a CUDA device's
/// device-to-device copy (bytes read plus written).
enum Limit {
    Host(Stream),
    Cuda(std::sync::Arc<smelt_runtime::cuda::CudaDevice>),
}

/// Bytes of each buffer of the device copy (1 GiB moved per copy, read plus written).
const DEVICE_COPY_BYTES: usize = 512 << 20;

impl Limit {
    /// One measurement of the limit, GB/s.
    fn measure(&mut self) -> f64 {
        match self {
            Limit::Host(stream) => stream.triad(),
            Limit::Cuda(dev) => dev.copy_bandwidth(DEVICE_COPY_BYTES).unwrap_or(0.0),
        }
    }
}

/// One measured row of the table.
struct Row {
    mode: &'static str,
    median: Duration,
    /// Host↔device copies during one realisation (device rows; 0 is the goal).
    transfers: Option<u64>,
    ideal_bytes: Option<u64>,
    kernels: usize,
    /// Floating-point operations of one run (matmul).
    flops: Option<u64>,
    /// Unfused time over fused time.
    speedup: Option<f64>,
    /// This row's time over the GEMM crate alone on the same shapes (matmul).
    vs_gemm: Option<f64>,
}

/// Checks workload `name` in `mode` against the reference backend; the row to time, without
/// its time yet.
fn checked_row(name: &str, mode: Mode, inputs: &[Tensor]) -> Result<Row, String> {
    // A fast wrong answer is a failure: check against the reference backend first.
    measure::check(name, mode, inputs)?;
    let out = measure::program(name, inputs)?;
    let kernels = smelt::explain_mode(&out, mode).kernels.len();
    let transfers = if out.device().is_cuda() {
        let before = smelt_runtime::transfers();
        measure::realize_cpu(&out, mode)?;
        Some(smelt_runtime::transfers().since(before).count())
    } else {
        None
    };
    Ok(Row {
        mode: mode.name(),
        median: Duration::ZERO,
        transfers,
        ideal_bytes: workloads::ideal_bytes(name, inputs, &out),
        kernels,
        flops: workloads::flops(name, inputs),
        speedup: None,
        vs_gemm: None,
    })
}

/// Untimed realisations of each mode before `--warm`'s timed ones: as many calls as `bench.py`
/// (the anchors' harness) makes before it times PyTorch or the hand C: a first call and three
/// warm-ups.
const WARM_UPS: usize = 4;

/// Times the rows of one workload: each repetition realizes every mode once (and the GEMM
/// crate alone once, for the matmul), each after a [`Flush`], then runs one STREAM triad.
/// Interleaved, the modes and the bandwidth limit are measured over the same seconds, so a
/// machine whose bandwidth drifts from one minute to the next moves them together: the fused
/// speed-up and the share of bandwidth compare like with like. Each row's time is its median;
/// the limit is the best of the workload's triads (STREAM's rule).
///
/// Without a flush (`--warm`), the repetitions run back to back, and the triads run three
/// before and three after them: a triad runs on threads of its own, and the runtime's workers,
/// asleep meanwhile, would start the next repetition late (see [`Flush`]). [`WARM_UPS`]
/// untimed repetitions follow the first triads.
#[allow(clippy::too_many_arguments)]
fn time_rows(
    name: &str,
    modes: &[Mode],
    inputs: &[Tensor],
    rows: &mut [Row],
    mut baseline: Option<&mut Baseline>,
    stream: &mut Limit,
    flush: Option<&Flush>,
    reps: usize,
) -> Result<f64, String> {
    let mut baseline_times = Vec::with_capacity(reps);
    let mut baseline_error = None;
    let mut triad: f64 = 0.0;
    let mut triads = |stream: &mut Limit, n: usize| {
        (0..n).for_each(|_| triad = triad.max(stream.measure()));
    };
    // Triads per repetition when each repetition starts with a flush; otherwise three
    // before the repetitions and three after.
    let (between, around) = if flush.is_some() { (1, 0) } else { (0, 3) };
    let cold = || flush.iter().for_each(|f| f.run());
    triads(stream, around);
    if flush.is_none() {
        // Back to back, as `bench.py` times PyTorch: its first call and three warm-ups come
        // between its triads and the timed calls, and so do these.
        measure::time_interleaved_with(name, modes, inputs, WARM_UPS, &mut || {}, &mut || {})?;
    }
    let times =
        measure::time_interleaved_with(name, modes, inputs, reps, &mut || cold(), &mut || {
            if let Some(b) = baseline.as_mut() {
                cold();
                match (b.run)() {
                    Ok(t) => baseline_times.push(t),
                    Err(why) => baseline_error = Some(why),
                }
            }
            triads(stream, between);
        })?;
    triads(stream, around);
    if let Some(why) = baseline_error {
        return Err(format!(
            "{}: {why}",
            baseline.map_or("baseline", |b| b.row.mode)
        ));
    }
    for (row, median) in rows.iter_mut().zip(times) {
        row.median = median;
    }
    if let Some(b) = baseline {
        b.row.median = measure::median(baseline_times);
    }
    Ok(triad)
}

/// A yardstick timed beside a workload's modes, once per repetition (after the flush the
/// modes get): the GEMM crate alone beside `matmul_bias_relu`, the same program on
/// `to_dense()` beside `spmm`.
struct Baseline {
    /// One timed run.
    run: Box<dyn FnMut() -> Result<Duration, String>>,
    row: Row,
}

/// The yardstick of workload `name`, checked, where it has one.
fn checked_baseline(name: &str, inputs: &[Tensor], host: bool) -> Option<Result<Baseline, String>> {
    match name {
        "matmul_bias_relu" if host => Some(checked_gemm(inputs).map(|(mut gemm, row)| Baseline {
            run: Box::new(move || {
                let t = Instant::now();
                gemm.run();
                Ok(t.elapsed())
            }),
            row,
        })),
        "spmm" => Some(checked_dense(name, inputs)),
        _ => None,
    }
}

/// `spmm`'s program on the dense form of its sparse operand, `(A.to_dense() @ B + bias).relu()`
/// fused, checked against the reference backend: the row the sparse kernel is compared with.
fn checked_dense(name: &str, inputs: &[Tensor]) -> Result<Baseline, String> {
    let oracle = |inputs: &[Tensor]| {
        workloads::oracle(name, inputs).ok_or_else(|| format!("no dense form of {name}"))
    };
    measure::check_with(&oracle, inputs, Mode::Fused)?;
    let out = oracle(inputs)?;
    let (m, k) = (inputs[0].shape()[0], inputs[0].shape()[1]);
    let row = Row {
        mode: "dense",
        median: Duration::ZERO,
        transfers: None,
        ideal_bytes: None,
        kernels: smelt::explain_mode(&out, Mode::Fused).kernels.len(),
        flops: Some(2 * (m * k * out.shape()[1]) as u64),
        speedup: None,
        vs_gemm: None,
    };
    let (name, inputs) = (name.to_string(), inputs.to_vec());
    Ok(Baseline {
        run: Box::new(move || {
            let y = workloads::oracle(&name, &inputs).ok_or("no dense form")?;
            measure::time_realisation(&y, Mode::Fused)
        }),
        row,
    })
}

/// The GEMM crate alone on `matmul_bias_relu`'s A and B, checked; the row to time.
fn checked_gemm(inputs: &[Tensor]) -> Result<(measure::GemmAlone, Row), String> {
    let mut gemm = measure::gemm_alone_for(inputs)?;
    gemm.check()?;
    let row = Row {
        mode: "gemm_alone",
        median: Duration::ZERO,
        transfers: None,
        ideal_bytes: None,
        kernels: 1,
        flops: Some(gemm.flops()),
        speedup: None,
        vs_gemm: None,
    };
    Ok((gemm, row))
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
        if let Some(t) = row.transfers {
            extra += &format!(",\"transfers\":{t}");
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
        (None, "dense") => note += ", to_dense() @ B fused; speed-up: its time over sparse fused",
        (None, _) => {}
    }
    if let Some(t) = row.transfers {
        note += &format!(
            "{}{t} host↔device copies",
            if note.is_empty() { "" } else { ", " }
        );
    }
    println!(
        "{name:<18} {:<10} {ms:>10.2} {g:>8} {pct:>7} {:>8} {sp:>9}  {note}",
        row.mode, row.kernels
    );
}

pub fn run(args: &[String]) -> ExitCode {
    let json = args.iter().any(|a| a == "--json");
    let warm = args.iter().any(|a| a == "--warm");
    let both = args.iter().any(|a| a == "--both");
    let modes: Vec<Mode> = if both {
        vec![Mode::Fused, Mode::Unfused]
    } else if args.iter().any(|a| a == "--unfused") {
        vec![Mode::Unfused]
    } else {
        vec![Mode::Fused]
    };
    let flag_value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
    };
    let value = |flag: &str| flag_value(flag).and_then(|n| n.parse::<usize>().ok());
    let reps = value("--reps").unwrap_or(7).max(1);
    let shrink = value("--shrink").unwrap_or(1).max(1);
    let device = match flag_value("--device").map(|d| Device::parse(d)) {
        Some(Ok(d)) => d,
        Some(Err(e)) => {
            eprintln!("smelt bench: {}", e.message);
            return ExitCode::from(2);
        }
        None => smelt::get_default_device(),
    };
    let flags_with_values = ["--reps", "--shrink", "--device"];
    let names: Vec<String> = args
        .iter()
        .enumerate()
        .filter(|(i, a)| {
            !a.starts_with('-')
                && a.parse::<usize>().is_err()
                && !(*i > 0 && flags_with_values.contains(&args[i - 1].as_str()))
        })
        .map(|(_, a)| a.clone())
        .collect();
    let mut stream = match device {
        Device::Cpu => Limit::Host(Stream::new()),
        Device::Cuda(n) => match smelt_runtime::cuda::backend(n) {
            Ok(dev) => {
                DEVICE_LABEL.with(|d| *d.borrow_mut() = dev.label());
                Limit::Cuda(dev)
            }
            Err(e) => {
                eprintln!("smelt bench --device {device}: {}", e.message);
                return ExitCode::FAILURE;
            }
        },
    };
    if args.iter().any(|a| a == "--serve") {
        return smelt::with_default_device(device, || serve(&names, modes[0], shrink));
    }
    smelt::with_default_device(device, || {
        run_on(&names, &modes, &mut stream, json, warm, reps, shrink)
    })
}

/// `smelt bench WORKLOAD --serve`: checks the workload once against the reference backend,
/// prints `ready`, then times one realisation (as a `--warm` repetition: no flush) for every
/// line read from standard input and prints its milliseconds, until the input ends. Another
/// program can so alternate single calls of its own with smelt's, call by call, over the same
/// seconds of a machine whose memory bandwidth drifts (`scripts/interleaved_row.py`).
fn serve(names: &[String], mode: Mode, shrink: usize) -> ExitCode {
    use std::io::{BufRead, Write};
    let [name] = names else {
        eprintln!("smelt bench --serve: name one workload");
        return ExitCode::from(2);
    };
    let Some(inputs) = workloads::inputs(name, shrink) else {
        eprintln!("smelt bench: unknown workload {name}");
        return ExitCode::from(2);
    };
    if let Err(why) = checked_row(name, mode, &inputs) {
        eprintln!("smelt bench: {name} ({}) FAILED: {why}", mode.name());
        return ExitCode::FAILURE;
    }
    let mut out = std::io::stdout().lock();
    let reply = |out: &mut std::io::StdoutLock, line: &str| {
        writeln!(out, "{line}").and_then(|()| out.flush()).is_ok()
    };
    if !reply(&mut out, "ready") {
        return ExitCode::FAILURE;
    }
    for line in std::io::stdin().lock().lines() {
        if line.is_err() {
            break;
        }
        let answer = match measure::time_once(name, mode, &inputs) {
            Ok(t) => format!("{:.4}", t.as_secs_f64() * 1e3),
            Err(why) => {
                eprintln!("smelt bench: {name} ({}) FAILED: {why}", mode.name());
                return ExitCode::FAILURE;
            }
        };
        if !reply(&mut out, &answer) {
            break;
        }
    }
    ExitCode::SUCCESS
}

/// The benchmark of `names` with every tensor made on the default device.
#[allow(clippy::too_many_arguments)]
fn run_on(
    names: &[String],
    modes: &[Mode],
    stream: &mut Limit,
    json: bool,
    warm: bool,
    reps: usize,
    shrink: usize,
) -> ExitCode {
    let (copy, triad) = match stream {
        Limit::Host(s) => bandwidth(s),
        Limit::Cuda(dev) => match dev.copy_bandwidth(DEVICE_COPY_BYTES) {
            Ok(b) => (b, b),
            Err(e) => {
                eprintln!("smelt bench: device copy failed: {}", e.message);
                return ExitCode::FAILURE;
            }
        },
    };
    if names.iter().any(|n| n == "bandwidth") {
        let Limit::Host(stream) = stream else {
            let label = DEVICE_LABEL.with(|d| d.borrow().clone());
            if json {
                println!("{{\"device\":\"{label}\",\"copy_gbps\":{copy:.2}}}");
            } else {
                println!(
                    "{label}: device-to-device copy {copy:.1} GB/s (bytes read plus written, \
                     {} MiB buffers, best of five)",
                    DEVICE_COPY_BYTES >> 20
                );
            }
            return ExitCode::SUCCESS;
        };
        let read = best_of_five(&mut || stream.read());
        let streaming = best_of_five(&mut || stream.triad_streaming());
        if json {
            println!(
                "{{\"copy_gbps\":{copy:.2},\"triad_gbps\":{triad:.2},\"read_gbps\":{read:.2},\"triad_streaming_gbps\":{streaming:.2}}}"
            );
        } else {
            println!(
                "STREAM copy {copy:.1} GB/s, triad {triad:.1} GB/s, read {read:.1} GB/s, triad with streaming stores {streaming:.1} GB/s (all threads)"
            );
        }
        return ExitCode::SUCCESS;
    }
    let names: Vec<String> = if names.is_empty() {
        workloads::NAMES.iter().map(|s| s.to_string()).collect()
    } else {
        names.to_vec()
    };
    if let (false, Limit::Cuda(dev)) = (json, &*stream) {
        println!(
            "{}: device time (CUDA events around each realisation), median of {reps} back to \
             back; % bw against the device-to-device copy ({triad:.1} GB/s at start)",
            dev.label()
        );
        println!(
            "{:<18} {:<10} {:>10} {:>8} {:>7} {:>8} {:>9}",
            "workload", "mode", "median ms", "GB/s", "% bw", "kernels", "speed-up"
        );
    }
    if let (false, Limit::Host(stream)) = (json, &mut *stream) {
        // Kernels writing 16 MiB or more stream their stores and can pass the ordinary triad.
        let streaming = best_of_five(&mut || stream.triad_streaming());
        println!(
            "cpu backend, median of {reps} {}; % bw against the best triad run among each workload's repetitions (at start: {triad:.1} GB/s; with streaming stores {streaming:.1})",
            if warm {
                "back to back (--warm)"
            } else {
                "with the caches emptied before each"
            }
        );
        println!(
            "{:<18} {:<10} {:>10} {:>8} {:>7} {:>8} {:>9}",
            "workload", "mode", "median ms", "GB/s", "% bw", "kernels", "speed-up"
        );
    }
    // Emptying the host's caches says nothing about a device's.
    let flush = (!warm && matches!(stream, Limit::Host(_))).then(Flush::new);
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
        // The GEMM crate alone on the same shapes, the yardstick of the matmul rows; the dense
        // product of `to_dense()`, the yardstick of the sparse one.
        let host = matches!(stream, Limit::Host(_));
        let mut baseline = match checked_baseline(name, &inputs, host) {
            Some(Ok(b)) => Some(b),
            Some(Err(why)) => {
                fail(name, "baseline", why);
                None
            }
            None => None,
        };
        let mut timed_modes = vec![];
        let mut rows = vec![];
        for &mode in modes {
            match checked_row(name, mode, &inputs) {
                Ok(row) => {
                    timed_modes.push(mode);
                    rows.push(row);
                }
                Err(why) => fail(name, mode.name(), why),
            }
        }
        let limit = match time_rows(
            name,
            &timed_modes,
            &inputs,
            &mut rows,
            baseline.as_mut(),
            stream,
            flush.as_ref(),
            reps,
        ) {
            Ok(limit) => limit,
            Err(why) => {
                fail(name, "timing", why);
                continue;
            }
        };
        let gemm_secs = baseline
            .as_ref()
            .filter(|b| b.row.mode == "gemm_alone")
            .map(|b| b.row.median.as_secs_f64());
        let fused = timed_modes
            .iter()
            .zip(&rows)
            .find(|(m, _)| **m == Mode::Fused)
            .map(|(_, r)| r.median.as_secs_f64());
        for (&mode, row) in timed_modes.iter().zip(&mut rows) {
            let secs = row.median.as_secs_f64();
            row.vs_gemm = gemm_secs.map(|g| secs / g);
            if mode == Mode::Unfused {
                row.speedup = fused.map(|f| secs / f);
            }
            print_row(name, row, json, limit);
        }
        if let Some(b) = &mut baseline {
            if b.row.mode == "dense" {
                b.row.speedup = fused.map(|f| b.row.median.as_secs_f64() / f);
            }
            print_row(name, &b.row, json, limit);
        }
    }
    if let (false, Limit::Cuda(dev)) = (json, &*stream) {
        let m = dev.memory();
        println!(
            "device memory: {} MiB held by the caching allocator, peak {} MiB in use, {} driver \
             allocations, {} reuses",
            m.held >> 20,
            m.peak_in_use >> 20,
            m.raw_allocations,
            m.reuses
        );
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::stream_triad;

    /// The streaming triad writes `x + 3y` everywhere, whatever the slices' alignment and
    /// length: the plain head and tail, the streamed body.
    #[test]
    fn streaming_triad_writes_every_element() {
        let x: Vec<f32> = (0..300).map(|i| i as f32).collect();
        let y: Vec<f32> = (0..300).map(|i| (i % 7) as f32 - 3.0).collect();
        for skip in 0..5 {
            for len in [0, 3, 16, 17, 100, 295 - skip] {
                let mut dst = vec![f32::NAN; 300];
                let (d, a, b) = (&mut dst[skip..skip + len], &x[skip..], &y[skip..]);
                stream_triad(d, &a[..len], &b[..len]);
                for i in 0..len {
                    assert_eq!(d[i], a[i] + 3.0 * b[i], "skip {skip} len {len} at {i}");
                }
            }
        }
    }
}
