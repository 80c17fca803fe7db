//! What `smelt bench`, `cargo bench` (`benches/workloads.rs`) and `smelt demo` share: a workload
//! realized on the cpu backend (or the CUDA device its inputs are on) and checked against the
//! reference backend before anything is timed (a fast wrong answer is a failure), the "GEMM crate alone" baseline, and the small
//! chains behind `tiny_ops`, `compile_latency` and the cached-realisation benchmark.

use crate::workloads;
use smelt_frontend::{DType, Device, Mode, Target, Tensor, realize_with, with_default_device};
use std::time::{Duration, Instant};

/// The median of some timings (the upper one of the middle two for an even count).
pub fn median(mut v: Vec<Duration>) -> Duration {
    assert!(!v.is_empty(), "median of no timings");
    v.sort();
    v[v.len() / 2]
}

/// The lazy result of workload `name` on `inputs`: a fresh graph, nothing run yet.
pub fn program(name: &str, inputs: &[Tensor]) -> Result<Tensor, String> {
    workloads::program(name, inputs).ok_or_else(|| format!("unknown workload {name}"))
}

/// The target a benchmark runs `y` on: the cpu backend for host tensors (whatever
/// `SMELT_BACKEND` says), else the device's.
pub fn bench_target(y: &Tensor) -> Target {
    match y.device() {
        Device::Cpu => Target::Cpu,
        Device::Cuda(n) => Target::Cuda(n),
    }
}

/// Realizes `y` in `mode` on its benchmark target ([`bench_target`]).
pub fn realize_cpu(y: &Tensor, mode: Mode) -> Result<(), String> {
    realize_with(&[y], mode, bench_target(y)).map_err(|e| e.to_string())
}

/// `Ok` when `got` matches `want` within float tolerance (NaN matches NaN); otherwise the first
/// element that differs. float16/bfloat16 results compare within the conformance suite's
/// bfloat16 tolerance (about two ulps): an inline transcendental within 3 f32 ulps of the
/// reference's may round a half-precision value the other way, and a product then carries it.
pub fn compare(got: &Tensor, want: &Tensor) -> Result<(), String> {
    compare_within(got, want, false)
}

/// [`compare`]; with `residual`, a half-precision result may also differ by two ulps of its
/// largest magnitude: a block that adds rounded terms of that size (a transformer's residual
/// stream) leaves a value near zero with their rounding (a full-size bfloat16 `gpt_block`
/// differs from the reference in one element of 1.5M by 0.0156, two ulps of 1).
pub fn compare_within(got: &Tensor, want: &Tensor, residual: bool) -> Result<(), String> {
    if got.shape() != want.shape() {
        return Err(format!("shape {:?} vs {:?}", got.shape(), want.shape()));
    }
    let half = matches!(want.dtype(), DType::BF16 | DType::F16);
    let (g, w) = (got.to_vec::<f32>(), want.to_vec::<f32>());
    let (mut atol, rtol): (f32, f32) = if half { (1e-2, 1.6e-2) } else { (1e-5, 1e-4) };
    if half && residual {
        let largest = w.iter().fold(0f32, |m, y| m.max(y.abs()));
        let mantissa = if want.dtype() == DType::BF16 { 7 } else { 10 };
        let ulp = 2f32.powi(largest.max(f32::MIN_POSITIVE).log2().floor() as i32 - mantissa);
        atol = atol.max(2.0 * ulp);
    }
    for (i, (x, y)) in g.iter().zip(&w).enumerate() {
        let ok = x == y || x.is_nan() && y.is_nan() || (x - y).abs() <= atol + rtol * y.abs();
        if !ok {
            return Err(format!("element {i}: cpu {x} vs reference {y}"));
        }
    }
    Ok(())
}

/// Builds `make(inputs)` on the inputs' device and realizes it in `mode` on its benchmark
/// target, builds `make` again on host copies of the inputs and realizes it on the reference
/// backend (the kernel IR interpreter, the oracle), and compares them.
pub fn check_with(
    make: &dyn Fn(&[Tensor]) -> Result<Tensor, String>,
    inputs: &[Tensor],
    mode: Mode,
) -> Result<(), String> {
    check_against(make, make, inputs, mode, false)
}

/// [`check_with`] comparing `make`'s result with another program's, `oracle`, on the
/// reference backend (a sparse product against the dense product); `residual` as in
/// [`compare_within`].
pub fn check_against(
    make: &dyn Fn(&[Tensor]) -> Result<Tensor, String>,
    oracle: &dyn Fn(&[Tensor]) -> Result<Tensor, String>,
    inputs: &[Tensor],
    mode: Mode,
    residual: bool,
) -> Result<(), String> {
    let got = make(inputs)?;
    realize_cpu(&got, mode)?;
    let host = inputs
        .iter()
        .map(|t| t.try_to(Device::Cpu))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let want = with_default_device(Device::Cpu, || oracle(&host))?;
    realize_with(&[&want], Mode::Fused, Target::Reference).map_err(|e| e.to_string())?;
    compare_within(&got, &want, residual)
}

/// Checks workload `name` in `mode` against the reference backend (see [`check_with`]), or
/// against its oracle program there when it has one (`workloads::oracle`).
pub fn check(name: &str, mode: Mode, inputs: &[Tensor]) -> Result<(), String> {
    let make = |inputs: &[Tensor]| program(name, inputs);
    if workloads::oracle(name, inputs).is_some() {
        let oracle = |inputs: &[Tensor]| {
            workloads::oracle(name, inputs).ok_or_else(|| format!("no oracle for {name}"))
        };
        return check_against(&make, &oracle, inputs, mode, false);
    }
    // The transformer block's output is its residual stream (see `compare_within`).
    let residual = name.starts_with("gpt_block");
    check_against(&make, &make, inputs, mode, residual)
}

/// How long realizing `y` in `mode` takes: host time on the host; on a CUDA device, the device
/// time between two events around the realisation's launches.
pub fn time_realisation(y: &Tensor, mode: Mode) -> Result<Duration, String> {
    match y.device() {
        Device::Cpu => {
            let t = Instant::now();
            realize_cpu(y, mode)?;
            Ok(t.elapsed())
        }
        Device::Cuda(n) => {
            let dev = smelt_runtime::cuda::backend(n).map_err(|e| e.to_string())?;
            let ((), ms) = dev
                .time(|| realize_with(&[y], mode, bench_target(y)))
                .map_err(|e| e.to_string())?;
            Ok(Duration::from_secs_f64(ms / 1e3))
        }
    }
}

/// One realisation of workload `name` in `mode` on its inputs' device. Only the realisation
/// is timed: building the graph and dropping the result are not.
pub fn time_once(name: &str, mode: Mode, inputs: &[Tensor]) -> Result<Duration, String> {
    let y = program(name, inputs)?;
    time_realisation(&y, mode)
}

/// One realisation of workload `name` in each of `modes`, in order, each after `before`.
fn time_modes_once(
    name: &str,
    modes: &[Mode],
    inputs: &[Tensor],
    before: &mut dyn FnMut(),
) -> Result<Vec<Duration>, String> {
    modes
        .iter()
        .map(|&mode| {
            before();
            time_once(name, mode, inputs)
        })
        .collect()
}

/// The median of `reps` realisations of workload `name` in each of `modes`, interleaved (each
/// repetition runs every mode once, starting with a different one each time), so that a
/// machine whose speed drifts moves every mode's time alike and their ratio stays honest.
pub fn time_interleaved(
    name: &str,
    modes: &[Mode],
    inputs: &[Tensor],
    reps: usize,
) -> Result<Vec<Duration>, String> {
    time_interleaved_with(name, modes, inputs, reps, &mut || {}, &mut || {})
}

/// [`time_interleaved`], running `before` before each timed realisation and `after` after
/// each repetition (`smelt bench` empties the caches and measures the bandwidth there).
pub fn time_interleaved_with(
    name: &str,
    modes: &[Mode],
    inputs: &[Tensor],
    reps: usize,
    before: &mut dyn FnMut(),
    after: &mut dyn FnMut(),
) -> Result<Vec<Duration>, String> {
    let mut times = vec![Vec::with_capacity(reps); modes.len()];
    for rep in 0..reps.max(1) {
        // Each repetition starts with the next mode: no mode always runs first after `after`
        // (a triad on other threads) or last, where the machine may treat it differently.
        let order: Vec<usize> = (0..modes.len()).map(|k| (rep + k) % modes.len()).collect();
        let ordered: Vec<Mode> = order.iter().map(|&k| modes[k]).collect();
        for (&k, t) in order
            .iter()
            .zip(time_modes_once(name, &ordered, inputs, before)?)
        {
            times[k].push(t);
        }
        after();
    }
    Ok(times.into_iter().map(median).collect())
}

/// The GEMM crate alone on `matmul_bias_relu`'s shapes: the `gemm` call the runtime's matmul
/// makes for contiguous row-major f32 operands, with the same threading (rayon's global pool,
/// as the runtime uses for products this big), into a preallocated output. No bias, no relu,
/// no graph: the yardstick the workload's fused time is compared with.
#[derive(Debug)]
pub struct GemmAlone {
    a: Vec<f32>,
    b: Vec<f32>,
    out: Vec<f32>,
    m: usize,
    k: usize,
    n: usize,
    /// `a` and `b` as tensors, for the check against smelt's reference realisation.
    tensors: (Tensor, Tensor),
}

impl GemmAlone {
    /// The baseline for `a @ b`, both 2-D float32.
    pub fn new(a: &Tensor, b: &Tensor) -> Result<GemmAlone, String> {
        let (sa, sb) = (a.shape(), b.shape());
        if sa.len() != 2 || sb.len() != 2 || sa[1] != sb[0] {
            return Err(format!(
                "gemm baseline needs [m,k] @ [k,n], got {sa:?} @ {sb:?}"
            ));
        }
        let (m, k, n) = (sa[0], sa[1], sb[1]);
        Ok(GemmAlone {
            a: a.to_vec::<f32>(),
            b: b.to_vec::<f32>(),
            out: vec![0.0; m * n],
            m,
            k,
            n,
            tensors: (a.clone(), b.clone()),
        })
    }

    /// Floating-point operations of one product (a multiply and an add per term).
    pub fn flops(&self) -> u64 {
        2 * (self.m * self.k * self.n) as u64
    }

    /// One product into the preallocated output.
    pub fn run(&mut self) {
        let (m, k, n) = (self.m, self.k, self.n);
        // SAFETY: `a` holds m·k, `b` k·n and `out` m·n elements (built so in `new`), each
        // row-major with the row strides passed and column stride 1, so every address gemm
        // forms lies inside its slice; `out` is a distinct allocation written by this call only.
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                self.out.as_mut_ptr(),
                1,
                n as isize,
                false,
                self.a.as_ptr(),
                1,
                k as isize,
                self.b.as_ptr(),
                1,
                n as isize,
                0.0f32,
                1.0f32,
                false,
                false,
                false,
                gemm::Parallelism::Rayon(0),
            );
        }
    }

    /// Runs the product once and compares it with smelt's `a.matmul(b)` realized on the
    /// reference backend.
    pub fn check(&mut self) -> Result<(), String> {
        self.run();
        let want = self.tensors.0.matmul(&self.tensors.1);
        realize_with(&[&want], Mode::Fused, Target::Reference).map_err(|e| e.to_string())?;
        let got = Tensor::from_vec(self.out.clone(), &[self.m, self.n]);
        compare(&got, &want).map_err(|e| format!("gemm alone: {e}"))
    }

    /// The median of `reps` products.
    pub fn time(&mut self, reps: usize) -> Duration {
        let times = (0..reps.max(1))
            .map(|_| {
                let t = Instant::now();
                self.run();
                t.elapsed()
            })
            .collect();
        median(times)
    }
}

/// The GEMM baseline for workload `matmul_bias_relu`'s inputs `[A, B, bias]`.
pub fn gemm_alone_for(inputs: &[Tensor]) -> Result<GemmAlone, String> {
    match inputs {
        [a, b, _bias] => GemmAlone::new(a, b),
        _ => Err("matmul_bias_relu takes A, B and bias".into()),
    }
}

/// Steps of the `tiny_ops` chain; each step records two lazy ops.
pub const TINY_STEPS: usize = 1000;
/// Lazy ops the `tiny_ops` chain records.
pub const TINY_OPS: usize = 2 * TINY_STEPS;

/// `tiny_ops`: `x = x*1.0001 + 0.5` [`TINY_STEPS`] times (nothing runs).
pub fn tiny_chain(x0: &Tensor) -> Tensor {
    let mut x = x0.clone();
    for _ in 0..TINY_STEPS {
        x = &x * 1.0001 + 0.5;
    }
    x
}

/// The input of the `tiny_ops` chain: a `[16]` float32 tensor.
pub fn tiny_input() -> Tensor {
    Tensor::new([0.5f32; 16])
}

/// A 10-op elementwise chain on `x` whose constants are scaled by `salt`: a `salt` no earlier
/// chain used makes a kernel the cache has not seen (`compile_latency`); the same `salt` again
/// realizes from the cache (the cached-realisation benchmark).
pub fn op_chain(x: &Tensor, salt: f64) -> Tensor {
    let mut y = x.clone();
    for i in 0..10 {
        y = match i % 3 {
            0 => &y * (1.25 * salt),
            1 => &y + salt,
            _ => y.relu(),
        };
    }
    y
}

/// The input of [`op_chain`]: a `[1024]` float32 tensor.
pub fn chain_input() -> Tensor {
    Tensor::new([1.5f32; 1024])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_finds_the_first_wrong_element() {
        let a = Tensor::new([1.0f32, 2.0, f32::NAN]);
        assert_eq!(compare(&a, &Tensor::new([1.0f32, 2.0, f32::NAN])), Ok(()));
        let err = compare(&a, &Tensor::new([1.0f32, 2.5, f32::NAN])).unwrap_err();
        assert!(err.contains("element 1"), "{err}");
        let err = compare(&a, &Tensor::new([1.0f32, 2.0])).unwrap_err();
        assert!(err.contains("shape"), "{err}");
    }

    #[test]
    fn a_residual_half_result_may_differ_by_two_ulps_of_its_largest_value() {
        let bf16 = |v: [f32; 2]| Tensor::new(v).to_dtype(DType::BF16);
        let want = bf16([1.5, 0.09375]);
        let near = bf16([1.5, 0.078125]);
        assert!(compare(&near, &want).unwrap_err().contains("element 1"));
        assert_eq!(compare_within(&near, &want, true), Ok(()));
        // Four ulps of 1.5 is too far even so.
        let far = bf16([1.5, 0.0625 - 0.00048828125]);
        assert!(compare_within(&far, &want, true).is_err());
        // float32 results keep their tolerance.
        let want = Tensor::new([1.5f32, 0.09375]);
        assert!(compare_within(&Tensor::new([1.5f32, 0.078125]), &want, true).is_err());
    }

    #[test]
    fn every_workload_checks_against_the_reference_in_both_modes() {
        for name in workloads::NAMES {
            let inputs = workloads::inputs(name, 64).expect("known workload");
            for mode in [Mode::Fused, Mode::Unfused] {
                assert_eq!(check(name, mode, &inputs), Ok(()), "{name} {}", mode.name());
            }
        }
        assert!(check("nope", Mode::Fused, &[]).is_err());
    }

    #[test]
    fn gemm_alone_computes_the_workloads_product() {
        let inputs = workloads::inputs("matmul_bias_relu", 32).expect("known workload");
        let mut gemm = gemm_alone_for(&inputs).expect("2-D operands");
        assert_eq!(gemm.flops(), 2 * 32 * 32 * 32);
        assert_eq!(gemm.check(), Ok(()));
        assert!(gemm_alone_for(&inputs[..1]).is_err());
        assert!(GemmAlone::new(&inputs[0], &inputs[2]).is_err());
    }

    #[test]
    fn the_overhead_chains_check_against_the_reference() {
        let x0 = tiny_input();
        let tiny = |i: &[Tensor]| Ok(tiny_chain(&i[0]));
        assert_eq!(check_with(&tiny, &[x0], Mode::Fused), Ok(()));
        let x = chain_input();
        let chain = |i: &[Tensor]| Ok(op_chain(&i[0], 1.0));
        assert_eq!(check_with(&chain, &[x], Mode::Unfused), Ok(()));
    }
}
