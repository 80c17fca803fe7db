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
            return Err(format!("element {i}: {x} vs reference {y}"));
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
    check_against(make, make, inputs, mode, Rule::Elementwise)
}

/// How a benchmark's result is compared with the reference backend's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Every element within tolerance ([`compare`]).
    Elementwise,
    /// A program whose sums a GEMM orders (cuBLAS's blocking, the GEMM crate's): every element
    /// within tolerance ([`compare_within`], `residual` for a transformer block), or else
    /// torch.compile's accuracy rule (`torch._dynamo.utils.same` given a float64 reference):
    /// the result's RMS error against the program run in float64 on the reference backend at
    /// most `k` times the reference backend's own plus `tol / 10` (`k` 2 for float32 and 3 for
    /// float16/bfloat16, `tol` 1e-4 and 1e-2). Summed in another order, a few elements of
    /// 1.5M can land a rounding apart where the reference's land; a wrong kernel moves the
    /// error of a whole row or more, which the RMS error shows.
    Accumulated {
        /// A transformer block's residual stream ([`compare_within`]).
        residual: bool,
    },
}

/// [`check_with`] comparing `make`'s result with another program's, `oracle`, on the
/// reference backend (a sparse product against the dense product), by `rule`.
pub fn check_against(
    make: &dyn Fn(&[Tensor]) -> Result<Tensor, String>,
    oracle: &dyn Fn(&[Tensor]) -> Result<Tensor, String>,
    inputs: &[Tensor],
    mode: Mode,
    rule: Rule,
) -> Result<(), String> {
    let got = make(inputs)?;
    realize_cpu(&got, mode)?;
    let host = inputs
        .iter()
        .map(|t| t.try_to(Device::Cpu))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let on_reference = |inputs: &[Tensor]| {
        let y = with_default_device(Device::Cpu, || oracle(inputs))?;
        realize_with(&[&y], Mode::Fused, Target::Reference).map_err(|e| e.to_string())?;
        Ok::<_, String>(y)
    };
    let want = on_reference(&host)?;
    let Rule::Accumulated { residual } = rule else {
        return compare(&got, &want);
    };
    let Err(first) = compare_within(&got, &want, residual) else {
        return Ok(());
    };
    let wide = host
        .iter()
        .map(|t| match t.dtype().is_float() {
            true => t.try_to_dtype(DType::F64, false).map_err(|e| e.to_string()),
            false => Ok(t.clone()),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let exact = on_reference(&wide)?.to_vec::<f64>();
    let rms_error = |t: &Tensor| {
        let v = t.to_vec::<f64>();
        let sq: f64 = v.iter().zip(&exact).map(|(a, b)| (a - b) * (a - b)).sum();
        (sq / exact.len().max(1) as f64).sqrt()
    };
    let (error, reference) = (rms_error(&got), rms_error(&want));
    let half = matches!(want.dtype(), DType::F16 | DType::BF16);
    let (k, tol) = if half { (3.0, 1e-2) } else { (2.0, 1e-4) };
    if error <= k * reference + tol / 10.0 {
        Ok(())
    } else {
        Err(format!(
            "{first}; RMS error against float64 {error:.3e}, the reference's {reference:.3e} \
             (allowed {k} times it + {:.0e})",
            tol / 10.0
        ))
    }
}

/// Checks workload `name` in `mode` against the reference backend (see [`check_with`]), or
/// against its oracle program there when it has one (`workloads::oracle`). The rows with a
/// matrix product compare by [`Rule::Accumulated`].
pub fn check(name: &str, mode: Mode, inputs: &[Tensor]) -> Result<(), String> {
    let make = |inputs: &[Tensor]| program(name, inputs);
    let rule = match name {
        "matmul_bias_relu" => Rule::Accumulated { residual: false },
        // The transformer block's output is its residual stream (see `compare_within`).
        _ if name.starts_with("gpt_block") => Rule::Accumulated { residual: true },
        _ => Rule::Elementwise,
    };
    if workloads::oracle(name, inputs).is_some() {
        let oracle = |inputs: &[Tensor]| {
            workloads::oracle(name, inputs).ok_or_else(|| format!("no oracle for {name}"))
        };
        return check_against(&make, &oracle, inputs, mode, rule);
    }
    check_against(&make, &make, inputs, mode, rule)
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
    fn an_accumulated_result_is_judged_by_its_error_against_float64() {
        let inputs = workloads::inputs("matmul_bias_relu", 4).expect("known workload");
        let n = inputs[0].shape()[0];
        let product = |i: &[Tensor]| Ok(i[0].matmul(&i[1]));
        // The element nearest zero, moved by 2e-3 (the elementwise rule allows about 1e-5 +
        // 1e-4·|y| there): one element of 65536, an RMS error of 8e-6.
        let y = product(&inputs).unwrap().to_vec::<f32>();
        let at = (0..y.len())
            .min_by(|&i, &j| y[i].abs().total_cmp(&y[j].abs()))
            .unwrap();
        let mut one = vec![0f32; n * n];
        one[at] = 2e-3;
        let bump = Tensor::from_vec(one, &[n, n]);
        let bumped = |i: &[Tensor]| Ok(&i[0].matmul(&i[1]) + &bump);
        let accumulated = Rule::Accumulated { residual: false };
        let err = check_against(&bumped, &product, &inputs, Mode::Fused, Rule::Elementwise);
        assert!(err.unwrap_err().contains(&format!("element {at}")));
        assert_eq!(
            check_against(&bumped, &product, &inputs, Mode::Fused, accumulated),
            Ok(())
        );
        // A wrong row is no rounding: its RMS error is far above the reference's.
        let row = Tensor::from_vec(
            (0..n * n).map(|i| if i < n { 0.25 } else { 0.0 }).collect(),
            &[n, n],
        );
        let wrong = |i: &[Tensor]| Ok(&i[0].matmul(&i[1]) + &row);
        let err = check_against(&wrong, &product, &inputs, Mode::Fused, accumulated);
        assert!(err.unwrap_err().contains("RMS error against float64"));
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
