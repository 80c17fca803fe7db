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
    assert_eq!(p.roll(&[1], &[0]).stride(), vec![3, 3, 1]);
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
