//! Named tensors end to end: factories, name inference through views, elementwise and
//! in-place ops, the name ops (refine_names, rename, align_to, flatten/unflatten), dims given
//! by name, and the `names` errors of PyTorch 2.11.

use smelt::prelude::*;

fn names(t: &Tensor) -> Vec<Option<String>> {
    t.names()
}

fn n(v: &[Option<&str>]) -> Vec<Option<String>> {
    v.iter().map(|s| s.map(str::to_string)).collect()
}

const N: Option<&str> = Some("N");
const C: Option<&str> = Some("C");
const H: Option<&str> = Some("H");

fn nc() -> Tensor {
    Tensor::from_vec((0..6).map(|i| i as f32).collect(), &[2, 3]).named(&[N, C])
}

#[test]
fn factories_validate_and_normalise_names() {
    let t = Tensor::zeros(&[2, 3], None).named(&[N, None]);
    assert_eq!(names(&t), n(&[N, None]));
    assert!(t.has_names());
    let unnamed = Tensor::ones(&[2], None).named(&[None]);
    assert!(!unnamed.has_names());
    assert_eq!(names(&unnamed), n(&[None]));
    assert_eq!(names(&Tensor::scalar(1.0, DType::F32)), n(&[]));

    let kind = |r: Result<Tensor>| r.unwrap_err().kind;
    assert_eq!(
        kind(Tensor::zeros(&[2, 3], None).try_named(&[N])),
        ErrorKind::Names
    );
    assert_eq!(
        kind(Tensor::zeros(&[2, 2], None).try_named(&[N, N])),
        ErrorKind::Names
    );
    assert_eq!(
        kind(Tensor::zeros(&[2], None).try_named(&[Some("1a")])),
        ErrorKind::Names
    );
    let e = Tensor::zeros(&[2, 2], None).try_named(&[N, N]).unwrap_err();
    assert_eq!(
        e.message,
        "Cannot construct a tensor with duplicate names. Got names: ['N', 'N']."
    );
}

#[test]
fn unary_casts_and_likes_keep_names() {
    let t = nc();
    for r in [
        t.exp(),
        t.neg(),
        t.to_dtype(DType::F64),
        t.deep_clone(),
        t.contiguous(),
        t.detach(),
        t.zeros_like(None, None),
    ] {
        assert_eq!(names(&r), n(&[N, C]));
    }
    // contiguous() of a contiguous tensor is the same tensor object.
    assert!(t.contiguous().is_same(&t));
}

#[test]
fn views_remove_keep_and_permute_names() {
    let t = nc();
    assert_eq!(names(&t.select("N", 1)), n(&[C]));
    assert_eq!(t.select("N", 1).to_vec::<f32>(), vec![3.0, 4.0, 5.0]);
    assert_eq!(names(&t.narrow(1, 0, 2)), n(&[N, C]));
    assert_eq!(names(&t.transpose("C", "N")), n(&[C, N]));
    assert_eq!(t.transpose("C", "N").stride(), vec![1, 3]);
    assert_eq!(names(&t.t()), n(&[C, N]));
    assert_eq!(names(&t.mt()), n(&[C, N]));
    assert_eq!(names(&t.expand(&[4, 2, 3])), n(&[None, N, C]));
    for piece in t.split(1, 0) {
        assert_eq!(names(&piece), n(&[N, C]));
    }
    let rows = t.unbind("N");
    assert_eq!(rows.len(), 2);
    assert_eq!(names(&rows[0]), n(&[C]));
    let item = t.getitem(&[TensorIndex::Slice(None, None, None), TensorIndex::Int(0)]);
    assert_eq!(names(&item), n(&[N]));
    assert_eq!(names(&t.diagonal(0, 0, 1)), n(&[None]));
    let d = t.try_diagonal_named(0, "N", "C", "D").unwrap();
    assert_eq!(names(&d), n(&[Some("D")]));
}

#[test]
fn squeeze_quirks_and_as_strided_are_unnamed() {
    let t = Tensor::zeros(&[1, 5], None).named(&[N, C]);
    assert_eq!(names(&t.squeeze()), n(&[C]));
    assert_eq!(names(&t.squeeze_dim("N")), n(&[C]));
    // 2.11: squeeze(d) of a dim whose size is not 1 returns an unnamed alias.
    let q = t.squeeze_dim(1);
    assert_eq!(q.shape(), &[1, 5]);
    assert!(!q.has_names());
    assert!(q.shares_storage(&t));
    assert!(!t.as_strided(&[5], &[1], None).has_names());
    assert_eq!(t.try_squeeze_dims(&[0]).unwrap_err().kind, ErrorKind::Names);
}

#[test]
fn binary_ops_unify_from_the_right_before_sizes() {
    let a = nc();
    let b = Tensor::ones(&[3], None).named(&[C]);
    let s = &a + &b;
    assert_eq!(names(&s), n(&[N, C]));
    assert_eq!(s.to_vec::<f32>(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let unnamed = Tensor::ones(&[2, 1], None);
    assert_eq!(names(&a.mul(&unnamed)), n(&[N, C]));
    assert_eq!(names(&a.gt(0.5)), n(&[N, C]));

    let d = Tensor::ones(&[3], None).named(&[Some("D")]);
    let e = a.try_add(&d).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Names);
    assert!(e.message.contains("dim 'C' and dim 'D'"), "{}", e.message);
    // Names are checked before sizes.
    let wrong = Tensor::ones(&[4], None).named(&[Some("D")]);
    assert_eq!(a.try_add(&wrong).unwrap_err().kind, ErrorKind::Names);
    // Misaligned: 'N' at different positions from the right.
    let x = Tensor::ones(&[2, 2], None).named(&[None, N]);
    let y = Tensor::ones(&[2, 2], None).named(&[N, None]);
    let e = x.try_add(&y).unwrap_err();
    assert!(e.message.starts_with("Misaligned dims"), "{}", e.message);
    // clamp with tensor bounds unifies too.
    let lo = Tensor::zeros(&[3], None).named(&[C]);
    assert_eq!(names(&a.clamp(Some((&lo).into()), None)), n(&[N, C]));
}

#[test]
fn refused_ops_report_names_errors() {
    let t = nc();
    let refused: Vec<Result<Tensor>> = vec![
        t.try_view(&[6]),
        t.try_reshape(&[3, 2]),
        t.try_flatten(0, 1),
        t.try_permute(&[1, 0]),
        t.try_unsqueeze(0),
        t.try_flip(&[0]),
        t.try_repeat(&[1, 1]),
        t.try_tril(0),
        t.try_maximum(&t),
        t.try_remainder(2.0),
        t.try_div_mode(2.0, Some(RoundingMode::Floor)),
        t.try_round(1),
        Tensor::try_stack(&[t.clone(), t.clone()], 0),
        Tensor::try_where(&t.gt(0.0), &t, 0.0),
        t.try_getitem(&[TensorIndex::NewAxis]),
    ];
    for r in refused {
        let e = r.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Names, "{}", e.message);
        assert!(
            e.message
                .contains("is not yet supported with named tensors")
        );
    }
    // floor_divide is supported; the same ops on unnamed tensors work.
    assert_eq!(names(&t.floor_divide(2.0)), n(&[N, C]));
    assert_eq!(t.drop_names().reshape(&[6]).shape(), &[6]);
}

#[test]
fn inplace_ops_name_an_unnamed_self_and_check_a_named_one() {
    let self_ = Tensor::zeros(&[2, 3], None);
    let alias = self_.clone();
    self_.add_(nc());
    // The same tensor object (every clone of the handle) receives the names.
    assert_eq!(names(&alias), n(&[N, C]));
    assert_eq!(alias.to_vec::<f32>(), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);

    let partial = Tensor::zeros(&[2, 3], None).named(&[N, None]);
    let other = Tensor::ones(&[2, 3], None).named(&[None, C]);
    let e = partial.try_add_(&other, None).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Names);
    assert!(e.message.starts_with("Name mismatch"), "{}", e.message);
    // The failed op changed nothing.
    assert_eq!(partial.to_vec::<f32>(), vec![0.0; 6]);
    assert_eq!(names(&partial), n(&[N, None]));

    let dst = Tensor::zeros(&[3], None);
    dst.copy_(&Tensor::ones(&[3], None).named(&[H]));
    assert_eq!(names(&dst), n(&[H]));

    // setitem writes through a temporary view: self's names never change.
    let base = Tensor::zeros(&[2, 3], None);
    base.setitem(&[TensorIndex::Int(0)], Tensor::ones(&[3], None).named(&[C]));
    assert!(!base.has_names());
    assert_eq!(base.to_vec::<f32>(), vec![1.0, 1.0, 1.0, 0.0, 0.0, 0.0]);
}

#[test]
fn refine_names_and_rename() {
    let t = Tensor::zeros(&[2, 3, 4], None).named(&[N, None, None]);
    let r = t.refine_names(&[Some("..."), C, H]);
    assert_eq!(names(&r), n(&[N, C, H]));
    assert!(r.shares_storage(&t));
    assert_eq!(names(&t), n(&[N, None, None]));
    let e = r.try_refine_names(&[N, Some("D"), H]).unwrap_err();
    assert_eq!(
        e.message,
        "refine_names: cannot coerce Tensor['N', 'C', 'H'] to Tensor['N', 'D', 'H'] because 'C' is different from 'D' at index 1"
    );
    assert!(r.try_refine_names(&[N, None, H]).is_err());
    assert!(
        r.try_refine_names(&[Some("..."), Some("...")])
            .unwrap_err()
            .message
            .contains("More than one Ellipsis")
    );

    assert_eq!(
        names(&r.rename(&[Some("A"), Some("...")])),
        n(&[Some("A"), C, H])
    );
    assert!(!r.rename(&[None]).has_names());
    let m = r.try_rename_with(&[("C", Some("D")), ("H", None)]).unwrap();
    assert_eq!(names(&m), n(&[N, Some("D"), None]));
    let e = r.try_rename_with(&[("X", Some("Y"))]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Names);
    assert!(
        e.message.contains("dim 'X' does not exist"),
        "{}",
        e.message
    );
    r.try_rename_(&[None, None, None]).unwrap();
    assert!(!r.has_names());
}

#[test]
fn align_to_and_align_as_are_strided_aliases() {
    let t = nc();
    let a = t.align_to(&[C, Some("X"), N]);
    assert_eq!(a.shape(), &[3, 1, 2]);
    assert_eq!(a.stride(), vec![1, 0, 3]);
    assert_eq!(names(&a), n(&[C, Some("X"), N]));
    assert!(a.shares_storage(&t));

    let abcd =
        Tensor::zeros(&[1, 2, 3, 4], None).named(&[Some("A"), Some("B"), Some("C"), Some("D")]);
    let e = abcd.align_to(&[Some("D"), Some("..."), Some("A")]);
    assert_eq!(names(&e), n(&[Some("D"), Some("B"), Some("C"), Some("A")]));
    assert_eq!(e.shape(), &[4, 2, 3, 1]);

    let c = Tensor::zeros(&[3], None).named(&[C]);
    let target = Tensor::zeros(&[2, 3, 5], None).named(&[N, C, H]);
    let aligned = c.align_as(&target);
    assert_eq!(aligned.shape(), &[1, 3, 1]);
    assert_eq!(aligned.stride(), vec![0, 1, 0]);

    let err = |r: Result<Tensor>| r.unwrap_err().message;
    assert!(err(t.try_align_to(&[C])).starts_with("align_to: Cannot find dim 'N'"));
    let partial = Tensor::zeros(&[2, 3], None).named(&[N, None]);
    assert!(err(partial.try_align_to(&[N, C])).contains("All input dims must be named"));
}

#[test]
fn named_flatten_and_unflatten() {
    let t = Tensor::from_vec((0..24).map(|i| i as f32).collect(), &[2, 3, 4]).named(&[
        Some("A"),
        Some("B"),
        C,
    ]);
    let f = t.flatten_named(0, 1, "AB");
    assert_eq!(f.shape(), &[6, 4]);
    assert_eq!(names(&f), n(&[Some("AB"), C]));
    assert!(f.shares_storage(&t));
    let g = t
        .try_flatten_dims(&[Dim::from("B"), Dim::from("C")], "BC")
        .unwrap();
    assert_eq!(names(&g), n(&[Some("A"), Some("BC")]));
    let e = t
        .try_flatten_dims(&[Dim::from("A"), Dim::from("C")], "X")
        .unwrap_err();
    assert_eq!(
        e.message,
        "flatten(tensor, dims, out_dim): dims ['A', 'C'] must be consecutive in Tensor['A', 'B', 'C']"
    );

    let u = f.unflatten_named("AB", &[2, -1], &[Some("X"), Some("Y")]);
    assert_eq!(u.shape(), &[2, 3, 4]);
    assert_eq!(names(&u), n(&[Some("X"), Some("Y"), C]));
    assert_eq!(u.to_vec::<f32>(), t.to_vec::<f32>());
    assert_eq!(
        f.try_unflatten(0, &[2, 3]).unwrap_err().kind,
        ErrorKind::Names
    );
    assert_eq!(
        f.try_unflatten_named("AB", &[4, 2], &[Some("X"), Some("Y")])
            .unwrap_err()
            .kind,
        ErrorKind::Shape
    );
    // Unflattening into a name the tensor already has is a duplicate.
    assert_eq!(
        f.try_unflatten_named("AB", &[2, 3], &[C, None])
            .unwrap_err()
            .kind,
        ErrorKind::Names
    );
}

#[test]
fn dims_by_name_and_cat() {
    let t = nc();
    let e = t.try_select("X", 0).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Names);
    assert_eq!(e.message, "Name 'X' not found in Tensor['N', 'C'].");
    let e = t.try_select("C", 5).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Index);
    assert!(e.message.ends_with("at dimension 'C'"), "{}", e.message);
    assert!(format!("{t}").ends_with(", names=('N', 'C'))"), "{t}");

    let u = Tensor::ones(&[1, 3], None);
    let c = Tensor::cat(&[t.clone(), u], "N");
    assert_eq!(c.shape(), &[3, 3]);
    assert_eq!(names(&c), n(&[N, C]));
    let other = Tensor::ones(&[2, 3], None).named(&[N, Some("D")]);
    let e = Tensor::try_cat(&[t.clone(), other], 0).unwrap_err();
    assert!(
        e.message.contains("attempting to cat dims"),
        "{}",
        e.message
    );
}

#[test]
fn reductions_by_name() {
    let t = nc();
    let s = t.sum("C", false, None);
    assert_eq!(names(&s), n(&[N]));
    assert_eq!(s.to_vec::<f32>(), vec![3.0, 12.0]);
    assert_eq!(names(&t.sum("C", true, None)), n(&[N, C]));
    assert_eq!(names(&t.sum(&[], false, None)), n(&[]));
    let both = vec![Dim::from("N"), Dim::from("C")];
    assert_eq!(t.mean(&both, false, None).to_vec::<f32>(), vec![2.5]);
    assert_eq!(names(&t.var(&[0], 1.0, false)), n(&[C]));
    assert_eq!(names(&t.std("N", 0.0, true)), n(&[N, C]));
    assert_eq!(names(&t.logsumexp("N", false)), n(&[C]));
    assert_eq!(names(&t.prod(Some("N"), false, None)), n(&[C]));
    let (v, i) = t.max_dim("C", false);
    assert_eq!((names(&v), names(&i)), (n(&[N]), n(&[N])));
    assert_eq!(i.to_vec::<i64>(), vec![2, 2]);
    assert_eq!(names(&t.min_dim(0, true).1), n(&[N, C]));
    assert_eq!(names(&t.max()), n(&[]));
    let e = t.try_sum("X", false, None).unwrap_err();
    assert_eq!(e.message, "Name 'X' not found in Tensor['N', 'C'].");

    // Along-dim ops keep the names.
    assert_eq!(names(&t.softmax("C", None)), n(&[N, C]));
    assert_eq!(names(&t.log_softmax(0, None)), n(&[N, C]));
    assert_eq!(names(&t.cumsum("N", None)), n(&[N, C]));
    assert_eq!(t.cumprod("C", None).to_vec::<f32>()[..3], [0.0, 0.0, 0.0]);

    // all/any: no dim gives a 0-dim result; a dim on a named tensor or a dim name is refused.
    assert_eq!(names(&t.all(&[], false)), n(&[]));
    assert_eq!(t.try_any(&[1], false).unwrap_err().kind, ErrorKind::Names);
    let e = Tensor::ones(&[2], None).try_all("N", false).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Names);
    assert!(
        e.message.starts_with("all: You passed a dimname"),
        "{}",
        e.message
    );
}

#[test]
fn ops_refused_on_names() {
    let t = nc();
    let idx = Tensor::from_vec(vec![0i64], &[1]);
    let kind = |r: Result<Tensor>| r.unwrap_err().kind;
    assert_eq!(kind(t.try_amax(&[0], false)), ErrorKind::Names);
    assert_eq!(kind(t.try_amin(&[0], false)), ErrorKind::Names);
    assert_eq!(kind(t.try_argmax(None, false)), ErrorKind::Names);
    assert_eq!(kind(t.try_argmin(Some(1), false)), ErrorKind::Names);
    assert_eq!(kind(t.try_count_nonzero(&[])), ErrorKind::Names);
    assert_eq!(t.try_sort(0, false).unwrap_err().kind, ErrorKind::Names);
    assert_eq!(kind(t.try_take(&idx)), ErrorKind::Names);
    assert_eq!(kind(t.try_nonzero()), ErrorKind::Names);
    assert_eq!(kind(t.try_index_select(0, &idx)), ErrorKind::Names);
    assert_eq!(
        kind(t.try_gather(0, &Tensor::zeros(&[1, 3], Some(DType::I64)))),
        ErrorKind::Names
    );
    let e = Tensor::ones(&[2], None)
        .try_index_select("N", &idx)
        .unwrap_err();
    assert!(
        e.message.starts_with("index_select: You passed a dimname"),
        "{}",
        e.message
    );
    // outer refuses a named self; vec2's names broadcast.
    let v = Tensor::ones(&[2], None).named(&[N]);
    assert_eq!(
        kind(v.try_outer(&Tensor::ones(&[3], None))),
        ErrorKind::Names
    );
    assert_eq!(names(&Tensor::ones(&[3], None).outer(&v)), n(&[None, N]));
    // masked_select's result is unnamed.
    let m = Tensor::ones(&[2, 3], Some(DType::Bool));
    assert_eq!(names(&t.masked_select(&m)), n(&[None]));
}

#[test]
fn matmul_names() {
    let a = Tensor::ones(&[2, 3], None).named(&[Some("A"), Some("B")]);
    let b = Tensor::ones(&[3, 4], None).named(&[Some("X"), Some("C")]);
    assert_eq!(names(&a.mm(&b)), n(&[Some("A"), Some("C")]));
    let v = Tensor::ones(&[3], None).named(&[Some("K")]);
    assert_eq!(names(&a.mv(&v)), n(&[Some("A")]));
    assert_eq!(names(&v.dot(&v)), n(&[]));
    assert_eq!(names(&v.matmul(&b)), n(&[Some("C")]));

    let e = a
        .try_mm(&Tensor::ones(&[3, 2], None).named(&[Some("B"), Some("A")]))
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Names);
    assert_eq!(
        e.message,
        "Matrix multiplying Tensor['A', 'B'] with Tensor['B', 'A'] would produce output tensor with duplicate names ['A', 'A']. Please rename the input tensors with `Tensor.rename` to prevent this."
    );
    // Sizes are checked first.
    assert_eq!(a.try_mm(&a).unwrap_err().kind, ErrorKind::Shape);

    let x = Tensor::ones(&[2, 2, 3], None).named(&[N, Some("A"), Some("B")]);
    let y = Tensor::ones(&[2, 3, 4], None).named(&[Some("M"), Some("B"), C]);
    let e = x.try_bmm(&y).unwrap_err();
    assert_eq!(
        e.message,
        "matmul: Expected 'N' (index 0 of ['N', 'A', 'B']) to match 'M' (index 0 of ['M', 'B', 'C']) but they do not match."
    );
    let y = Tensor::ones(&[2, 3, 4], None).named(&[None, Some("B"), C]);
    assert_eq!(names(&x.bmm(&y)), n(&[N, Some("A"), C]));
    // 2.11 quirk: a 3-D @ 2-D matmul may produce duplicate names.
    let w = Tensor::ones(&[3, 2], None).named(&[Some("B"), N]);
    assert_eq!(names(&x.matmul(&w)), n(&[N, Some("A"), N]));

    // addmm unifies the product's names with the bias's.
    let bias = Tensor::zeros(&[4], None).named(&[C]);
    let r = bias.addmm(&a, &b);
    assert_eq!(names(&r), n(&[Some("A"), C]));
    let bad = Tensor::zeros(&[4], None).named(&[Some("D")]);
    assert_eq!(
        bad.try_addmm(&a, &b, Scalar::Int(1), Scalar::Int(1))
            .unwrap_err()
            .kind,
        ErrorKind::Names
    );
}

#[test]
fn masked_fill_names() {
    let t = nc();
    let mask = Tensor::ones(&[3], Some(DType::Bool)).named(&[C]);
    let r = t.masked_fill(&mask, 0.0);
    assert_eq!(names(&r), n(&[N, C]));
    let other = Tensor::ones(&[3], Some(DType::Bool)).named(&[Some("D")]);
    assert_eq!(
        t.try_masked_fill(&other, 0.0).unwrap_err().kind,
        ErrorKind::Names
    );

    // In place: an unnamed self receives the mask's names ...
    let u = Tensor::zeros(&[2, 3], None);
    let m2 = Tensor::ones(&[2, 3], Some(DType::Bool)).named(&[None, C]);
    u.masked_fill_(&m2, 1.0);
    assert_eq!(names(&u), n(&[None, C]));
    assert_eq!(u.to_vec::<f32>(), vec![1.0; 6]);
    // ... and (2.11) a mask with fewer dims than a named self is a names error.
    let e = t
        .try_masked_fill_(&Tensor::ones(&[3], Some(DType::Bool)), 1.0)
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Names);
    assert_eq!(t.to_vec::<f32>(), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
}
