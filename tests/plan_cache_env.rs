//! The realisation cache under the environment's configuration: `SMELT_DISABLE` is part of a
//! plan's key, `SMELT_DUMP` bypasses the cache, `SMELT_BACKEND` applies to every execution of
//! a cached plan, `SMELT_DEVICE` (the default device) makes tensors elsewhere whose plans are
//! the same, and `SMELT_CHECK=1` still compares a hit with the reference. One test in its own binary: it sets environment variables.

use smelt::prelude::*;
use smelt::{PlanCacheStats, plan_cache_stats};
use smelt_runtime::record::record_kernels;

/// Hits and misses on this thread while `f` runs.
fn counted<R>(f: impl FnOnce() -> R) -> (R, PlanCacheStats) {
    let before = plan_cache_stats();
    let r = f();
    let after = plan_cache_stats();
    let delta = PlanCacheStats {
        hits: after.hits - before.hits,
        misses: after.misses - before.misses,
    };
    (r, delta)
}

const HIT: PlanCacheStats = PlanCacheStats { hits: 1, misses: 0 };
const MISS: PlanCacheStats = PlanCacheStats { hits: 0, misses: 1 };
const BYPASS: PlanCacheStats = PlanCacheStats { hits: 0, misses: 0 };

fn set(name: &str, value: Option<&str>) {
    // SAFETY: this binary's only test sets them, on its one thread; smelt reads the
    // environment only while realizing, after this returns.
    unsafe {
        match value {
            Some(v) => std::env::set_var(name, v),
            None => std::env::remove_var(name),
        }
    }
}

/// A small fused program (3 ops: one kernel fused, several unfused) with constant `c`.
fn program(x: &Tensor, c: f64) -> Tensor {
    ((x * c) + 1.0).relu()
}

fn expected(c: f32) -> Vec<f32> {
    [1.0f32, -2.0, 3.0, -4.0]
        .iter()
        .map(|v| (v * c + 1.0).max(0.0))
        .collect()
}

#[test]
fn plan_cache_respects_environment_configuration() {
    let x = Tensor::new([1.0f32, -2.0, 3.0, -4.0]);
    let run = |c: f64| record_kernels(|| program(&x, c).to_vec::<f32>());

    // SMELT_DISABLE: another pipeline, another plan.
    let c = 1.25;
    assert_eq!(counted(|| run(c)).1, MISS);
    let ((v, fused), stats) = counted(|| run(c));
    assert_eq!((stats, v), (HIT, expected(c as f32)));
    set("SMELT_DISABLE", Some("fuse"));
    let ((v, unfused), stats) = counted(|| run(c));
    assert_eq!((stats, v), (MISS, expected(c as f32)));
    assert!(unfused.len() > fused.len(), "{unfused:?}");
    assert_eq!(counted(|| run(c).1.len()), (unfused.len(), HIT));
    set("SMELT_DISABLE", None);
    assert_eq!(counted(|| run(c).1.len()), (fused.len(), HIT));

    // SMELT_DUMP: the dumps show the passes at work, so such realisations bypass the cache.
    for dump in ["graph", "passes", "kernels"] {
        set("SMELT_DUMP", Some(dump));
        let ((v, _), stats) = counted(|| run(c));
        assert_eq!((stats, v), (BYPASS, expected(c as f32)), "{dump}");
    }
    set("SMELT_DUMP", None);

    // SMELT_BACKEND: a plan made on the reference interpreter compiles nothing; its hit on
    // the cpu backend compiles the kernel then.
    let c = 2.25;
    set("SMELT_BACKEND", Some("reference"));
    let compiled = smelt_runtime::cpu::cached_kernels();
    let ((v, _), stats) = counted(|| run(c));
    assert_eq!((stats, v), (MISS, expected(c as f32)));
    assert_eq!(smelt_runtime::cpu::cached_kernels(), compiled);
    set("SMELT_BACKEND", None);
    let ((v, _), stats) = counted(|| run(c));
    assert_eq!((stats, v), (HIT, expected(c as f32)));
    assert_eq!(smelt_runtime::cpu::cached_kernels(), compiled + 1);

    // SMELT_CHECK: a hit is still compared with the one-kernel-per-op reference run (whose
    // kernels are recorded too).
    set("SMELT_CHECK", Some("1"));
    let ((v, checked), stats) = counted(|| run(c));
    assert_eq!((stats, v), (HIT, expected(c as f32)));
    assert_eq!(checked.len(), fused.len() + unfused.len());
    set("SMELT_CHECK", None);

    // SMELT_DEVICE sets the default device where new tensors are made (read once per
    // thread): a thread started with `cuda` puts host data there. Its plan is the host's plan
    // (nothing in a plan depends on the device): with a GPU it is a hit; without one, making
    // the tensor is a device error and nothing is realised.
    set("SMELT_DEVICE", Some("cuda"));
    let c2 = c;
    let (made, stats) = std::thread::spawn(move || {
        let x = Tensor::try_new([1.0f32, -2.0, 3.0, -4.0]);
        counted(|| x.map(|x| program(&x, c2).to_vec::<f32>()))
    })
    .join()
    .unwrap();
    set("SMELT_DEVICE", None);
    match (smelt_runtime::cuda::device_count(), made) {
        (0, Err(e)) => {
            assert_eq!(e.kind, ErrorKind::Device, "{e}");
            assert_eq!(stats, BYPASS);
        }
        (0, Ok(_)) => panic!("made a tensor on cuda without a device"),
        (_, r) => {
            let v = r.unwrap_or_else(|e| panic!("cuda realisation failed: {e}"));
            assert_eq!(stats, HIT);
            assert_eq!(v, expected(c as f32));
        }
    }
    // An unknown device name leaves the host as the default (`smelt info` says why).
    set("SMELT_DEVICE", Some("tpu"));
    let device = std::thread::spawn(smelt::get_default_device)
        .join()
        .unwrap();
    set("SMELT_DEVICE", None);
    assert_eq!(device, Device::Cpu);
}
