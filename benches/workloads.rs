//! `cargo bench --bench workloads`: the WORKLOADS.md list through criterion, fused and unfused on
//! the cpu backend. Each result is checked against the reference backend before it is timed (a
//! fast wrong answer panics). Throughput is the ideal bytes (the matmul: its floating-point
//! operations, shown as elem/s, beside the GEMM crate alone on the same shapes). Then `tiny_ops`
//! (elem/s = lazy ops per second) and a realisation served from the kernel cache. Last, the
//! `dtypes` group: the same small elementwise programs in f32, f64, i32, i64, f16 and bf16 (the
//! SIMD loop of each dtype), and a softmax over rows in the float dtypes, on [512, 512] inputs
//! that stay in cache. `mixed` group: elementwise programs of two dtypes (type promotion,
//! casts, a mask of one lane width selecting values of another) on the same [512, 512].
//!
//! Short by default (10 samples, 1 s warm-up, 3 s of measurement each); `-- --quick` is shorter,
//! and criterion's flags (`--sample-size`, `--measurement-time`, a name filter) override.

use criterion::{BatchSize, Bencher, Criterion, Throughput, criterion_group, criterion_main};
use smelt::{DType, Mode};
use smelt::{Generator, Tensor};
use smelt_harness::{measure, workloads};
use std::time::Duration;

/// Panics with the reason when the cpu backend's answer is wrong: no timing for it.
fn checked(what: &str, result: Result<(), String>) {
    if let Err(why) = result {
        panic!(
            "{what}: the cpu backend's result differs from the reference backend, not timing it: {why}"
        );
    }
}

/// Times realisations of `make()` on the cpu backend in `mode`; building the graph and dropping
/// the result stay outside the timing.
fn time_realisation(b: &mut Bencher, mode: Mode, make: &dyn Fn() -> Tensor) {
    b.iter_batched(
        make,
        |y| {
            measure::realize_cpu(&y, mode).unwrap_or_else(|e| panic!("realisation failed: {e}"));
            y
        },
        BatchSize::PerIteration,
    );
}

fn bench_workloads(c: &mut Criterion) {
    for &name in workloads::NAMES {
        let inputs = workloads::inputs(name, 1).expect("a WORKLOADS.md workload");
        let program = || measure::program(name, &inputs).unwrap_or_else(|e| panic!("{e}"));
        let mut group = c.benchmark_group(name);
        let throughput = workloads::ideal_bytes(name, &inputs, &program())
            .map(Throughput::Bytes)
            .or_else(|| workloads::flops(name, &inputs).map(Throughput::Elements));
        if let Some(t) = throughput {
            group.throughput(t);
        }
        for mode in [Mode::Fused, Mode::Unfused] {
            let mut is_checked = false;
            group.bench_function(mode.name(), |b| {
                // Inside the routine, so a benchmark the name filter skips is not checked either.
                if !is_checked {
                    checked(
                        &format!("{name} ({})", mode.name()),
                        measure::check(name, mode, &inputs),
                    );
                    is_checked = true;
                }
                time_realisation(b, mode, &program);
            });
        }
        if name == "matmul_bias_relu" {
            let mut gemm = measure::gemm_alone_for(&inputs).unwrap_or_else(|e| panic!("{e}"));
            let mut is_checked = false;
            group.bench_function("gemm_alone", |b| {
                if !is_checked {
                    checked("gemm_alone", gemm.check());
                    is_checked = true;
                }
                b.iter(|| gemm.run());
            });
        }
        group.finish();
    }
}

fn bench_overhead(c: &mut Criterion) {
    let mut group = c.benchmark_group("overhead");
    // The same 10-op chain every time: after the first, its kernel comes from the cache.
    let x = measure::chain_input();
    let chain = || measure::op_chain(&x, 1.0);
    checked(
        "cached_realisation",
        measure::check_with(
            &|i: &[Tensor]| Ok(measure::op_chain(&i[0], 1.0)),
            std::slice::from_ref(&x),
            Mode::Fused,
        ),
    );
    group.bench_function("cached_realisation", |b| {
        time_realisation(b, Mode::Fused, &chain)
    });
    let x0 = measure::tiny_input();
    let tiny = || measure::tiny_chain(&x0);
    checked(
        "tiny_ops",
        measure::check_with(
            &|i: &[Tensor]| Ok(measure::tiny_chain(&i[0])),
            std::slice::from_ref(&x0),
            Mode::Fused,
        ),
    );
    group.throughput(Throughput::Elements(measure::TINY_OPS as u64));
    // Recording the ops is the point here: time it together with the realisation.
    group.bench_function("tiny_ops", |b| {
        b.iter(|| {
            let y = tiny();
            measure::realize_cpu(&y, Mode::Fused).unwrap_or_else(|e| panic!("{e}"));
            y
        })
    });
    group.finish();
}

/// Elementwise programs per vector dtype: a fused chain with relu and maximum, a compare to
/// bool, and a select on a bool input.
fn bench_dtypes(c: &mut Criterion) {
    let mut group = c.benchmark_group("dtypes");
    let n = 512;
    group.throughput(Throughput::Elements((n * n) as u64));
    for dtype in [
        DType::F32,
        DType::F64,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::BF16,
    ] {
        let mut g = Generator::new(7);
        let mut input = || {
            let t = (g.randn(&[n, n], Some(DType::F32)) * 100.0).to_dtype(dtype);
            t.realize();
            t
        };
        let (a, b, c) = (input(), input(), input());
        let m = a.gt(&b);
        m.realize();
        let chain = || {
            let y = (&a * &b + &c).relu();
            let y = if dtype.is_float() { y * 2.0 } else { y * 2i64 };
            (y - &a).maximum(&b)
        };
        let compare = || a.lt(&b);
        let select = || Tensor::r#where(&m, &a, &b);
        // A row reduction with prologue and epilogue, in the float dtypes, on standard normal
        // values (a's spread of 100 would make most exponentials subnormal, a slow path of
        // the hardware rather than of the kernel).
        let x = g.randn(&[n, n], Some(DType::F32)).to_dtype(dtype);
        x.realize();
        let softmax = || x.softmax(1, None);
        let mut programs: Vec<(&str, &dyn Fn() -> Tensor)> =
            vec![("chain", &chain), ("compare", &compare), ("where", &select)];
        if dtype.is_float() {
            programs.push(("softmax", &softmax));
        }
        for (name, make) in programs {
            let id = format!("{}/{name}", dtype.name());
            checked(
                &id,
                measure::check_with(&|_: &[Tensor]| Ok(make()), &[], Mode::Fused),
            );
            group.bench_function(&id, |b| time_realisation(b, Mode::Fused, make));
        }
    }
    group.finish();
}

fn bench_mixed(c: &mut Criterion) {
    let mut group = c.benchmark_group("mixed");
    let n = 512;
    group.throughput(Throughput::Elements((n * n) as u64));
    let mut g = Generator::new(11);
    let mut input = |dtype: DType| {
        let t = g.randn(&[n, n], Some(dtype));
        t.realize();
        t
    };
    let (a, b) = (input(DType::F32), input(DType::F64));
    let i = (input(DType::F32) * 100.0).to_dtype(DType::I32);
    let l = (input(DType::F32) * 100.0).to_dtype(DType::I64);
    i.realize();
    l.realize();
    let promote = || &a + &b;
    let exp_to_f64 = || a.exp().to_dtype(DType::F64);
    let scale_i32 = || &i * 0.5;
    let select = || Tensor::r#where(&l.lt(0i64), &a, &b);
    let programs: [(&str, &dyn Fn() -> Tensor); 4] = [
        ("f32+f64", &promote),
        ("exp(f32).to(f64)", &exp_to_f64),
        ("i32*0.5", &scale_i32),
        ("where(i64<0,f32,f64)", &select),
    ];
    for (name, make) in programs {
        checked(
            name,
            measure::check_with(&|_: &[Tensor]| Ok(make()), &[], Mode::Fused),
        );
        group.bench_function(name, |b| time_realisation(b, Mode::Fused, make));
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_workloads, bench_overhead, bench_dtypes, bench_mixed
}
criterion_main!(benches);
