//! Random tensors as lazy kernels (`frontend/src/random.rs`, `ir/src/random.rs`): seeded
//! reproducibility, the same bits on every backend, fusion and thread count, the CUDA
//! prelude's draws equal to Rust's (compiled for the host), statistics on 10⁶ draws, the
//! in-place samplers through views, and the errors.

use smelt::TensorIndex::Slice;
use smelt::{DType, ErrorKind, Generator, Mode, Target, Tensor, realize_with};
use smelt_ir::random::{self, RandomDist};
use std::process::Command;

/// Every float dtype's bits of `t`, as u64s (NaN payloads and signed zeros kept).
fn bits(t: &Tensor) -> Vec<u64> {
    t.to_scalars()
        .iter()
        .map(|s| match t.dtype() {
            DType::F64 => s.as_f64().to_bits(),
            DType::F32 | DType::F16 | DType::BF16 => u64::from((s.as_f64() as f32).to_bits()),
            DType::Bool | DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => {
                s.as_i64() as u64
            }
            DType::C64 | DType::C128 => unreachable!("random tensors are real"),
        })
        .collect()
}

fn values(t: &Tensor) -> Vec<f64> {
    t.to_scalars().iter().map(|s| s.as_f64()).collect()
}

// ---- the definition, across backends ------------------------------------------------------

/// The CUDA prelude's `random.cuh`, compiled by the host's C++ compiler with contraction off
/// (as NVRTC compiles it with `--fmad=false`), draws exactly what `smelt_ir::random::draw` does
/// for every distribution and float dtype, including counters that carry into the high word.
#[test]
fn the_cuda_prelude_draws_the_same_bits_as_rust() {
    let dir = std::env::temp_dir().join(format!("smelt-random-prelude-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let source = dir.join("harness.cpp");
    std::fs::write(&source, HARNESS).expect("write harness");
    let exe = dir.join("harness");
    let include = concat!(env!("CARGO_MANIFEST_DIR"), "/codegen/src/cuda");
    let built = Command::new("c++")
        .args(["-std=c++17", "-O2", "-ffp-contract=off", "-I", include])
        .arg(&source)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("a C++ compiler (c++) is on PATH: Rust's own linking needs one");
    assert!(
        built.status.success(),
        "the harness compiles: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let columns: [(RandomDist, DType); 13] = [
        (RandomDist::Uniform, DType::F64),
        (RandomDist::Uniform, DType::F32),
        (RandomDist::Uniform, DType::F16),
        (RandomDist::Uniform, DType::BF16),
        (RandomDist::Normal, DType::F64),
        (RandomDist::Normal, DType::F32),
        (RandomDist::Normal, DType::F16),
        (RandomDist::Normal, DType::BF16),
        (RandomDist::Exponential, DType::F64),
        (RandomDist::Exponential, DType::F32),
        (RandomDist::Exponential, DType::F16),
        (RandomDist::Exponential, DType::BF16),
        (RandomDist::Bits, DType::I64),
    ];
    let mut checked = 0;
    for (seed, offset, n) in [
        (0i64, 0i64, 20_000i64),
        (-7, (1 << 32) - 5_000, 10_000),
        (0x1234_5678_9abc_def0, 987_654_321, 10_000),
    ] {
        let out = Command::new(&exe)
            .args([seed.to_string(), offset.to_string(), n.to_string()])
            .output()
            .expect("run the harness");
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).expect("ascii");
        let mut lines = 0;
        for (p, line) in text.lines().enumerate() {
            let got: Vec<u64> = line
                .split(' ')
                .map(|w| u64::from_str_radix(w, 16).expect("hex"))
                .collect();
            assert_eq!(got.len(), columns.len());
            for ((dist, dtype), got) in columns.iter().zip(got) {
                let want = random::draw(*dist, *dtype, seed, offset, p as i64);
                assert_eq!(
                    got,
                    want,
                    "{} {dtype} seed {seed} offset {offset} position {p}",
                    dist.name()
                );
                checked += 1;
            }
            lines += 1;
        }
        assert_eq!(lines, n);
    }
    assert_eq!(checked, 13 * 40_000);
    let _ = std::fs::remove_dir_all(&dir);
}

const HARNESS: &str = r#"
#define __device__
#define __forceinline__ inline
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
static inline float sm_round_f16(float x) { return (float)(_Float16)x; }
static inline float sm_round_bf16(float f) {
  unsigned u; std::memcpy(&u, &f, 4);
  u = ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16) << 16;
  float r; std::memcpy(&r, &u, 4); return r;
}
#include "random.cuh"
static unsigned b32(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const long long s = std::strtoll(argv[1], 0, 10), o = std::strtoll(argv[2], 0, 10);
  const long long n = std::strtoll(argv[3], 0, 10);
  for (long long p = 0; p < n; ++p) {
    std::printf("%llx %x %x %x %llx %x %x %x %llx %x %x %x %llx\n",
      sm_bits_of(sm_random_uniform_f64(s, o, p)), b32(sm_random_uniform_f32(s, o, p)),
      b32(sm_random_uniform_f16(s, o, p)), b32(sm_random_uniform_bf16(s, o, p)),
      sm_bits_of(sm_random_normal_f64(s, o, p)), b32(sm_random_normal_f32(s, o, p)),
      b32(sm_random_normal_f16(s, o, p)), b32(sm_random_normal_bf16(s, o, p)),
      sm_bits_of(sm_random_exponential_f64(s, o, p)), b32(sm_random_exponential_f32(s, o, p)),
      b32(sm_random_exponential_f16(s, o, p)), b32(sm_random_exponential_bf16(s, o, p)),
      (unsigned long long)sm_random_bits(s, o, p));
  }
  return 0;
}
"#;

/// A program mixing every draw with views, broadcasts, reductions and layouts; built afresh
/// from one seed each call.
fn program(seed: u64) -> Vec<Tensor> {
    let mut g = Generator::new(seed);
    let mut outs = vec![];
    for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
        let u = g.rand(&[37, 29], Some(dtype));
        let z = g.randn(&[37, 29], Some(dtype));
        // A transposed consumer, a broadcast and a reduction over the draws.
        outs.push(u.t().contiguous() * 2.0);
        outs.push(&z + &u.sum_keepdim(1));
        outs.push(z.abs().mean_dim(0));
    }
    let e = Tensor::empty(&[5, 300], Some(DType::F32));
    e.exponential_(2.0);
    outs.push(e);
    outs.push(g.randint(-50, 50, &[1000]));
    outs.push(g.randperm(257));
    let d = g.randn(&[64, 33], Some(DType::F32));
    outs.push(d.dropout(0.3, true));
    // A draw beside a transposing read (a tiled walk), and in row reductions' SIMD passes.
    let x = g.randn(&[40, 36], Some(DType::F32));
    x.realize();
    outs.push(&x.t() + &g.rand(&[36, 40], None));
    for dtype in [DType::F32, DType::BF16] {
        let u = g.rand(&[33, 70], Some(dtype));
        outs.push(u.sum_dim(1));
        outs.push((&u * 2.0).amax_dim(1));
    }
    outs
}

/// Reference, cpu fused and cpu unfused runs of the same seeded program give the same bits.
#[test]
fn every_backend_and_mode_draws_the_same_bits() {
    let run = |mode: Mode, target: Target| -> Vec<Vec<u64>> {
        smelt::manual_seed(99);
        let outs = program(5);
        let refs: Vec<&Tensor> = outs.iter().collect();
        realize_with(&refs, mode, target)
            .unwrap_or_else(|e| panic!("{} {}: {e}", mode.name(), target.name()));
        outs.iter().map(bits).collect()
    };
    // The default generator is process-wide: keep the other tests of this binary out of it
    // while these three runs reseed and draw from it.
    let _guard = DEFAULT_GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let want = run(Mode::Unfused, Target::Reference);
    assert!(want.iter().all(|v| !v.is_empty()));
    for (mode, target) in [
        (Mode::Fused, Target::Cpu),
        (Mode::Unfused, Target::Cpu),
        (Mode::Fused, Target::Reference),
    ] {
        let got = run(mode, target);
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            let first = g.iter().zip(w).position(|(a, b)| a != b);
            assert!(
                g.len() == w.len() && first.is_none(),
                "{} {}: output {k} differs first at {first:?}: {:x?} vs {:x?}",
                mode.name(),
                target.name(),
                first.map(|i| g[i]),
                first.map(|i| w[i]),
            );
        }
    }
}

/// Every float draw in every float dtype, 97 × 259 of each, and normal draws summed and maxed
/// along rows: the cpu backend's inline SIMD draws (four f32 lanes, two f64 lanes) and their
/// scalar tails have the reference interpreter's bits, through every branch of the logarithm (mantissas either side of √2)
/// and every quadrant of the cosine many times over.
#[test]
fn simd_draws_have_the_reference_bits() {
    let draws = |target: Target| -> Vec<Vec<u64>> {
        let mut g = Generator::new(0x5eed_0042);
        let mut outs = vec![];
        for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
            outs.push(g.rand(&[97, 259], Some(dtype)));
            outs.push(g.randn(&[97, 259], Some(dtype)));
            let e = Tensor::empty(&[97, 259], Some(dtype));
            smelt::with_generator(&mut g, || e.exponential_(1.0));
            outs.push(e);
        }
        // Draws in a row reduction's SIMD passes.
        for dtype in [DType::F32, DType::F64] {
            outs.push(g.randn(&[33, 70], Some(dtype)).sum_dim(1));
            outs.push((g.randn(&[33, 70], Some(dtype)) * 2.0).amax_dim(1));
        }
        let refs: Vec<&Tensor> = outs.iter().collect();
        realize_with(&refs, Mode::Fused, target)
            .unwrap_or_else(|e| panic!("{}: {e}", target.name()));
        outs.iter().map(bits).collect()
    };
    let want = draws(Target::Reference);
    for (k, (got, want)) in draws(Target::Cpu).iter().zip(&want).enumerate() {
        let first = got.iter().zip(want).position(|(a, b)| a != b);
        assert!(
            got.len() == want.len() && first.is_none(),
            "output {k} (dtype {}, draw {}) differs first at {first:?}: {:x?} vs {:x?}",
            ["f32", "f64", "f16", "bf16", "row reductions"][(k / 3).min(4)],
            ["uniform", "normal", "exponential"][k % 3],
            first.map(|i| got[i]),
            first.map(|i| want[i]),
        );
    }
}

/// Tests that draw from the default generator take this lock.
static DEFAULT_GENERATOR: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The same draws with `SMELT_THREADS` = 1 and 2 (child processes of this test).
#[test]
fn draws_do_not_depend_on_the_thread_count() {
    let digest = || -> String {
        let _guard = DEFAULT_GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
        smelt::manual_seed(3);
        let mut g = Generator::new(17);
        let outs = [
            g.rand(&[1024, 1024], Some(DType::F32)).sum_dim(1),
            g.randn(&[300, 500], Some(DType::F64)),
            Tensor::randn(&[2048, 64], None)
                .dropout(0.5, true)
                .sum_dim(0),
        ];
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for t in &outs {
            for b in bits(t) {
                h = (h ^ b).wrapping_mul(0x100_0000_01b3);
            }
        }
        format!("DIGEST {h:x}")
    };
    if std::env::var_os("SMELT_RANDOM_CHILD").is_some() {
        println!("{}", digest());
        return;
    }
    let exe = std::env::current_exe().expect("test binary path");
    let run = |threads: &str| -> String {
        let out = Command::new(&exe)
            .args([
                "draws_do_not_depend_on_the_thread_count",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("SMELT_RANDOM_CHILD", "1")
            .env("SMELT_THREADS", threads)
            .output()
            .expect("child test process runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        stdout
            .lines()
            .find_map(|l| l.find("DIGEST ").map(|at| l[at..].to_string()))
            .expect("child printed its digest")
    };
    let one = run("1");
    assert_eq!(one, run("2"), "SMELT_THREADS=1 and =2 disagree");
    assert_eq!(one, digest(), "this process agrees");
}

// ---- the generator ------------------------------------------------------------------------

#[test]
fn seeded_generators_repeat_and_each_draw_advances() {
    let a = Generator::new(7).randn(&[16], None).to_vec::<f32>();
    let b = Generator::new(7).randn(&[16], None).to_vec::<f32>();
    assert_eq!(a, b);
    assert_ne!(a, Generator::new(8).randn(&[16], None).to_vec::<f32>());
    let mut g = Generator::new(7);
    let first = g.rand(&[10], None);
    assert_eq!(g.offset(), 10, "a draw of 10 elements uses 10 counters");
    let state = g.get_state();
    assert_eq!((state.dtype(), state.shape()), (DType::U8, &[16][..]));
    let second = g.rand(&[10], None).to_vec::<f32>();
    assert_ne!(first.to_vec::<f32>(), second);
    // Restoring the state repeats the second draw; the next one continues from there.
    g.set_state(&state);
    assert_eq!(g.rand(&[10], None).to_vec::<f32>(), second);
    // Counters are positions: the second draw is the tail of one draw of 20.
    let both = Generator::new(7).rand(&[20], None).to_vec::<f32>();
    assert_eq!(&both[10..], &second[..]);
    assert_eq!(g.initial_seed(), 7);
    let s = g.seed();
    assert_eq!((g.initial_seed(), g.offset()), (s, 0));
    assert!(s < 1 << 63);
}

#[test]
fn the_default_generator_is_seeded_by_manual_seed() {
    let _guard = DEFAULT_GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
    smelt::manual_seed(1234);
    assert_eq!(smelt::initial_seed(), 1234);
    let a = Tensor::rand(&[8], None).to_vec::<f32>();
    let state = smelt::get_rng_state();
    let b = Tensor::randn(&[8], Some(DType::F64)).to_vec::<f64>();
    smelt::manual_seed(1234);
    assert_eq!(Tensor::rand(&[8], None).to_vec::<f32>(), a);
    smelt::set_rng_state(&state);
    assert_eq!(Tensor::randn(&[8], Some(DType::F64)).to_vec::<f64>(), b);
    // The same draws as an explicit generator of that seed.
    assert_eq!(Generator::new(1234).rand(&[8], None).to_vec::<f32>(), a);
}

// ---- fusion -------------------------------------------------------------------------------

/// `x * (rand_like(x) < p) / (1 - p)` and `dropout` are one kernel that stores only its
/// result: the draw and the mask live in registers.
#[test]
fn dropout_is_one_kernel_that_never_stores_the_mask() {
    let x = Generator::new(1).randn(&[256, 128], None);
    x.realize();
    // Built in a function, so that no temporary of the expression outlives it (a tensor
    // still held is a requested output, which the kernel must store).
    let by_hand = |x: &Tensor| &(x * &x.rand_like(None).lt(0.75).to_dtype(DType::F32)) / 0.75;
    for y in [x.dropout(0.25, true), by_hand(&x)] {
        let plan = smelt::explain(&y);
        assert_eq!(plan.kernels.len(), 1, "{plan}");
        let k = &plan.kernels[0];
        assert_eq!(k.outputs.len(), 1, "{plan}");
        assert_eq!(k.ir.matches("store").count(), 1, "{}", k.ir);
        assert!(k.ir.contains("random_uniform"), "{}", k.ir);
        // Reads x and the 16-byte state, writes y.
        assert_eq!(k.bytes, 2 * 256 * 128 * 4 + 16, "{}", k.ir);
    }
    // Kept elements are x / 0.75, dropped ones 0, about a quarter of them.
    let (xs, ys) = (values(&x), values(&x.dropout(0.25, true)));
    let dropped = ys.iter().filter(|&&y| y == 0.0).count() as f64 / ys.len() as f64;
    assert!((dropped - 0.25).abs() < 0.01, "{dropped}");
    for (x, y) in xs.iter().zip(&ys) {
        assert!(
            *y == 0.0 || (y - x / 0.75).abs() <= 1e-6 * x.abs().max(1.0),
            "{x} {y}"
        );
    }
    // Out of training, and with p = 0, dropout is the identity.
    assert!(x.dropout(0.5, false).is_same(&x));
    assert_eq!(values(&x.dropout(0.0, true)), xs);
    assert!(values(&x.dropout(1.0, true)).iter().all(|&y| y == 0.0));
}

// ---- statistics ---------------------------------------------------------------------------

const N: usize = 1_000_000;

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    (
        mean,
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0),
    )
}

/// Means and variances of 10⁶ draws within five standard errors of the distribution's.
#[test]
fn a_million_draws_have_the_distributions_moments() {
    let mut g = Generator::new(2024);
    let se = |var: f64| 5.0 * (var / N as f64).sqrt();
    for dtype in [DType::F32, DType::F64] {
        let u = values(&g.rand(&[N], Some(dtype)));
        assert!(u.iter().all(|x| (0.0..1.0).contains(x)));
        let (m, v) = mean_var(&u);
        assert!((m - 0.5).abs() < se(1.0 / 12.0), "{dtype} uniform mean {m}");
        assert!(
            (v - 1.0 / 12.0).abs() < 0.001,
            "{dtype} uniform variance {v}"
        );
        let z = values(&g.randn(&[N], Some(dtype)));
        let (m, v) = mean_var(&z);
        assert!(m.abs() < se(1.0), "{dtype} normal mean {m}");
        assert!((v - 1.0).abs() < 0.01, "{dtype} normal variance {v}");
        // Tails: P(|z| > 3) = 0.0027.
        let tail = z.iter().filter(|x| x.abs() > 3.0).count() as f64 / N as f64;
        assert!((tail - 0.0027).abs() < 0.0004, "{dtype} normal tail {tail}");
        let e = Tensor::empty(&[N as i64], Some(dtype));
        e.exponential_(4.0);
        let e = values(&e);
        assert!(e.iter().all(|&x| x >= 0.0));
        let (m, v) = mean_var(&e);
        assert!(
            (m - 0.25).abs() < se(1.0 / 16.0),
            "{dtype} exponential mean {m}"
        );
        assert!(
            (v - 1.0 / 16.0).abs() < 0.002,
            "{dtype} exponential variance {v}"
        );
    }
    // f16 and bf16 uniforms: the dtype's mantissa, never 1.
    for (dtype, steps) in [(DType::F16, 2048.0), (DType::BF16, 256.0)] {
        let u = values(&g.rand(&[100_000], Some(dtype)));
        assert!(
            u.iter()
                .all(|x| (0.0..1.0).contains(x) && (x * steps).fract() == 0.0)
        );
        let (m, _) = mean_var(&u);
        assert!((m - 0.5 + 0.5 / steps).abs() < 0.005, "{dtype} mean {m}");
    }
    // Shifted and scaled in place.
    let n = Tensor::empty(&[N as i64], Some(DType::F64));
    n.normal_(3.0, 2.0);
    let (m, v) = mean_var(&values(&n));
    assert!(
        (m - 3.0).abs() < se(4.0) && (v - 4.0).abs() < 0.04,
        "{m} {v}"
    );
    let u = Tensor::empty(&[N as i64], Some(DType::F32));
    u.uniform_(-2.0, 6.0);
    let u = values(&u);
    assert!(u.iter().all(|x| (-2.0..6.0).contains(x)));
    let (m, v) = mean_var(&u);
    assert!((m - 2.0).abs() < se(64.0 / 12.0) && (v - 64.0 / 12.0).abs() < 0.05);
}

/// `randint` over 10 values passes a chi-square test (9 degrees of freedom, p = 0.001: 27.88);
/// `bernoulli` hits its probabilities; `randperm` is a permutation.
#[test]
fn integers_are_uniform_and_permutations_are_permutations() {
    let mut g = Generator::new(77);
    let r = g.randint(-3, 7, &[N]).to_vec::<i64>();
    let mut counts = [0f64; 10];
    for x in &r {
        assert!((-3..7).contains(x));
        counts[(x + 3) as usize] += 1.0;
    }
    let expected = N as f64 / 10.0;
    let chi2: f64 = counts
        .iter()
        .map(|c| (c - expected).powi(2) / expected)
        .sum();
    assert!(chi2 < 27.88, "chi-square {chi2}: {counts:?}");
    // The same with a sparse top bit: a span that is not a power of two near 2^40.
    let wide = g.randint(0, 3 << 40, &[N]).to_vec::<i64>();
    let top = wide.iter().filter(|&&x| x >= 2 << 40).count() as f64 / N as f64;
    assert!((top - 1.0 / 3.0).abs() < 0.003, "{top}");

    for n in [0, 1, 2, 1000, 100_003] {
        let mut p = g.randperm(n).to_vec::<i64>();
        assert_eq!(p.len(), n as usize);
        let moved = p
            .iter()
            .enumerate()
            .filter(|(i, x)| *i as i64 != **x)
            .count();
        p.sort_unstable();
        assert!(
            p.iter().enumerate().all(|(i, x)| i as i64 == *x),
            "randperm({n})"
        );
        if n >= 1000 {
            assert!(
                moved as f64 > 0.99 * n as f64,
                "randperm({n}) moved {moved}"
            );
        }
    }

    let _guard = DEFAULT_GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let probs = Tensor::new([0.0f32, 0.2, 0.9, 1.0]).expand(&[N as i64 / 4, 4]);
    let b = values(&probs.bernoulli().mean_dim(0));
    for (got, want) in b.iter().zip([0.0, 0.2, 0.9, 1.0]) {
        assert!((got - want).abs() < 0.005, "bernoulli {got} vs {want}");
    }
    let t = Tensor::empty(&[N as i64], Some(DType::I32));
    t.bernoulli_(0.3);
    let v = values(&t);
    assert!(v.iter().all(|&x| x == 0.0 || x == 1.0));
    let (m, _) = mean_var(&v);
    assert!((m - 0.3).abs() < 0.003, "{m}");
}

// ---- in place, through views --------------------------------------------------------------

#[test]
fn in_place_samplers_write_through_views() {
    let _guard = DEFAULT_GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let base = Tensor::zeros(&[6, 8], None);
    // Columns 2..5 of every other row.
    let view = base.getitem(&[Slice(None, None, Some(2)), Slice(Some(2), Some(5), None)]);
    view.uniform_(10.0, 11.0);
    let got = base.to_vec::<f32>();
    for r in 0..6 {
        for c in 0..8 {
            let x = got[r * 8 + c];
            if r % 2 == 0 && (2..5).contains(&c) {
                assert!((10.0..11.0).contains(&x), "({r}, {c}) = {x}");
            } else {
                assert_eq!(x, 0.0, "({r}, {c}) untouched");
            }
        }
    }
    let ints = Tensor::zeros(&[4, 4], Some(DType::U8));
    ints.t().random_(0, None);
    ints.diagonal(0, 0, 1).random_(200, Some(203));
    let v = ints.to_vec::<u8>();
    assert!((0..4).all(|i| (200..203).contains(&v[i * 5])));
    let f = Tensor::zeros(&[1000], Some(DType::F16));
    f.random_(0, None);
    assert!(
        values(&f)
            .iter()
            .all(|&x| (0.0..=2048.0).contains(&x) && x.fract() == 0.0)
    );
}

// ---- errors -------------------------------------------------------------------------------

#[test]
fn bad_arguments_are_clear_errors() {
    let kind = |r: smelt::Result<Tensor>| r.expect_err("an error").kind;
    let msg = |r: smelt::Result<Tensor>| r.expect_err("an error").to_string();
    assert_eq!(
        kind(Tensor::try_rand(&[2], Some(DType::I64))),
        ErrorKind::DType
    );
    assert!(msg(Tensor::try_randn(&[2], Some(DType::Bool))).contains("randn"));
    assert_eq!(kind(Tensor::try_rand(&[-1], None)), ErrorKind::Value);
    assert!(
        msg(Tensor::try_randint(5, 5, &[3], None))
            .contains("expects 'from' to be less than 'to', but got from=5 >= to=5")
    );
    assert_eq!(kind(Tensor::try_randperm(-1)), ErrorKind::Value);
    let x = Tensor::zeros(&[3], None);
    assert!(
        msg(x.try_dropout(1.5, true))
            .contains("dropout probability has to be between 0 and 1, but got 1.5")
    );
    assert!(
        x.try_normal_(0.0, -1.0)
            .unwrap_err()
            .to_string()
            .contains("std >= 0.0")
    );
    assert!(
        x.try_uniform_(2.0, 1.0)
            .unwrap_err()
            .to_string()
            .contains("from=2 > to=1")
    );
    assert!(
        x.try_exponential_(0.0)
            .unwrap_err()
            .to_string()
            .contains("lambda > 0.0")
    );
    assert!(
        x.try_bernoulli_(1.5)
            .unwrap_err()
            .to_string()
            .contains("[0, 1]")
    );
    let i = Tensor::zeros(&[3], Some(DType::I64));
    assert_eq!(i.try_normal_(0.0, 1.0).unwrap_err().kind, ErrorKind::DType);
    assert_eq!(i.try_dropout(0.5, true).unwrap_err().kind, ErrorKind::DType);
    let u8s = Tensor::zeros(&[3], Some(DType::U8));
    assert!(
        u8s.try_random_(0, Some(300))
            .unwrap_err()
            .to_string()
            .contains("does not fit uint8")
    );
    // A failed in-place call leaves the tensor as it was.
    assert_eq!(x.to_vec::<f32>(), [0.0; 3]);
    let mut g = Generator::new(1);
    assert_eq!(
        g.try_set_state(&Tensor::zeros(&[16], None))
            .unwrap_err()
            .kind,
        ErrorKind::DType
    );
    assert_eq!(
        g.try_set_state(&Tensor::zeros(&[8], Some(DType::U8)))
            .unwrap_err()
            .kind,
        ErrorKind::Shape
    );
    assert_eq!(g, Generator::new(1), "a failed set_state changes nothing");
}
