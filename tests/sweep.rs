//! The semantics sweep of issue 28, one section per class, each case written from PyTorch's
//! rules (SEMANTICS.md, ATen's sources): zero-size dims through reductions and copies, `ravel`,
//! in-place overlap classification, `rename` with a mapping, the user's line on every node of a
//! composite op, and the reliability limits (sizes that overflow, allocations that fail).

use smelt::TensorIndex::Slice;
use smelt::{DType, ErrorKind, MemoryFormat, Scalar, Tensor};

fn values(t: &Tensor) -> Vec<f64> {
    t.to_scalars().iter().map(|s| s.as_f64()).collect()
}

// ---- 1. zero-size dims --------------------------------------------------------------------

/// Reductions over an empty dim give their identity (sum 0, prod 1), NaN (mean, var, std), -inf
/// (logsumexp), an empty result (softmax), or PyTorch's error (max-like reductions); over a
/// non-empty dim of an empty tensor, an empty result.
#[test]
fn reductions_over_empty_dims_give_pytorchs_values_and_errors() {
    let e = Tensor::zeros(&[2, 0], None);
    assert_eq!(values(&e.sum_dim(1)), [0.0, 0.0]);
    assert_eq!(values(&e.prod(Some(1), false, None)), [1.0, 1.0]);
    for r in [
        e.mean_dim(1),
        e.var(&[1i64][..], 1.0, false),
        e.std(&[1i64][..], 0.0, false),
        e.mean_all(),
        e.var_all(),
    ] {
        assert!(values(&r).iter().all(|x| x.is_nan()), "{r:?}");
    }
    assert_eq!(
        values(&e.logsumexp(&[1i64][..], false)),
        [f64::NEG_INFINITY; 2]
    );
    let ints = Tensor::zeros(&[3, 0], Some(DType::I64));
    let l = ints.logsumexp(&[1i64][..], true);
    assert_eq!((l.dtype(), l.shape()), (DType::F32, &[3, 1][..]));
    assert_eq!(values(&l), [f64::NEG_INFINITY; 3]);
    for s in [e.softmax(1, None), e.log_softmax(0, None)] {
        assert_eq!((s.shape(), s.stride()), (&[2, 0][..], vec![1, 1]));
    }
    // The max family refuses an empty reduced dim, naming it; over dim 0 the result is empty.
    let err = e.try_amax(&[1], false).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Shape);
    assert!(
        err.to_string()
            .contains("amax(): Expected reduction dim 1 to have non-zero size")
    );
    assert!(e.try_argmax(Some(1), false).is_err());
    assert!(e.try_max_dim(1, false).is_err());
    assert!(
        e.try_max()
            .unwrap_err()
            .to_string()
            .contains("Specify the reduction dim with the 'dim' argument")
    );
    assert_eq!(e.amax(&[0], false).shape(), &[0]);
    assert_eq!(e.max_dim(0, true).1.shape(), &[1, 0]);
    let z = Tensor::zeros(&[0, 3], None);
    assert_eq!(values(&z.sum_dim(0)), [0.0; 3]);
    assert_eq!(values(&z.amin(&[1], false)), [] as [f64; 0]);
    assert_eq!(
        values(&z.logsumexp(&[0i64][..], false)),
        [f64::NEG_INFINITY; 3]
    );
    assert_eq!(values(&z.all(&[0i64][..], false)), [1.0; 3]);
    assert_eq!(values(&z.any(&[0i64][..], false)), [0.0; 3]);
    assert_eq!(values(&z.count_nonzero(&[0])), [0.0; 3]);
}

/// Copies of an empty tensor: an empty tensor is contiguous (so `contiguous()` is itself), and
/// it is non-overlapping and dense (so preserve-format copies keep its strides); `roll` and
/// `repeat` allocate row-major outputs.
#[test]
fn copies_of_empty_tensors_keep_pytorchs_strides() {
    let p = Tensor::zeros(&[0, 3, 2], None).permute(&[2, 0, 1]);
    assert_eq!((p.shape(), p.stride()), (&[2, 0, 3][..], vec![1, 6, 2]));
    assert!(p.is_contiguous() && p.is_non_overlapping_and_dense());
    let c = p.contiguous();
    assert!(
        c.is_same(&p),
        "contiguous() of a contiguous tensor is the tensor"
    );
    assert_eq!(
        p.clone_format(MemoryFormat::Preserve).stride(),
        vec![1, 6, 2]
    );
    assert_eq!(p.flip(&[0]).stride(), vec![1, 6, 2]);
    // roll of an empty tensor is a preserve-format clone (torch 2.15, sweep215.jsonl); without
    // dims it rolls `contiguous().view(numel)` and views the result back: row-major.
    assert_eq!(p.roll(&[1], &[0]).stride(), vec![1, 6, 2]);
    assert_eq!(p.roll(&[1], &[]).stride(), vec![3, 3, 1]);
    assert_eq!(p.repeat(&[1, 2, 1]).stride(), vec![3, 3, 1]);
    assert_eq!(
        p.clone_format(MemoryFormat::Contiguous).stride(),
        vec![3, 3, 1]
    );
}

// ---- 2. ravel -----------------------------------------------------------------------------

/// `ravel` is `contiguous().view(-1)`: always contiguous, a copy for a 1-D input that is not
/// (expanded, stepped), a view of a contiguous input.
#[test]
fn ravel_is_always_contiguous() {
    let expanded = Tensor::new([1.0f32]).expand(&[3]);
    let r = expanded.ravel();
    assert_eq!((r.stride(), r.is_contiguous()), (vec![1], true));
    assert!(!r.shares_storage(&expanded));
    let x = Tensor::new([1.0f32, 2.0, 3.0, 4.0]);
    let stepped = x.getitem(&[Slice(None, None, Some(2))]);
    let r = stepped.ravel();
    assert_eq!((r.stride(), values(&r)), (vec![1], vec![1.0, 3.0]));
    assert!(!r.shares_storage(&x));
    let m = Tensor::arange(0, 6, 1, None).view(&[2, 3]);
    let r = m.ravel();
    assert!(r.shares_storage(&m), "a contiguous input ravels to a view");
    let t = m.t().ravel();
    assert_eq!(t.to_vec::<i64>(), [0, 3, 1, 4, 2, 5]);
    assert_eq!(Tensor::scalar(2.0, DType::F32).ravel().shape(), &[1]);
    // An offset view keeps its offset.
    let tail = x.getitem(&[Slice(Some(1), None, None)]).ravel();
    assert_eq!(
        (tail.storage_offset(), values(&tail)),
        (1, vec![2.0, 3.0, 4.0])
    );
    // flatten of a 1-D tensor is the tensor itself, as in PyTorch.
    assert!(stepped.flatten(0, -1).is_same(&stepped));
    assert_eq!(Tensor::zeros(&[2, 0], None).ravel().shape(), &[0]);
}

// ---- 3. in-place overlap ------------------------------------------------------------------

/// PyTorch's `get_overlap_status` between the written tensor and an input: only a partial
/// overlap of two non-overlapping-and-dense tensors is refused; full, none and "too hard"
/// (either not dense) pass.
#[test]
fn in_place_overlap_follows_pytorchs_classification() {
    let fresh = || Tensor::arange(0, 8, 1, Some(DType::F32));
    let slice = |x: &Tensor, a: i64, b: i64, s: i64| x.getitem(&[Slice(Some(a), Some(b), Some(s))]);
    // No overlap.
    let x = fresh();
    slice(&x, 0, 4, 1).add_(slice(&x, 4, 8, 1));
    assert_eq!(values(&x), [4.0, 6.0, 8.0, 10.0, 4.0, 5.0, 6.0, 7.0]);
    // Full overlap: the same elements in the same order.
    let x = fresh();
    x.add_(x.view(&[8]));
    assert_eq!(values(&x), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0]);
    // Partial: ranges meet.
    let x = fresh();
    let err = slice(&x, 0, 4, 1)
        .try_add_(slice(&x, 2, 6, 1), None)
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Overlap);
    assert_eq!(
        values(&x),
        values(&fresh()),
        "a refused write changes nothing"
    );
    // Partial: the same range in another order (a transpose of a square matrix).
    let m = fresh()
        .getitem(&[Slice(Some(0), Some(4), None)])
        .view(&[2, 2]);
    assert_eq!(
        m.try_add_(m.t(), None).unwrap_err().kind,
        ErrorKind::Overlap
    );
    // Too hard (the input is not dense): allowed, computed from the old values.
    let x = fresh();
    let evens = slice(&x, 0, 8, 2);
    slice(&x, 0, 4, 1).add_(&evens);
    assert_eq!(values(&x), [0.0, 3.0, 6.0, 9.0, 4.0, 5.0, 6.0, 7.0]);
    // copy_ follows the same rule.
    let x = fresh();
    assert_eq!(
        slice(&x, 1, 5, 1)
            .try_copy_(&slice(&x, 0, 4, 1))
            .unwrap_err()
            .kind,
        ErrorKind::Overlap
    );
    slice(&x, 0, 4, 2).copy_(&slice(&x, 1, 3, 1));
    assert_eq!(values(&x), [1.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
    // Empty tensors never overlap; an expanded self overlaps itself (always refused).
    let x = fresh();
    slice(&x, 0, 0, 1).add_(slice(&x, 0, 0, 1));
    let e = Tensor::zeros(&[1], None).expand(&[4]);
    assert_eq!(e.try_add_(1.0, None).unwrap_err().kind, ErrorKind::Overlap);
}

// ---- 4. names -----------------------------------------------------------------------------

/// `rename(**mapping)` renames every listed dim at once: dims are found by their old names, so
/// two names swap.
#[test]
fn rename_with_a_mapping_renames_all_dims_at_once() {
    let x = Tensor::zeros(&[2, 3, 4], None).rename(&[Some("a"), Some("b"), Some("c")]);
    let y = x.rename_with(&[("a", Some("b")), ("b", Some("a"))]);
    assert_eq!(
        y.names(),
        [
            Some("b".to_string()),
            Some("a".to_string()),
            Some("c".to_string())
        ]
    );
    let z = x.rename_with(&[("c", None), ("a", Some("x"))]);
    assert_eq!(
        z.names(),
        [Some("x".to_string()), Some("b".to_string()), None]
    );
    // A name the tensor lacks, or a duplicate result, is an error.
    assert_eq!(
        x.try_rename_with(&[("q", Some("r"))]).unwrap_err().kind,
        ErrorKind::Names
    );
    assert_eq!(
        x.try_rename_with(&[("a", Some("b"))]).unwrap_err().kind,
        ErrorKind::Names
    );
}

// ---- 5. source lines ----------------------------------------------------------------------

/// Every node a composite op records names the user's line, not the library's file.
#[test]
fn composite_ops_record_the_users_line_on_every_node() {
    let x = Tensor::new([[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]]);
    let here = file!();
    let programs: Vec<(&str, Tensor)> = vec![
        ("softmax", x.softmax(1, None)),
        ("log_softmax", x.log_softmax(-1, None)),
        ("var", x.var(&[1i64][..], 1.0, true)),
        ("std", x.std_all()),
        ("mean", x.mean_dim(0)),
        ("logsumexp", x.logsumexp(&[1i64][..], false)),
        ("layernorm", {
            let m = x.mean_keepdim(-1);
            let v = x.var(&[-1i64][..], 0.0, true);
            (&x - &m) / (v + 1e-5).sqrt()
        }),
        ("cat", Tensor::cat(&[x.clone(), x.clone()], 0)),
        ("stack", Tensor::stack(&[x.clone(), x.clone()], 1)),
        ("tril", x.tril(0)),
        ("full_like", x.full_like(2.0, None, None)),
        ("dropout", x.dropout(0.5, true)),
        ("rand_like", x.rand_like(None)),
        ("constants", &(&x * 2.0) + 2.0),
    ];
    for (name, t) in programs {
        let text = t.graph().to_string();
        let foreign: Vec<&str> = text
            .lines()
            .filter(|l| l.contains(" @ ") && !l.contains(here))
            .collect();
        assert!(
            text.contains(here),
            "{name}: no node names this file\n{text}"
        );
        assert!(
            foreign.is_empty(),
            "{name}: nodes naming another file:\n{}",
            foreign.join("\n")
        );
    }
    // A constant shared by two lines shows each its own line.
    let a = &x * 3.5;
    let b = &x * 3.5;
    let (ta, tb) = (a.graph().to_string(), b.graph().to_string());
    let fill_line = |t: &str| {
        t.lines()
            .find(|l| l.contains("fill(3.5)"))
            .map(|l| l.rsplit(':').next().unwrap_or_default().to_string())
    };
    assert_ne!(fill_line(&ta), fill_line(&tb), "{ta}\n{tb}");
}

// ---- reliability limits -------------------------------------------------------------------

/// Sizes whose element count or byte size overflows, negative sizes, views outside their
/// storage and allocations the machine cannot make are errors, never a panic or an abort.
#[test]
fn absurd_sizes_and_allocations_are_errors() {
    let big = i64::MAX;
    let kind = |r: smelt::Result<Tensor>| r.map(|_| ()).unwrap_err().kind;
    assert_eq!(
        kind(Tensor::try_zeros(&[1 << 62, 4], None)),
        ErrorKind::Value
    );
    assert_eq!(kind(Tensor::try_zeros(&[big], None)), ErrorKind::Value);
    assert_eq!(
        kind(Tensor::try_zeros(&[1 << 33, 1 << 33], None)),
        ErrorKind::Value
    );
    assert_eq!(
        kind(Tensor::try_full(&[1 << 61], 1.0, Some(DType::F64))),
        ErrorKind::Value
    );
    assert_eq!(kind(Tensor::try_zeros(&[-1], None)), ErrorKind::Value);
    assert_eq!(
        kind(Tensor::try_empty_strided(&[2, 2], &[big, 1], None)),
        ErrorKind::Value
    );
    assert_eq!(kind(Tensor::try_arange(0, big, 1, None)), ErrorKind::Value);
    assert_eq!(kind(Tensor::try_arange(-5, big, 1, None)), ErrorKind::Value);
    assert_eq!(
        kind(Tensor::try_linspace(0.0, 1.0, big, None)),
        ErrorKind::Value
    );
    assert_eq!(kind(Tensor::try_eye(1 << 40, None, None)), ErrorKind::Value);
    assert_eq!(
        kind(Tensor::try_randint(0, 9, &[1 << 62, 8], None)),
        ErrorKind::Value
    );
    assert_eq!(kind(Tensor::try_randperm(big)), ErrorKind::Value);
    let x = Tensor::arange(0, 6, 1, None);
    assert_eq!(kind(x.try_expand(&[big, 6])), ErrorKind::Value);
    assert_eq!(kind(x.try_repeat(&[1 << 62])), ErrorKind::Value);
    assert_eq!(
        kind(x.try_as_strided(&[4], &[2], Some(0))),
        ErrorKind::Index
    );
    assert_eq!(
        kind(x.try_as_strided(&[big], &[1], Some(0))),
        ErrorKind::Index
    );
    assert_eq!(
        kind(x.try_as_strided(&[3, 3], &[big / 2, big / 2], Some(0))),
        ErrorKind::Index
    );
    assert_eq!(
        kind(x.try_as_strided(&[1], &[1], Some(100))),
        ErrorKind::Index
    );
    // Data whose shape's element count overflows.
    assert_eq!(
        kind(Tensor::try_from_vec(
            vec![1.0f32; 4],
            &[1 << 40, 1 << 40, 4]
        )),
        ErrorKind::Shape
    );
    assert_eq!(
        kind(Tensor::try_from_scalars(
            &[Scalar::Int(1)],
            &[usize::MAX, 2],
            DType::I64
        )),
        ErrorKind::Shape
    );
    // Broadcasting two shapes whose product overflows.
    let a = Tensor::zeros(&[1], None).expand(&[1 << 40, 1]);
    let b = Tensor::zeros(&[1], None).expand(&[1, 1 << 40]);
    assert_eq!(kind(a.try_add(&b)), ErrorKind::Value);
    // Sizes that fit but that no machine here can allocate: a memory error at realisation.
    let huge = Tensor::zeros(&[1 << 40], None);
    let err = huge.try_realize().map(|_| ()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Memory);
    assert!(
        err.to_string()
            .contains("you tried to allocate 4398046511104 bytes"),
        "{err}"
    );
    let wide = x.expand(&[1 << 40, 6]).contiguous();
    assert_eq!(
        wide.try_realize().map(|_| ()).unwrap_err().kind,
        ErrorKind::Memory
    );
    // The library still works afterwards.
    assert_eq!(x.sum_all().item().as_i64(), 15);
}

/// A walk of absurd sizes through every entry point that takes one (creation, random draws,
/// views, splits, joins, data-dependent indices): each answers a tensor or an error of the
/// kinds its rule allows, never a panic. Creation follows `check_sizes` exactly: a `value` error
/// for a negative size or an element count or byte size past int64, a lazy tensor otherwise;
/// and whatever is that large in bytes fails at realisation with a `memory` error.
#[test]
fn a_walk_of_absurd_sizes_gives_errors_never_panics() {
    use ErrorKind::{Index, Memory, Shape, Stride, Value};
    use std::panic::{AssertUnwindSafe, catch_unwind};
    let sizes: [i64; 13] = [
        i64::MIN,
        -(1 << 62),
        -2,
        -1,
        0,
        1 << 31,
        1 << 32,
        1 << 40,
        1 << 50,
        1 << 61,
        1 << 62,
        i64::MAX - 1,
        i64::MAX,
    ];
    let dtypes = [
        DType::Bool,
        DType::U8,
        DType::F16,
        DType::F32,
        DType::F64,
        DType::I64,
    ];
    // Realising something of this many bytes or more fails on any machine here (and is refused
    // before anything is written); smaller huge tensors are never realised (the allocation might
    // succeed and then exhaust the machine).
    const UNALLOCATABLE: u128 = 1 << 46;
    let checked = std::cell::Cell::new(0usize);
    // `allowed`: the error kinds the rule allows; `Some(true)`: must succeed, `Some(false)`:
    // must fail, `None`: either.
    let check = |what: String,
                 allowed: &[ErrorKind],
                 succeeds: Option<bool>,
                 f: &mut dyn FnMut() -> smelt::Result<Tensor>| {
        checked.set(checked.get() + 1);
        let result = catch_unwind(AssertUnwindSafe(&mut *f))
            .unwrap_or_else(|p| panic!("{what} panicked: {:?}", p.downcast_ref::<String>()));
        match result {
            Err(e) => assert!(
                succeeds != Some(true) && allowed.contains(&e.kind),
                "{what}: {e} ({:?})",
                e.kind
            ),
            Ok(_) if succeeds == Some(false) => panic!("{what}: no error"),
            Ok(t) => {
                let bytes = t.shape().iter().map(|&d| d as u128).product::<u128>()
                    * t.dtype().size() as u128;
                if bytes >= UNALLOCATABLE {
                    // A storage of its own (a view of a small tensor, an expand, allocates
                    // nothing new): a `value` error where its size in bytes overflows, a
                    // `memory` error when realised otherwise.
                    let err = catch_unwind(AssertUnwindSafe(|| {
                        let owned = t.try_contiguous_format(MemoryFormat::Contiguous)?;
                        owned.try_realize().map(|_| ())
                    }))
                    .unwrap_or_else(|_| panic!("{what}: copying or realising panicked"))
                    .expect_err(&format!("{what}: {bytes} bytes realised"));
                    let want = if bytes > i64::MAX as u128 {
                        Value
                    } else {
                        Memory
                    };
                    assert_eq!(err.kind, want, "{what}: {err}");
                }
            }
        }
    };
    let fits = |shape: &[i64], itemsize: usize| {
        shape.iter().all(|&d| d >= 0)
            && (shape.contains(&0)
                || shape
                    .iter()
                    .try_fold(itemsize as i64, |n, &d| n.checked_mul(d))
                    .is_some())
    };
    let x = Tensor::arange(0, 6, 1, Some(DType::F32));
    let m = x.view(&[2, 3]);
    for &n in &sizes {
        for &k in &[1, 3, n] {
            for shape in [vec![n], vec![n, k], vec![k, n], vec![2, n, k]] {
                for &dtype in &dtypes {
                    let ok = fits(&shape, dtype.size());
                    let want = (&[Value][..], Some(ok));
                    let s = &shape;
                    check(
                        format!("zeros({s:?}, {dtype:?})"),
                        want.0,
                        want.1,
                        &mut || Tensor::try_zeros(s, Some(dtype)),
                    );
                    check(
                        format!("ones({s:?}, {dtype:?})"),
                        want.0,
                        want.1,
                        &mut || Tensor::try_ones(s, Some(dtype)),
                    );
                    check(
                        format!("full({s:?}, {dtype:?})"),
                        want.0,
                        want.1,
                        &mut || Tensor::try_full(s, 1, Some(dtype)),
                    );
                    check(
                        format!("empty({s:?}, {dtype:?})"),
                        want.0,
                        want.1,
                        &mut || Tensor::try_empty(s, Some(dtype)),
                    );
                    if dtype.is_float() {
                        check(
                            format!("rand({s:?}, {dtype:?})"),
                            want.0,
                            want.1,
                            &mut || Tensor::try_rand(s, Some(dtype)),
                        );
                        check(
                            format!("randn({s:?}, {dtype:?})"),
                            want.0,
                            want.1,
                            &mut || Tensor::try_randn(s, Some(dtype)),
                        );
                    }
                }
                let s = &shape;
                let any: &[ErrorKind] = &[Value, Shape, Index, Stride];
                check(format!("randint({s:?})"), any, None, &mut || {
                    Tensor::try_randint(0, 5, s, None)
                });
                let strides: Vec<i64> = shape.iter().map(|_| 1).collect();
                check(
                    format!("empty_strided({s:?}, ones)"),
                    any,
                    None,
                    &mut || Tensor::try_empty_strided(s, &strides, None),
                );
                check(
                    format!("empty_strided(ones, {s:?})"),
                    any,
                    None,
                    &mut || Tensor::try_empty_strided(&strides, s, None),
                );
                check(format!("view({s:?})"), any, None, &mut || x.try_view(s));
                check(format!("reshape({s:?})"), any, None, &mut || {
                    x.try_reshape(s)
                });
                check(format!("expand({s:?})"), any, None, &mut || m.try_expand(s));
                check(format!("broadcast_to({s:?})"), any, None, &mut || {
                    x.try_broadcast_to(s)
                });
                check(format!("repeat({s:?})"), any, None, &mut || m.try_repeat(s));
                check(format!("unflatten(0, {s:?})"), any, None, &mut || {
                    x.try_unflatten(0, s)
                });
                check(format!("as_strided({s:?}, ones)"), any, None, &mut || {
                    x.try_as_strided(s, &strides, Some(0))
                });
                check(format!("as_strided(ones, {s:?})"), any, None, &mut || {
                    x.try_as_strided(&strides, s, Some(0))
                });
                check(format!("roll({s:?})"), any, None, &mut || {
                    m.try_roll(s, &[0])
                });
                check(format!("flip({s:?})"), any, None, &mut || m.try_flip(s));
                check(format!("permute({s:?})"), any, None, &mut || {
                    m.try_permute(s)
                });
                check(format!("sum({s:?})"), any, None, &mut || {
                    m.try_sum(s.as_slice(), false, None)
                });
            }
            // Ops that allocate at once (as PyTorch's do) are called only with sizes that
            // are small or that no machine here can allocate (a memory error): a size between
            // could be allocated and filled, exhausting the machine the tests run on.
            let eager = n.unsigned_abs() <= 1 << 20 || n.unsigned_abs() >= 1 << 44;
            if eager {
                check(
                    format!("arange(0, {n}, {k})"),
                    &[Value, Memory],
                    None,
                    &mut || Tensor::try_arange(0, n, k, None),
                );
                check(
                    format!("arange({n}, 0, -{k})"),
                    &[Value, Memory],
                    None,
                    &mut || Tensor::try_arange(n, 0, k.wrapping_neg(), None),
                );
                check(
                    format!("linspace(0, 1, {n})"),
                    &[Value, Memory],
                    None,
                    &mut || Tensor::try_linspace(0.0, 1.0, n, None),
                );
                check(
                    format!("eye({n}, {k})"),
                    &[Value, Memory],
                    None,
                    &mut || Tensor::try_eye(n, Some(k), None),
                );
                check(
                    format!("randperm({n})"),
                    &[Value, Memory],
                    None,
                    &mut || Tensor::try_randperm(n),
                );
            }
            let any: &[ErrorKind] = &[Value, Shape, Index, Stride];
            check(format!("narrow(0, 0, {n})"), any, None, &mut || {
                x.try_narrow(0, 0, n)
            });
            check(format!("narrow(0, {n}, {k})"), any, None, &mut || {
                x.try_narrow(0, n, k)
            });
            check(format!("narrow({n}, 0, 1)"), any, None, &mut || {
                x.try_narrow(n, 0, 1)
            });
            check(format!("slice(0, {n}, {k}, {k})"), any, None, &mut || {
                x.try_slice(0, Some(n), Some(k), k)
            });
            check(format!("slice(0, -{k}, {n}, {n})"), any, None, &mut || {
                x.try_slice(0, Some(k.wrapping_neg()), Some(n), n)
            });
            check(format!("unfold(0, {n}, {k})"), any, None, &mut || {
                x.try_unfold(0, n, k)
            });
            check(format!("unfold(0, 1, {n})"), any, None, &mut || {
                x.try_unfold(0, 1, n)
            });
            check(format!("select(0, {n})"), any, None, &mut || {
                x.try_select(0, n)
            });
            check(format!("unsqueeze({n})"), any, None, &mut || {
                x.try_unsqueeze(n)
            });
            check(format!("diagonal({n}, 0, 1)"), any, None, &mut || {
                m.try_diagonal(n, 0, 1)
            });
            check(format!("tril({n})"), any, None, &mut || m.try_tril(n));
            check(format!("round({n})"), any, None, &mut || x.try_round(n));
            check(format!("flatten({n}, {k})"), any, None, &mut || {
                m.try_flatten(n, k)
            });
            check(format!("movedim(0, {n})"), any, None, &mut || {
                m.try_movedim(&[0], &[n])
            });
            check(format!("as_strided([2], [1], {n})"), any, None, &mut || {
                x.try_as_strided(&[2], &[1], Some(n))
            });
            check(
                format!("as_strided([{k}, 2], [{n}, 1])"),
                any,
                None,
                &mut || x.try_as_strided(&[k, 2], &[n, 1], Some(0)),
            );
            // tensor_split and chunk of an empty dim return as many pieces as asked: a list
            // of 2^40 is a memory error (found by this walk: 2^31 sections aborted the process
            // on a failed allocation).
            let empty = Tensor::zeros(&[0, 3], None);
            let splits = [
                m.try_split(n, 1),
                m.try_chunk(n, 1),
                m.try_tensor_split_indices(&[n, k], 1),
                m.try_split_with_sizes(&[n, 3 - n.clamp(-1 << 40, 1 << 40)], 1),
            ];
            let many = [
                (eager).then(|| m.try_tensor_split(n, 1)),
                (eager).then(|| empty.try_chunk(n, 0)),
            ];
            for split in splits.into_iter().chain(many.into_iter().flatten()) {
                checked.set(checked.get() + 1);
                if let Err(e) = split {
                    assert!(
                        any.contains(&e.kind) || e.kind == Memory,
                        "split by {n}, {k}: {e}"
                    );
                }
            }
            check(format!("cat of expands by {n}"), any, None, &mut || {
                let e = x.try_unsqueeze(0)?.try_expand(&[n, 6])?;
                Tensor::try_cat(&[e.clone(), e], 0)
            });
            check(format!("stack of expands by {n}"), any, None, &mut || {
                let e = x.try_expand(&[n, k, 6])?;
                Tensor::try_stack(&[e.clone(), e], 0)
            });
            // Broadcasting two expanded vectors into an n × k result.
            check(
                format!("add of expands to [{n}, {k}]"),
                any,
                None,
                &mut || {
                    let a = x.try_narrow(0, 0, 1)?.try_expand(&[n, 1])?;
                    let b = x.try_narrow(0, 0, 1)?.try_expand(&[1, k])?;
                    a.try_add(&b)
                },
            );
            check(
                format!("matmul of expands [{n}, 1] × [1, {k}]"),
                any,
                None,
                &mut || {
                    let a = x.try_narrow(0, 0, 1)?.try_expand(&[n, 1])?;
                    let b = x.try_narrow(0, 0, 1)?.try_expand(&[1, k])?;
                    a.try_matmul(&b)
                },
            );
            // Indices are data: an index outside the tensor is an `index` error at realisation.
            let idx = Tensor::new([n]);
            let outside = (!(-6..6).contains(&n)).then_some(false);
            check(format!("take([{n}])"), any, outside, &mut || {
                let t = x.try_take(&idx)?;
                t.try_realize()?;
                Ok(t)
            });
            check(format!("index_select(0, [{n}])"), any, outside, &mut || {
                let t = x.try_index_select(0, &idx)?;
                t.try_realize()?;
                Ok(t)
            });
            check(format!("gather(0, [{n}])"), any, outside, &mut || {
                let t = x.try_gather(0, &idx)?;
                t.try_realize()?;
                Ok(t)
            });
            check(format!("getitem([{n}])"), any, outside, &mut || {
                let t = x.try_getitem(&[smelt::TensorIndex::Int(n)])?;
                t.try_realize()?;
                Ok(t)
            });
        }
    }
    assert!(checked.get() > 5000, "{} calls", checked.get());
    // Storage of 2^50 f32 elements (4 PiB) and its kin: created lazily, a memory error when
    // realised, and the library goes on working.
    for dtype in dtypes {
        let t = Tensor::try_zeros(&[1 << 50], Some(dtype)).expect("2^50 elements fit in int64");
        let err = t.try_realize().map(|_| ()).unwrap_err();
        assert_eq!(err.kind, Memory, "{dtype:?}: {err}");
    }
    assert_eq!(x.sum_all().item().as_f64(), 15.0);
}

// ---- PyTorch 2.15 sweep (tests/fixtures/sweep215.jsonl) -----------------------------------
// What replaying scripts/sweep215.py's draw found, one test per class of fix; the fixture
// (tests/sweep215.rs) holds the recorded cases themselves.

fn kind(r: smelt::Result<Tensor>) -> ErrorKind {
    r.expect_err("PyTorch raises here").kind
}

/// Empty inputs: PyTorch returns before the checks and the kernels that would need elements.
#[test]
fn empty_inputs_return_before_pytorchs_checks() {
    // roll: a preserve-format clone, whatever the dims; an empty tensor keeps its strides.
    let e = Tensor::zeros(&[2, 1, 0], None).expand(&[2, 3, 0]);
    let r = e
        .try_roll(&[1], &[5])
        .expect("roll of an empty tensor ignores its dims");
    assert_eq!((r.shape(), r.stride()), (&[2, 3, 0][..], vec![1, 0, 1]));
    assert!(!r.shares_storage(&e));
    let stepped = Tensor::zeros(&[0], None).getitem(&[Slice(None, None, Some(2))]);
    assert_eq!(stepped.roll(&[1], &[]).stride(), vec![2]);
    // roll of a 0-dim tensor along a dim is an index error (it was a panic), without dims a copy.
    let s = Tensor::scalar(3.0, DType::F32);
    assert_eq!(kind(s.try_roll(&[-1], &[-1])), ErrorKind::Index);
    assert_eq!(values(&s.roll(&[1], &[])), [3.0]);
    // softmax of an empty integer tensor: an empty integer tensor, not a dtype error.
    let ints = Tensor::zeros(&[3, 0], Some(DType::I16));
    for r in [ints.softmax(1, None), ints.log_softmax(0, None)] {
        assert_eq!(
            (r.dtype(), r.shape(), r.stride()),
            (DType::I16, &[3, 0][..], vec![1, 1])
        );
    }
    assert_eq!(
        kind(Tensor::zeros(&[2], Some(DType::I32)).try_softmax(0, None)),
        ErrorKind::DType
    );
    // Integer division by zero divides nothing when the result is empty.
    let empty = Tensor::zeros(&[0, 2], Some(DType::I64));
    let q = empty.try_div_mode(Scalar::Int(0), Some(smelt::RoundingMode::Floor));
    assert_eq!(q.expect("nothing to divide").shape(), &[0, 2]);
    let zero = Tensor::zeros(&[2], Some(DType::I64));
    let r = empty.try_binary(&zero, smelt::BinaryOp::Remainder);
    assert_eq!(r.expect("broadcasts to [0, 2]").shape(), &[0, 2]);
    assert_eq!(
        kind(
            Tensor::ones(&[2], Some(DType::I64))
                .try_binary(Tensor::new([0i64, 0]), smelt::BinaryOp::Remainder)
        ),
        ErrorKind::Value
    );
}

/// Composite results take the layout PyTorch's kernels allocate: a reduction's row-major
/// strides for mean/var/std (also when empty), the product's elementwise strides for `outer`.
#[test]
fn composite_results_have_pytorchs_strides_when_empty() {
    let x = Tensor::zeros(&[3, 2, 0], None).permute(&[2, 0, 1]);
    let m = x.mean(&[1i64][..], true, None);
    assert_eq!((m.shape(), m.stride()), (&[0, 1, 2][..], vec![2, 2, 1]));
    let v = Tensor::zeros(&[0, 1], None).var(&[1i64][..], 1.0, true);
    assert_eq!(v.stride(), vec![1, 1]);
    let s = Tensor::zeros(&[2, 0, 3], None).std(&[2i64][..], 0.0, true);
    assert_eq!(s.stride(), vec![1, 1, 1]);
    let o = Tensor::zeros(&[0], None).outer(&Tensor::ones(&[2], None).getitem(&[Slice(
        None,
        Some(1),
        None,
    )]));
    assert_eq!((o.shape(), o.stride()), (&[0, 1][..], vec![1, 0]));
    // pow(Tensor, Scalar) is a unary op in PyTorch: an empty input is laid out row-major.
    let p = Tensor::zeros(&[0, 2, 1, 2], None).permute(&[3, 2, 0, 1]);
    assert_eq!(p.stride(), vec![1, 2, 4, 2]);
    let q = p
        .try_binary(Scalar::Bool(true), smelt::BinaryOp::Pow)
        .expect("pow");
    assert_eq!(q.stride(), vec![2, 2, 2, 1]);
    let o = Tensor::ones(&[2], None).outer(&Tensor::ones(&[3], None));
    assert_eq!((o.stride(), values(&o)), (vec![3, 1], vec![1.0; 6]));
}

/// Flattening 0-dim and 1-dim inputs: `ravel` is `view(-1)` of the contiguous tensor (an empty
/// 1-D tensor keeps its stride), `flatten` wraps its dims against [-1, 0] for a 0-dim tensor,
/// `unflatten` refuses a 0-dim tensor's dim.
#[test]
fn flattening_zero_and_one_dim_inputs() {
    let stepped = Tensor::zeros(&[0], None).getitem(&[Slice(None, None, Some(2))]);
    let r = stepped.ravel();
    assert_eq!((r.stride(), r.shares_storage(&stepped)), (vec![2], true));
    let expanded = Tensor::zeros(&[1], None).expand(&[0]);
    assert_eq!(expanded.ravel().stride(), vec![0]);
    let s = Tensor::scalar(1.5, DType::F32);
    assert_eq!(s.flatten(-1, 0).shape(), &[1]);
    assert_eq!(kind(s.try_flatten(1, -1)), ErrorKind::Index);
    assert_eq!(kind(s.try_flatten(0, -2)), ErrorKind::Index);
    assert_eq!(kind(s.try_unflatten(0, &[1])), ErrorKind::Index);
    assert_eq!(kind(s.try_unflatten(-1, &[-1])), ErrorKind::Index);
}

/// Which error comes first when several apply, as PyTorch checks them.
#[test]
fn errors_come_in_pytorchs_order() {
    // amax/amin of an empty input: each listed dim wrapped, then checked for size 0, in order;
    // a repeated dim only after.
    let e = Tensor::zeros(&[2, 0], None);
    assert_eq!(kind(e.try_amin(&[-1, 2], false)), ErrorKind::Shape);
    assert_eq!(kind(e.try_amax(&[2, -1], false)), ErrorKind::Index);
    assert_eq!(kind(e.try_amax(&[1, -1], false)), ErrorKind::Shape);
    assert_eq!(
        kind(Tensor::zeros(&[2, 3], None).try_amax(&[1, -1], false)),
        ErrorKind::Value
    );
    // stack wraps its dim before comparing sizes; tensor_split before counting sections.
    let a = Tensor::zeros(&[2], None);
    let b = Tensor::zeros(&[2, 3], None);
    assert_eq!(
        kind(Tensor::try_stack(&[a.clone(), b.clone()], 5)),
        ErrorKind::Index
    );
    assert_eq!(
        kind(Tensor::try_stack(&[a.clone(), b], 1)),
        ErrorKind::Shape
    );
    assert_eq!(
        a.try_tensor_split(0, 1).map(|_| ()).unwrap_err().kind,
        ErrorKind::Index
    );
    assert_eq!(
        a.try_tensor_split(0, 0).map(|_| ()).unwrap_err().kind,
        ErrorKind::Value
    );
    // In place: overlap, then shape, then the result type, then a zero divisor.
    let x = Tensor::zeros(&[1, 3], Some(DType::I64)).expand(&[2, 3]);
    assert_eq!(
        x.try_binary_(Scalar::Float(2.0), smelt::BinaryOp::Add, None)
            .unwrap_err()
            .kind,
        ErrorKind::Overlap
    );
    let flag = Tensor::scalar(0.0, DType::Bool);
    let zero_u8 = Tensor::zeros(&[], Some(DType::U8));
    assert_eq!(
        flag.try_div_(&zero_u8, Some(smelt::RoundingMode::Trunc))
            .unwrap_err()
            .kind,
        ErrorKind::DType
    );
    // Out of place: shapes that do not broadcast before a zero divisor or a refused dtype.
    let i = Tensor::ones(&[6], Some(DType::I64));
    let z = Tensor::zeros(&[5], Some(DType::I64));
    assert_eq!(
        kind(i.try_div_mode(&z, Some(smelt::RoundingMode::Floor))),
        ErrorKind::Shape
    );
    let f = Tensor::ones(&[4], None);
    assert_eq!(
        kind(f.try_binary(Tensor::ones(&[3], None), smelt::BinaryOp::BitAnd)),
        ErrorKind::Shape
    );
    assert_eq!(
        kind(f.try_binary(&f, smelt::BinaryOp::BitAnd)),
        ErrorKind::DType
    );
    let flags = Tensor::new([true, false]);
    let three = Tensor::new([true, true, false]);
    assert_eq!(
        kind(flags.try_binary(three, smelt::BinaryOp::DivFloor)),
        ErrorKind::Shape
    );
    assert_eq!(
        kind(flags.try_binary(&flags, smelt::BinaryOp::DivFloor)),
        ErrorKind::DType
    );
}

/// An explicit empty dim list: `all`/`any` reduce nothing (`self != 0`, row-major; uint8 stays
/// uint8), `logsumexp` reduces everything and then, without keepdim, fails as PyTorch 2.15 does.
#[test]
fn empty_dim_lists_follow_pytorch() {
    let x = Tensor::new([[0.0f32, 2.0, f32::NAN], [1.0, 0.0, 3.0]]).t();
    let a = x.all_dims(&[], false);
    assert_eq!(
        (a.dtype(), a.shape(), a.stride()),
        (DType::Bool, &[3, 2][..], vec![2, 1])
    );
    assert_eq!(values(&a), [0.0, 1.0, 1.0, 0.0, 1.0, 1.0]);
    let u = Tensor::new([0u8, 3]).any_dims(&[], true);
    assert_eq!((u.dtype(), values(&u)), (DType::U8, vec![0.0, 1.0]));
    assert_eq!(x.all_dims(&[0], false).shape(), &[2]);
    assert_eq!(
        kind(x.try_logsumexp(&[] as &[i64], false)),
        ErrorKind::Shape
    );
    assert_eq!(x.logsumexp(&[] as &[i64], true).shape(), &[1, 1]);
    assert_eq!(
        Tensor::scalar(2.0, DType::F32)
            .logsumexp(&[] as &[i64], false)
            .shape(),
        &[] as &[usize]
    );
    let e = Tensor::zeros(&[0, 3], None).logsumexp(&[] as &[i64], false);
    assert_eq!(values(&e), [f64::NEG_INFINITY]);
}
