//! The realisation cache: maps the structure of a pending graph to its optimised graph and
//! schedule, so that realising the same graph shape again (a training step, a loop body, a
//! benchmark repetition) skips the passes and the lowering and only executes.
//!
//! The key is the whole structure, not a digest of it: every node's op (constants by their
//! bits), dtype, buffer length and output view, every edge's producer and view, the requested
//! outputs, and the passes that are disabled. A hit compares keys in full, so two different
//! graphs can never share a plan. Data never enters the key: inputs are buffers passed at
//! execution. Source locations and notes are left out too: no pass or kernel depends on them,
//! and realisations that print them (`SMELT_DUMP=graph,passes,kernels`) bypass the cache.
//! Nothing in a plan depends on where it runs: each target keeps what it prepared (compiled,
//! loaded kernels) in its own slot of the plan's `Executable`; `SMELT_CHECK=1` compares every realisation, hit or miss, with the
//! reference run of the unoptimised graph.

use smelt_ir::graph::Op;
use smelt_ir::{Graph, LibraryOp, Scalar, View};
use smelt_runtime::Executable;
use std::cell::Cell;
use std::sync::{Arc, LazyLock, Mutex};

/// The structure of a pending graph and the pipeline configuration that optimises it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct PlanKey {
    /// Names of the disabled passes, sorted and without duplicates.
    pub disabled: Vec<String>,
    /// The graph, encoded by [`encode_op`], [`encode_view`] and the walk in `lazy.rs`.
    pub words: Vec<u64>,
}

/// What a realisation of a graph shape runs: its optimised graph IR and its schedule, with
/// what each target prepared for it (compiled and loaded kernels) at its first run there.
#[derive(Debug)]
pub(crate) struct Plan {
    pub graph: Graph,
    pub exec: Executable,
}

/// Plans kept at most; the oldest goes first.
const MAX_PLANS: usize = 256;
/// Keys longer than this (4 MiB: graphs of more than about 20 000 nodes) are not cached.
const MAX_KEY_WORDS: usize = 1 << 19;
/// Key words kept at most over all plans (16 MiB; their graphs and schedules are of similar
/// size).
const MAX_TOTAL_WORDS: usize = 1 << 21;

#[derive(Default)]
struct Plans {
    map: hashbrown::HashMap<PlanKey, (Arc<Plan>, u64)>,
    /// Insertion stamp of the next plan.
    next: u64,
    words: usize,
}

static PLANS: LazyLock<Mutex<Plans>> = LazyLock::new(Mutex::default);

thread_local! {
    static STATS: Cell<PlanCacheStats> = const { Cell::new(PlanCacheStats { hits: 0, misses: 0 }) };
}

/// Realisations on this thread that found their plan in the cache, or had to build it.
/// Realisations that bypass the cache (dumps) count as neither.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlanCacheStats {
    /// Realisations that reused a cached plan (no compilation).
    pub hits: u64,
    /// Realisations that built and compiled a plan.
    pub misses: u64,
}

/// This thread's realisation-cache counters (tests observe hits and misses through them).
pub fn plan_cache_stats() -> PlanCacheStats {
    STATS.with(Cell::get)
}

fn plans() -> std::sync::MutexGuard<'static, Plans> {
    PLANS.lock().unwrap_or_else(|p| p.into_inner())
}

/// The cached plan for `key` (a hit), or `None` (a miss, which the caller then builds and
/// caches with [`cache_plan`]).
pub(crate) fn cached_plan(key: &PlanKey) -> Option<Arc<Plan>> {
    let plan = plans().map.get(key).map(|(plan, _)| plan.clone());
    STATS.with(|s| {
        let mut stats = s.get();
        match plan {
            Some(_) => stats.hits += 1,
            None => stats.misses += 1,
        }
        s.set(stats)
    });
    plan
}

/// Caches `plan`, built after a miss, under `key`; returns it shared. (Built without the
/// lock: another thread may build the same plan meanwhile, and the later insert wins; both
/// are the same plan.)
pub(crate) fn cache_plan(key: PlanKey, plan: Plan) -> Arc<Plan> {
    let plan = Arc::new(plan);
    plans().insert(key, plan.clone());
    plan
}

impl Plans {
    /// Caches `plan` under `key`, evicting the oldest plans beyond the limits.
    fn insert(&mut self, key: PlanKey, plan: Arc<Plan>) {
        let size = key.words.len();
        if size > MAX_KEY_WORDS {
            return;
        }
        if self.map.remove(&key).is_some() {
            // Built by two threads at once: the later one replaces it.
            self.words -= size;
        }
        while self.map.len() >= MAX_PLANS || self.words + size > MAX_TOTAL_WORDS {
            let Some(oldest) = self
                .map
                .iter()
                .min_by_key(|(_, (_, stamp))| *stamp)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            self.map.remove(&oldest);
            self.words -= oldest.words.len();
        }
        self.map.insert(key, (plan, self.next));
        self.next += 1;
        self.words += size;
    }
}

/// A constant as its kind and bits, so that `-0.0` and `0.0` (equal as floats) and every NaN
/// payload stay distinct.
pub(crate) fn scalar_bits(value: Scalar) -> [u64; 3] {
    match value {
        Scalar::Bool(b) => [0, b as u64, 0],
        Scalar::Int(i) => [1, i as u64, 0],
        Scalar::Float(f) => [2, f.to_bits(), 0],
        Scalar::Complex(re, im) => [3, re.to_bits(), im.to_bits()],
    }
}

/// Appends an op to a key: one word, its tag in the low byte and its small fields above;
/// then the fields that need a word of their own (a slot, constant bits, reduced axes). The
/// tag says how many words follow, so the encoding stays injective.
pub(crate) fn encode_op(op: &Op, words: &mut Vec<u64>) {
    let small = |tag: u64, a: u64, b: u64| {
        debug_assert!(a >> 8 == 0, "an op's small field fits in a byte");
        tag | a << 8 | b << 16
    };
    match op {
        Op::Input { slot } => words.extend([0, *slot as u64]),
        Op::Fill { value } => {
            let [kind, bits, im] = scalar_bits(*value);
            words.extend([small(1, kind, 0), bits]);
            // Only a complex constant has a second part.
            if matches!(value, Scalar::Complex(..)) {
                words.push(im);
            }
        }
        Op::Unary { op, compute } => words.push(small(2, *op as u64, *compute as u64)),
        Op::Binary { op, compute } => words.push(small(3, *op as u64, *compute as u64)),
        Op::Where => words.push(4),
        Op::Cast => words.push(5),
        Op::Assign => words.push(6),
        Op::Reduce { op, axes } => words.extend([small(7, *op as u64, 0), *axes as u64]),
        Op::Library(lib) => {
            words.push(8);
            encode_library(lib, words);
        }
        Op::Random { dist } => words.push(small(9, dist.code() as u64, 0)),
        Op::Complex => words.push(10),
    }
}

fn encode_library(op: &LibraryOp, words: &mut Vec<u64>) {
    match op {
        LibraryOp::Matmul => words.push(0),
        LibraryOp::ArgMax { axes } => words.extend([1, *axes as u64]),
        LibraryOp::ArgMin { axes } => words.extend([2, *axes as u64]),
        LibraryOp::CumSum { dim } => words.extend([3, *dim as u64]),
        LibraryOp::CumProd { dim } => words.extend([4, *dim as u64]),
        LibraryOp::Sort {
            dim,
            descending,
            indices,
        } => words.extend([5, *dim as u64, *descending as u64, *indices as u64]),
        LibraryOp::Gather { dim } => words.extend([6, *dim as u64]),
        LibraryOp::IndexSelect { dim } => words.extend([7, *dim as u64]),
        LibraryOp::Take => words.push(8),
        LibraryOp::Index { indices } => words.extend([9, *indices as u64]),
        LibraryOp::IndexPut { indices } => words.extend([10, *indices as u64]),
        LibraryOp::Segment { first } => words.extend([11, *first as u64]),
        LibraryOp::SpMM => words.push(12),
        LibraryOp::MatmulAdd { relu } => words.extend([13, *relu as u64]),
    }
}

/// Appends a view to a key: a head word (rank, reading, the form of what follows, and
/// `source` from bit 24: an edge's producer, 0 for a node's own view), sizes and strides,
/// then the offset unless the head says it is 0. `source` must be below 2^40.
#[inline]
pub(crate) fn encode_view(view: &View, source: u64, words: &mut Vec<u64>) {
    // This runs for every edge of every walked node. A dim whose size fits in 32 bits and
    // stride in 32 signed bits takes one word (every view of an ordinary tensor): fewer words
    // to hash and compare on every cached realisation.
    debug_assert!(source >> 40 == 0, "an edge's source fits in 40 bits");
    let (shape, strides) = (&view.shape[..], &view.strides[..]);
    let read = view.read;
    let flags = read.parts as u64 | (read.conj as u64) << 2 | (read.neg as u64) << 3;
    let rank = shape.len();
    // The head says how many words follow (rank; one or two words a dim, bit 16; an offset
    // word, bit 17): injective.
    let head = rank as u64 | flags << 8 | source << 24;
    // The common case, rank ≤ 6 and every dim compact, is written into a stack array, all 8
    // words appended with one fixed-size copy and the list cut back to its length: no call
    // to `memcpy` and no loop of checked pushes. It is inlined into the walk; the rest is not.
    if rank <= 6 {
        let mut packed = [0u64; 8];
        let mut compact = true;
        for (slot, (&n, &s)) in packed[1..].iter_mut().zip(shape.iter().zip(strides)) {
            compact &= n >> 32 == 0 && s as i32 as isize == s;
            *slot = (n as u64) << 32 | u64::from(s as i32 as u32);
        }
        if compact {
            let offset = view.offset != 0;
            packed[0] = head | 1 << 16 | (offset as u64) << 17;
            packed[rank + 1] = view.offset as u64;
            let end = words.len() + rank + 1 + offset as usize;
            words.extend(packed);
            words.truncate(end);
            return;
        }
    }
    encode_view_in_full(view, head, words);
}

/// [`encode_view`] for a view of more than 6 dims or with a dim that needs two words.
#[cold]
#[inline(never)]
fn encode_view_in_full(view: &View, head: u64, words: &mut Vec<u64>) {
    let (shape, strides) = (&view.shape[..], &view.strides[..]);
    let compact = shape.iter().all(|&n| u32::try_from(n).is_ok())
        && strides.iter().all(|&s| i32::try_from(s).is_ok());
    words.reserve(2 * shape.len() + 2);
    words.push(head | (compact as u64) << 16 | 1 << 17);
    if compact {
        for (&n, &s) in shape.iter().zip(strides) {
            words.push((n as u64) << 32 | u64::from(s as i32 as u32));
        }
    } else {
        for (&n, &s) in shape.iter().zip(strides) {
            words.push(n as u64);
            words.push(s as u64);
        }
    }
    words.push(view.offset as u64);
}

#[cfg(test)]
mod tests {
    use super::{
        MAX_KEY_WORDS, MAX_PLANS, MAX_TOTAL_WORDS, Plan, PlanCacheStats, PlanKey, Plans,
        plan_cache_stats,
    };
    use crate::explain::Mode;
    use crate::{DType, Target, Tensor, realize, realize_with};
    use smelt_runtime::Executable;
    use std::sync::Arc;

    /// Views that differ in anything a kernel depends on encode differently, across the
    /// one-word and two-word dim forms and the boundaries between them.
    #[test]
    fn view_encodings_are_distinct() {
        use smelt_ir::View;
        let big = 1usize << 32;
        let mut conj = View::contiguous(&[16]);
        conj.read.conj = true;
        let views = [
            View::contiguous(&[]),
            View::contiguous(&[16]),
            View::new(vec![16], vec![-1], 15),
            View::new(vec![16], vec![0], 0),
            View::new(vec![16], vec![1], 1),
            conj,
            View::contiguous(&[4, 4]),
            View::new(vec![4, 4], vec![1, 4], 0),
            View::new(vec![big], vec![1], 0),
            View::new(vec![big - 1], vec![1], 0),
            View::new(vec![2], vec![i32::MAX as isize], 0),
            View::new(vec![2], vec![i32::MAX as isize + 1], 0),
            View::new(vec![2], vec![i32::MIN as isize], 0),
            View::new(vec![2], vec![i32::MIN as isize - 1], 0),
            View::new(vec![1, big], vec![big as isize, 1], 0),
        ];
        let keys: Vec<Vec<u64>> = views
            .iter()
            .map(|v| {
                let mut words = vec![];
                super::encode_view(v, 0, &mut words);
                words
            })
            .collect();
        for i in 0..keys.len() {
            for j in 0..i {
                assert_ne!(keys[i], keys[j], "{} and {}", views[i], views[j]);
            }
        }
    }

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

    fn data(n: usize, seed: f32) -> Vec<f32> {
        (0..n)
            .map(|i| (i as f32 * 0.37 + seed).sin() * 3.0)
            .collect()
    }

    /// `sum((x*c + 1).relu()^2, dim 1)` plus a transposed read: elementwise, reduction, view.
    /// Each test uses its own `c`, so tests running in parallel never share a plan.
    #[track_caller]
    fn program(x: &Tensor, c: f64) -> Tensor {
        let y = (x * c + 1.0).relu();
        (&y * &y).sum(&[1], false, None) + y.t().sum(&[0], false, None)
    }

    fn expected(x: &[f32], rows: usize, cols: usize, c: f32) -> Vec<f32> {
        (0..rows)
            .map(|r| {
                let y: Vec<f32> = (0..cols)
                    .map(|k| (x[r * cols + k] * c + 1.0).max(0.0))
                    .collect();
                y.iter().map(|v| v * v).sum::<f32>() + y.iter().sum::<f32>()
            })
            .collect()
    }

    fn assert_close(a: &[f32], b: &[f32]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= 1e-4 * y.abs().max(1.0), "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn the_cache_keeps_to_its_limits_evicting_the_oldest() {
        let key = |i: u64, words: usize| PlanKey {
            disabled: vec![],
            words: std::iter::once(i)
                .chain(std::iter::repeat_n(0, words - 1))
                .collect(),
        };
        let plan = || {
            Arc::new(Plan {
                graph: smelt_ir::Graph::new(),
                exec: Executable::new(smelt_ir::Schedule::default()),
            })
        };
        let mut plans = Plans::default();
        for i in 0..MAX_PLANS as u64 + 10 {
            plans.insert(key(i, 4), plan());
        }
        assert_eq!(plans.map.len(), MAX_PLANS);
        assert!(!plans.map.contains_key(&key(9, 4)));
        assert!(plans.map.contains_key(&key(10, 4)));
        // Inserting a key again counts its size once.
        plans.insert(key(10, 4), plan());
        assert_eq!(plans.words, 4 * MAX_PLANS);
        // Too large alone: not cached. Large ones push the oldest out to fit the total.
        plans.insert(key(1000, MAX_KEY_WORDS + 1), plan());
        assert!(!plans.map.contains_key(&key(1000, MAX_KEY_WORDS + 1)));
        for i in 0..MAX_TOTAL_WORDS / MAX_KEY_WORDS + 1 {
            plans.insert(key(2000 + i as u64, MAX_KEY_WORDS), plan());
        }
        assert!(plans.words <= MAX_TOTAL_WORDS);
        assert!(plans.map.contains_key(&key(
            2000 + (MAX_TOTAL_WORDS / MAX_KEY_WORDS) as u64,
            MAX_KEY_WORDS
        )));
        assert!(!plans.map.contains_key(&key(2000, MAX_KEY_WORDS)));
        assert_eq!(
            plans.words,
            plans.map.keys().map(|k| k.words.len()).sum::<usize>()
        );
    }

    #[test]
    fn a_hit_computes_what_a_miss_does_on_other_data() {
        let c = 1.5;
        let (first, stats) = counted(|| {
            let x = Tensor::from_vec(data(12, 0.0), &[4, 3]);
            program(&x, c).to_vec::<f32>()
        });
        assert_eq!(stats, MISS);
        assert_close(&first, &expected(&data(12, 0.0), 4, 3, c as f32));
        for seed in [1.0, 2.0, 3.0] {
            let (values, stats) = counted(|| {
                let x = Tensor::from_vec(data(12, seed), &[4, 3]);
                program(&x, c).to_vec::<f32>()
            });
            assert_eq!(stats, HIT, "seed {seed}");
            assert_close(&values, &expected(&data(12, seed), 4, 3, c as f32));
        }
    }

    #[test]
    fn changed_shape_dtype_view_or_constant_misses() {
        let c = 2.5;
        let x = Tensor::from_vec(data(12, 0.0), &[4, 3]);
        assert_eq!(counted(|| program(&x, c).realize().clone()).1, MISS);
        assert_eq!(counted(|| program(&x, c).realize().clone()).1, HIT);
        // Another size.
        let bigger = Tensor::from_vec(data(15, 0.0), &[5, 3]);
        let (v, stats) = counted(|| program(&bigger, c).to_vec::<f32>());
        assert_eq!(stats, MISS);
        assert_close(&v, &expected(&data(15, 0.0), 5, 3, c as f32));
        // Another dtype.
        let (v, stats) = counted(|| program(&x.to_dtype(DType::F64).realize().clone(), c));
        assert_eq!(stats, MISS);
        assert_close(
            &v.to_vec::<f32>(),
            &expected(&data(12, 0.0), 4, 3, c as f32),
        );
        // The same data through another view (a transposed storage).
        let stored_t = Tensor::from_vec(data(12, 0.0), &[3, 4]);
        let xt = stored_t.t();
        let host_t: Vec<f32> = xt.contiguous().to_vec();
        let (v, stats) = counted(|| program(&xt, c).to_vec::<f32>());
        assert_eq!(stats, MISS);
        assert_close(&v, &expected(&host_t, 4, 3, c as f32));
        // Another constant, down to the sign of zero.
        assert_eq!(counted(|| program(&x, c + 1.0).realize().clone()).1, MISS);
        let zero = |z: f64| (&x.abs() * z).to_vec::<f32>();
        let (pos, stats) = counted(|| zero(0.0));
        assert_eq!(stats, MISS);
        let (neg, stats) = counted(|| zero(-0.0));
        assert_eq!(stats, MISS);
        assert!(pos.iter().all(|v| v.to_bits() == 0), "{pos:?}");
        assert!(
            neg.iter().all(|v| v.to_bits() == (-0.0f32).to_bits()),
            "{neg:?}"
        );
    }

    #[test]
    fn requested_outputs_are_part_of_the_key() {
        let x = Tensor::from_vec(data(12, 0.5), &[4, 3]);
        let make = || {
            let y = &x * 3.5 + 2.0;
            let z = y.exp();
            (y, z)
        };
        let (_, stats) = counted(|| {
            let (_, z) = make();
            z.realize();
        });
        assert_eq!(stats, MISS);
        // Same nodes, but `y` is requested too (a second output the kernel must store).
        let (result, stats) = counted(|| {
            let (y, z) = make();
            realize(&[&y, &z]).map(|()| (y, z))
        });
        assert_eq!(stats, MISS);
        let (y, z) = result.expect("realizes");
        let host: Vec<f32> = data(12, 0.5).iter().map(|v| v * 3.5 + 2.0).collect();
        assert_close(&y.to_vec::<f32>(), &host);
        let host_exp: Vec<f32> = host.iter().map(|v| v.exp()).collect();
        assert_close(&z.to_vec::<f32>(), &host_exp);
    }

    #[test]
    fn disabled_passes_and_unfused_mode_are_part_of_the_key() {
        let c = 4.5;
        let x = Tensor::from_vec(data(12, 0.0), &[4, 3]);
        let want = expected(&data(12, 0.0), 4, 3, c as f32);
        let run = || program(&x, c).to_vec::<f32>();
        let (v, stats) = counted(run);
        assert_eq!(stats, MISS);
        assert_close(&v, &want);
        let unfused_kernels = |stats_want| {
            let ((v, kernels), stats) = counted(|| {
                smelt_runtime::record::record_kernels(|| {
                    smelt_passes::with_disabled(&["fuse"], run)
                })
            });
            assert_eq!(stats, stats_want);
            assert_close(&v, &want);
            kernels.len()
        };
        let first = unfused_kernels(MISS);
        assert_eq!(unfused_kernels(HIT), first);
        let (((), fused), stats) =
            counted(|| smelt_runtime::record::record_kernels(|| drop(run())));
        assert_eq!(stats, HIT);
        assert!(
            fused.len() < first,
            "{} fused vs {first} unfused",
            fused.len()
        );
        // `realize_with(.., Unfused, ..)` disables more than fusion: its own plan.
        let y = program(&x, c);
        let (r, stats) = counted(|| realize_with(&[&y], Mode::Unfused, Target::Cpu));
        assert!(r.is_ok());
        assert_eq!(stats, MISS);
        assert_close(&y.to_vec::<f32>(), &want);
    }

    #[test]
    fn a_plan_runs_on_whichever_backend_is_asked() {
        let c = 5.5;
        let x = Tensor::from_vec(data(12, 0.0), &[4, 3]);
        let want = expected(&data(12, 0.0), 4, 3, c as f32);
        for (backend, stats_want) in [(Target::Reference, MISS), (Target::Cpu, HIT)] {
            let y = program(&x, c);
            let (r, stats) = counted(|| realize_with(&[&y], Mode::Fused, backend));
            assert!(r.is_ok());
            assert_eq!(stats, stats_want, "{backend:?}");
            assert_close(&y.to_vec::<f32>(), &want);
        }
    }

    #[test]
    fn in_place_updates_hit_and_keep_their_semantics() {
        // A loop body that updates a storage in place: every step after the first is a hit,
        // and a handle taken before an update still sees the old version.
        let w = Tensor::from_vec(data(12, 0.0), &[4, 3]).deep_clone();
        w.realize();
        let mut host = data(12, 0.0);
        let mut hits = 0;
        for step in 0..4 {
            let before = w.deep_clone();
            let (_, stats) = counted(|| {
                w.add_(&(&w * 0.25 + 6.5));
                w.realize();
            });
            hits += stats.hits;
            for v in &mut host {
                *v += *v * 0.25 + 6.5;
            }
            assert_close(&w.to_vec::<f32>(), &host);
            let old: Vec<f32> = before.to_vec();
            assert_ne!(old, w.to_vec::<f32>(), "step {step}");
        }
        assert_eq!(hits, 3);
    }
}
