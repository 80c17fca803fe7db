//! Sparse COO tensors end to end: property tests that coalescing, densifying and summing
//! duplicates agree and that sparse @ dense equals dense @ dense on every host backend; the
//! layout answers and refusals of strided-only ops; and a sweep of the whole conformance
//! suite with sparse operands put in the place of dense ones, which must never panic.

use proptest::prelude::*;
use serde_json::Value;
use smelt::prelude::*;
use smelt::{Mode, Target};
use std::collections::BTreeMap;
mod common;
use common::{assert_no_jit_refusals, cases};

/// Entries of a random sparse tensor: `k` index rows over `sizes`, values multiples of 1/8 (so
/// every sum and product below is exact and any order of adding gives the same bits).
#[derive(Clone, Debug)]
struct Entries {
    sizes: Vec<usize>,
    dense: Vec<usize>,
    index: Vec<Vec<i64>>,
    values: Vec<f32>,
}

impl Entries {
    fn nnz(&self) -> usize {
        self.index.len()
    }
    fn dense_numel(&self) -> usize {
        self.dense.iter().product()
    }
    fn shape(&self) -> Vec<i64> {
        self.sizes
            .iter()
            .chain(&self.dense)
            .map(|&s| s as i64)
            .collect()
    }
    fn tensor(&self, dtype: DType) -> Tensor {
        let k = self.sizes.len();
        let flat: Vec<i64> = (0..k)
            .flat_map(|d| self.index.iter().map(move |t| t[d]))
            .collect();
        let indices = Tensor::from_vec(flat, &[k, self.nnz()]);
        let mut vshape = vec![self.nnz()];
        vshape.extend(&self.dense);
        let values = Tensor::from_vec(self.values.clone(), &vshape).to_dtype(dtype);
        Tensor::sparse_coo_tensor(&indices, &values, Some(&self.shape()))
    }
    /// The dense form, summed on the host in f64: the oracle.
    fn dense_sum(&self) -> Vec<f64> {
        let d = self.dense_numel();
        let positions: usize = self.sizes.iter().product();
        let mut out = vec![0.0; positions * d];
        for (e, t) in self.index.iter().enumerate() {
            let at = t
                .iter()
                .zip(&self.sizes)
                .fold(0usize, |acc, (&i, &s)| acc * s + i as usize);
            for j in 0..d {
                out[at * d + j] += f64::from(self.values[e * d + j]);
            }
        }
        out
    }
    /// The distinct index tuples in row-major order with their summed values.
    fn coalesced(&self) -> BTreeMap<Vec<i64>, Vec<f64>> {
        let d = self.dense_numel();
        let mut m: BTreeMap<Vec<i64>, Vec<f64>> = BTreeMap::new();
        for (e, t) in self.index.iter().enumerate() {
            let slot = m.entry(t.clone()).or_insert_with(|| vec![0.0; d]);
            for (j, v) in slot.iter_mut().enumerate() {
                *v += f64::from(self.values[e * d + j]);
            }
        }
        m
    }
}

/// Random entries: 1–3 sparse dims of size 1–5, 0–2 dense dims of size 1–3, up to 24 entries
/// drawn from few positions, so duplicates are common.
fn entries() -> impl Strategy<Value = Entries> {
    (
        proptest::collection::vec(1usize..6, 1..4),
        proptest::collection::vec(1usize..4, 0..3),
        0usize..25,
    )
        .prop_flat_map(|(sizes, dense, nnz)| {
            let d: usize = dense.iter().product();
            let tuple: Vec<_> = sizes.iter().map(|&s| 0..s as i64).collect();
            (
                Just(sizes),
                Just(dense),
                proptest::collection::vec(tuple, nnz),
                proptest::collection::vec(-40i32..41, nnz * d),
            )
        })
        .prop_map(|(sizes, dense, index, eighths)| Entries {
            sizes,
            dense,
            index,
            values: eighths.into_iter().map(|v| v as f32 / 8.0).collect(),
        })
}

/// `t`'s elements as f64 after realizing it on `target`.
fn on(target: Target, t: &Tensor) -> Vec<f64> {
    smelt::realize_with(&[t], Mode::Fused, target).expect("realisation");
    t.to_vec::<f64>()
}

proptest! {
    #![proptest_config(cases(48))]

    /// `coalesce().to_dense()`, `to_dense()` and the host's sum of the duplicate entries agree,
    /// and `coalesce` keeps exactly the distinct indices, sorted, with their sums.
    #[test]
    fn coalescing_densifying_and_summing_duplicates_agree(e in entries(), f64_values in any::<bool>()) {
        let dtype = if f64_values { DType::F64 } else { DType::F32 };
        let want = e.dense_sum();
        for target in Target::HOST {
            let s = e.tensor(dtype);
            prop_assert_eq!(s.is_coalesced(), e.nnz() <= 1);
            prop_assert_eq!(&on(target, &s.to_dense()), &want, "to_dense on {:?}", target);
            let c = s.coalesce();
            prop_assert!(c.is_coalesced());
            prop_assert_eq!(&on(target, &c.to_dense()), &want, "coalesce().to_dense() on {:?}", target);
            let expect = e.coalesced();
            prop_assert_eq!(c.nnz(), expect.len());
            let (k, n) = (e.sizes.len(), c.nnz());
            let idx = c.indices().to_vec::<i64>();
            let tuples: Vec<Vec<i64>> = (0..n).map(|j| (0..k).map(|d| idx[d * n + j]).collect()).collect();
            prop_assert_eq!(&tuples, &expect.keys().cloned().collect::<Vec<_>>());
            let values: Vec<f64> = expect.values().flatten().copied().collect();
            prop_assert_eq!(&on(target, &c.values()), &values);
            // The 0-dim sum of every entry, duplicates included.
            prop_assert_eq!(on(target, &s.sum_all())[0], want.iter().sum::<f64>());
        }
        assert_no_jit_refusals();
    }

    /// A 2-D sparse matrix times a dense one (the SpMM kernel) equals the dense product of its
    /// dense form, on every host backend, coalesced or not; matmul with a vector too.
    #[test]
    fn sparse_at_dense_equals_dense_at_dense(
        m in 1usize..7, k in 1usize..7, n in 1usize..6,
        nnz in 0usize..20, seed in any::<u64>(), transposed in any::<bool>(),
    ) {
        let mut g = Generator::new(seed);
        let index = Tensor::stack(&[g.randint(0, m as i64, &[nnz]), g.randint(0, k as i64, &[nnz])], 0);
        let eighths = |g: &mut Generator, shape: &[usize]| {
            (g.randint(-40, 41, shape).to_dtype(DType::F32) / 8.0).contiguous()
        };
        let a = Tensor::sparse_coo_tensor(&index, &eighths(&mut g, &[nnz]), Some(&[m as i64, k as i64]));
        // The dense operand as stored, or read through a transposed view.
        let b = if transposed { eighths(&mut g, &[n, k]).t() } else { eighths(&mut g, &[k, n]) };
        let v = eighths(&mut g, &[k]);
        for target in Target::HOST {
            let dense = a.to_dense();
            let want = on(target, &dense.mm(&b));
            prop_assert_eq!(&on(target, &a.mm(&b)), &want);
            prop_assert_eq!(&on(target, &a.coalesce().mm(&b)), &want);
            prop_assert_eq!(&on(target, &a.sparse_mm(&b)), &want);
            prop_assert_eq!(&on(target, &a.matmul(&v)), &on(target, &dense.matmul(&v)));
        }
        assert_no_jit_refusals();
    }
}

#[test]
fn layout_answers_as_pytorch_2_15() {
    let i = Tensor::new([[0i64, 1, 1], [2, 0, 2]]);
    let s = Tensor::sparse_coo_tensor(&i, &Tensor::new([3.0f32, 4.0, 5.0]), Some(&[2, 3]));
    assert_eq!(s.layout(), Layout::SparseCoo);
    assert_eq!(Tensor::new([1.0f32]).layout(), Layout::Strided);
    assert_eq!((s.stride(), s.storage_offset()), (vec![0, 0], 0));
    assert!(!s.is_contiguous());
    assert_eq!((s.sparse_dim(), s.dense_dim(), s.nnz()), (2, 0, 3));
    // The parts are the arguments themselves: they share storage.
    assert!(s.shares_storage(&i) && s.stored_indices().shares_storage(&i));
    assert_eq!(s.to_vec::<f32>(), [0.0, 0.0, 3.0, 4.0, 0.0, 5.0]);
    // Written through `_values()`, the change shows in the sparse tensor.
    s.stored_values().mul_(2.0);
    assert_eq!(
        s.to_dense().to_vec::<f32>(),
        [0.0, 0.0, 6.0, 8.0, 0.0, 10.0]
    );
    let dense = Tensor::new([1.0f32]);
    assert_eq!(dense.try_nnz().unwrap_err().kind, ErrorKind::Layout);
    assert_eq!((dense.sparse_dim(), dense.dense_dim()), (0, 1));
}

/// Ops PyTorch 2.15 refuses on a sparse operand refuse it here with a `layout` error, on any
/// argument. (smelt also refuses some that 2.15 computes on a sparse tensor — `select`,
/// `permute`, `unsqueeze`, `index_select`, `zeros_like`, dense * sparse — so those are not
/// listed here.)
#[test]
fn strided_only_ops_refuse_a_sparse_operand() {
    let s = Tensor::sparse_coo_tensor(
        &Tensor::new([[0i64, 1]]),
        &Tensor::new([1.0f32, 2.0]),
        Some(&[3]),
    );
    let d = Tensor::new([1.0f32, 2.0, 3.0]);
    let refused: Vec<(&str, Result<Tensor>)> = vec![
        ("exp", s.try_exp()),
        ("view", s.try_view(&[3])),
        ("reshape", s.try_reshape(&[3])),
        (
            "contiguous",
            s.try_contiguous_format(MemoryFormat::Contiguous),
        ),
        ("as_strided", s.try_as_strided(&[1], &[1], None)),
        (
            "slice",
            s.try_getitem(&[TensorIndex::Slice(None, Some(1), None)]),
        ),
        ("expand", s.try_expand(&[2, 3])),
        ("cumsum", s.try_cumsum(0, None)),
        ("softmax", s.try_softmax(0, None)),
        ("mean", s.try_mean(&[] as &[i64], false, None)),
        ("amax", s.try_amax(&[0], false)),
        ("masked_fill", d.try_masked_fill(&s, 1.0)),
        ("cat", Tensor::try_cat(&[d.clone(), s.clone()], 0)),
        ("gather", d.try_gather(0, &s)),
        ("flip", s.try_flip(&[0])),
        ("dot", d.try_dot(&s)),
        ("outer", s.try_outer(&d)),
        ("where", Tensor::try_where(&d.gt(1.0), &s, &d)),
        ("maximum", d.try_maximum(&s)),
        ("add(sparse, dense)", s.try_add(&d)),
        ("add(sparse, scalar)", s.try_add(1.0)),
        (
            "clone(contiguous)",
            s.try_clone_format(MemoryFormat::Contiguous),
        ),
    ];
    for (op, r) in refused {
        assert_eq!(r.map(|_| ()).unwrap_err().kind, ErrorKind::Layout, "{op}");
    }
    let in_place: Vec<(&str, Result<()>)> = vec![
        ("add_", s.try_add_(1.0, None).map(|_| ())),
        ("fill_", s.try_fill_(0.0).map(|_| ())),
        ("copy_ into", d.try_copy_(&s).map(|_| ())),
        ("setitem", s.try_setitem(&[TensorIndex::Int(0)], 1.0)),
        ("uniform_", s.try_uniform_(0.0, 1.0).map(|_| ())),
    ];
    for (op, r) in in_place {
        assert_eq!(r.unwrap_err().kind, ErrorKind::Layout, "{op}");
    }
    // Nothing was written: the sparse tensor and the dense one are unchanged.
    assert_eq!(s.to_dense().to_vec::<f32>(), [1.0, 2.0, 0.0]);
    assert_eq!(d.to_vec::<f32>(), [1.0, 2.0, 3.0]);
    // What PyTorch does accept: dense + sparse, scalar scaling, neg, clone, to(dtype), detach.
    assert_eq!(d.add(&s).to_vec::<f32>(), [2.0, 4.0, 3.0]);
    assert_eq!((&s * 2.0).to_dense().to_vec::<f32>(), [2.0, 4.0, 0.0]);
    assert_eq!((-&s).to_dense().to_vec::<f32>(), [-1.0, -2.0, 0.0]);
    let c = s.deep_clone();
    assert!(c.is_sparse() && !c.shares_storage(&s));
    assert_eq!(
        s.to_dtype(DType::F64).to_dense().to_vec::<f64>(),
        [1.0, 2.0, 0.0]
    );
    assert!(s.detach().is_sparse() && s.detach().shares_storage(&s));
}

/// Every conformance case, replayed with a sparse tensor in the place of the first tensor its
/// program builds (`to_sparse()` of it): whatever each op then does — compute, or refuse with
/// an error — no case may panic inside smelt.
#[test]
fn no_op_of_the_suite_panics_on_a_sparse_operand() {
    let mut panics = vec![];
    let mut replayed = 0;
    for file in common::ratchet::files() {
        let text = std::fs::read_to_string(&file).expect("read a conformance file");
        let cases: Vec<Value> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        for case in cases {
            let Some(sparse) = with_sparse_operand(&case) else {
                continue;
            };
            replayed += 1;
            let result = smelt_harness::conformance::run_case_guarded(&sparse);
            if let Some(f) = result.failure.filter(|f| f.starts_with("PANIC")) {
                panics.push(format!("{}: {f}", result.id));
            }
        }
    }
    assert!(replayed > 3000, "only {replayed} cases replayed");
    assert!(
        panics.is_empty(),
        "{} panics:\n{}",
        panics.len(),
        panics.join("\n")
    );
}

/// `case` with a `to_sparse` step after its first `tensor` step, every later reference to that
/// tensor reading the sparse one; `None` for a case without a tensor read later.
fn with_sparse_operand(case: &Value) -> Option<Value> {
    let mut case = case.clone();
    let steps = case.get_mut("steps")?.as_array_mut()?;
    let at = steps
        .iter()
        .position(|s| s.get("op").and_then(Value::as_str) == Some("tensor"))?;
    let name = steps[at].get("let")?.as_str()?.to_string();
    let (from, to) = (format!("${name}"), format!("${name}__sparse"));
    let mut used = false;
    for step in steps.iter_mut().skip(at + 1) {
        if let Some(args) = step.get_mut("args") {
            used |= replace_refs(args, &from, &to);
        }
    }
    if !used {
        return None;
    }
    let convert = serde_json::json!({
        "let": format!("{name}__sparse"), "op": "to_sparse", "args": {"self": from}
    });
    steps.insert(at + 1, convert);
    // Later error steps move by one; the comparison of results is not what this test checks.
    case.as_object_mut()?.insert("error".into(), Value::Null);
    Some(case)
}

fn replace_refs(v: &mut Value, from: &str, to: &str) -> bool {
    match v {
        Value::String(s) if s == from => {
            *s = to.to_string();
            true
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |acc, x| replace_refs(x, from, to) | acc),
        Value::Object(map) => map
            .values_mut()
            .fold(false, |acc, x| replace_refs(x, from, to) | acc),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => false,
    }
}
