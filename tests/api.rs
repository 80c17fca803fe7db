//! End-to-end behaviour of the public API: laziness, views sharing storage, errors, printing,
//! graph dumps, realisation dropping inputs.

use smelt::prelude::*;

#[test]
fn nothing_runs_until_a_value_is_needed() {
    let a = Tensor::new([[1.0f32, 2.0], [3.0, 4.0]]);
    let b = (&a + 1.0).relu().exp();
    assert!(!b.is_realized());
    let dump = b.graph().text();
    assert!(dump.contains("relu") && dump.contains("exp"), "{dump}");
    assert!(
        dump.lines().all(|l| l.contains("tests/api.rs")),
        "every node (the scalar's fill too) carries the user's source line: {dump}"
    );
    let v = b.to_vec::<f32>();
    assert!(b.is_realized());
    let want: Vec<f32> = [2.0f32, 3.0, 4.0, 5.0].iter().map(|x| x.exp()).collect();
    assert_eq!(v.len(), want.len(), "{v:?} vs {want:?}");
    for (g, w) in v.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-6 * w.abs(), "{g} vs {w}");
    }
}

#[test]
fn views_share_storage_and_never_copy() {
    let a = Tensor::arange(0, 12, 1, None).view(&[3, 4]);
    let t = a.t();
    assert!(t.shares_storage(&a));
    assert_eq!(t.stride(), vec![1, 4]);
    assert!(!t.is_contiguous());
    let s = a.getitem(&[
        TensorIndex::Slice(Some(1), None, Some(2)),
        TensorIndex::Int(-1),
    ]);
    assert_eq!((s.shape().to_vec(), s.storage_offset()), (vec![1], 7));
    assert_eq!(s.to_vec::<i64>(), vec![7]);
    // A view adds no graph node: its dump is the storage's producer only.
    assert_eq!(t.graph().graph().graph.node_count(), 1);
}

#[test]
fn in_place_writes_are_seen_by_every_alias_but_not_by_earlier_nodes() {
    let x = Tensor::zeros(&[2, 3], None);
    let y = &x + 1.0;
    let row = x.select(0, 1);
    row.add_(5.0);
    assert_eq!(x.to_vec::<f32>(), vec![0.0, 0.0, 0.0, 5.0, 5.0, 5.0]);
    assert_eq!(y.to_vec::<f32>(), vec![1.0; 6]);
    let e = Tensor::ones(&[3, 1], None).expand(&[3, 4]);
    assert_eq!(e.try_add_(1.0, None).unwrap_err().kind, ErrorKind::Overlap);
}

#[test]
fn errors_name_the_op_and_rule() {
    let a = Tensor::ones(&[2, 3], None);
    let e = a.try_add(Tensor::ones(&[4], None)).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Shape);
    assert!(e.message.contains("must match the size"), "{e}");
    let e = a.t().try_view(&[6]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Stride);
    assert_eq!(a.try_select(2, 0).unwrap_err().kind, ErrorKind::Index);
    let e = Tensor::ones(&[2], Some(DType::I32))
        .try_add_(1.5, None)
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::DType);
    assert!(
        e.message
            .contains("result type Float can't be cast to the desired output type Int")
    );
}

/// A plain op panics with exactly its `try_` form's error (kind and message) at the caller's
/// line (`#[track_caller]`), not somewhere inside smelt.
#[test]
fn plain_forms_panic_with_the_same_message() {
    use std::sync::{Arc, Mutex};
    /// The panic seen on the thread named [`THREAD`]: its message, file and line.
    type Seen = Arc<Mutex<Option<(String, String, u32)>>>;
    const THREAD: &str = "plain-form-panics";
    let seen: Seen = Arc::default();
    let record = seen.clone();
    // The hook records the panic of our thread and leaves every other one to the hook before
    // it (tests run in parallel); it stays installed, which changes nothing for the others.
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().name() != Some(THREAD) {
            return previous(info);
        }
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        let (file, line) = info
            .location()
            .map_or((String::new(), 0), |l| (l.file().to_string(), l.line()));
        *record.lock().unwrap_or_else(|p| p.into_inner()) = Some((message, file, line));
    }));
    let t = Tensor::ones(&[2], None);
    let want = t.try_select(3, 0).unwrap_err().to_string();
    let plain = t.clone();
    let line = line!() + 3;
    let joined = std::thread::Builder::new()
        .name(THREAD.into())
        .spawn(move || plain.select(3, 0))
        .expect("spawn")
        .join();
    assert!(joined.is_err(), "select(3, 0) of a 1-d tensor must panic");
    assert!(
        want.starts_with("index error: Dimension out of range"),
        "{want}"
    );
    let seen = seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert_eq!(seen, Some((want, file!().to_string(), line)));
}

#[test]
fn printing_follows_pytorch() {
    assert_eq!(
        Tensor::new([[1.0f32, 2.0], [3.0, 4.0]]).to_string(),
        "tensor([[1., 2.],\n        [3., 4.]])"
    );
    assert_eq!(
        Tensor::new([1.5f32, -2.25]).to_string(),
        "tensor([ 1.5000, -2.2500])"
    );
    assert_eq!(
        Tensor::new([1i32, 20]).to_string(),
        "tensor([ 1, 20], dtype=torch.int32)"
    );
    assert_eq!(
        Tensor::new([true, false]).to_string(),
        "tensor([ True, False])"
    );
    assert_eq!(
        Tensor::scalar(2.5, DType::F64).to_string(),
        "tensor(2.5000, dtype=torch.float64)"
    );
}

#[test]
fn default_dtype_is_scoped_per_thread() {
    let t = with_default_dtype(DType::F64, || Tensor::ones(&[2], None));
    assert_eq!(t.dtype(), DType::F64);
    assert_eq!(Tensor::ones(&[2], None).dtype(), DType::F32);
    let h = std::thread::spawn(|| {
        set_default_dtype(DType::F16);
        Tensor::zeros(&[1], None).dtype()
    });
    assert_eq!(h.join().unwrap(), DType::F16);
    assert_eq!(get_default_dtype(), DType::F32);
}

#[test]
fn graph_dump_has_a_dot_form() {
    let a = Tensor::ones(&[2, 2], None);
    let dot = (&a * 2.0).graph().dot();
    assert!(dot.starts_with("digraph") && dot.contains("mul"), "{dot}");
}

#[test]
fn realized_nodes_drop_their_inputs() {
    let mut x = Tensor::ones(&[4], None);
    for _ in 0..50 {
        x = &x * 1.5 + 1.0;
        x.realize();
    }
    // After each realisation the graph behind `x` is one realized input, not a chain.
    assert_eq!(x.graph().graph().graph.node_count(), 1);
}

#[test]
fn seeded_generators_are_reproducible() {
    let a = Generator::new(7).randn(&[16], None).to_vec::<f32>();
    let b = Generator::new(7).randn(&[16], None).to_vec::<f32>();
    assert_eq!(a, b);
    let u = Generator::new(1).rand(&[1000], None).to_vec::<f32>();
    assert!(u.iter().all(|&x| (0.0..1.0).contains(&x)));
    let mean = u.iter().sum::<f32>() / 1000.0;
    assert!((mean - 0.5).abs() < 0.05, "{mean}");
}

#[test]
fn a_long_unrealized_chain_drops_without_overflowing_the_stack() {
    let mut x = Tensor::ones(&[2], None);
    for _ in 0..200_000 {
        x = &x + 1.0;
    }
    drop(x);
}

#[test]
fn a_long_chain_realizes_as_one_kernel() {
    let mut x = Tensor::ones(&[16], None);
    for _ in 0..1000 {
        x = &x * 1.0001 + 0.5;
    }
    assert_eq!(smelt::explain(&x).kernels.len(), 1);
    let v = x.to_vec::<f32>()[0] as f64;
    let mut want = 1.0f32;
    for _ in 0..1000 {
        want = want * 1.0001 + 0.5;
    }
    assert!(
        (v - want as f64).abs() <= 1e-3 * want as f64,
        "{v} vs {want}"
    );
}

/// Sizes and strides live inline up to rank 4 (`ir::Dims`) and, shared between clones, on the
/// heap beyond: a rank-8 tensor goes through views, a permuted copy, broadcasting and a
/// reduction on that path.
#[test]
fn tensors_of_rank_eight_view_broadcast_and_reduce() {
    let shape = [2usize, 1, 3, 1, 2, 2, 1, 3];
    let n: usize = shape.iter().product();
    let dims: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
    let a = Tensor::arange(0, n as i64, 1, None).view(&dims);
    assert_eq!(a.shape(), shape);
    assert_eq!(a.stride(), vec![36, 36, 12, 12, 6, 3, 3, 1]);
    // The flat position of a multi-index in `a`.
    let flat = |ix: &[usize]| {
        ix.iter()
            .zip(a.stride())
            .map(|(&i, s)| i * s as usize)
            .sum::<usize>()
    };
    let index = |mut f: usize, shape: &[usize]| {
        let mut ix = vec![0; shape.len()];
        for d in (0..shape.len()).rev() {
            ix[d] = f % shape[d];
            f /= shape[d];
        }
        ix
    };
    let reversed: Vec<i64> = (0..8).rev().collect();
    let p = a.permute(&reversed);
    assert!(p.shares_storage(&a));
    assert_eq!(p.stride(), vec![1, 3, 3, 6, 12, 12, 36, 36]);
    let rshape: Vec<usize> = shape.iter().rev().copied().collect();
    let want: Vec<i64> = (0..n)
        .map(|f| {
            let ix: Vec<usize> = index(f, &rshape).into_iter().rev().collect();
            flat(&ix) as i64
        })
        .collect();
    assert_eq!(p.contiguous().to_vec::<i64>(), want);
    // Broadcast against a rank-8 tensor of ones along the size-1 dims, then reduce three dims.
    let ones = Tensor::ones(&[1, 4, 1, 5, 1, 1, 2, 1], None).to_dtype(DType::I64);
    let b = &a + &ones;
    assert_eq!(b.shape(), [2, 4, 3, 5, 2, 2, 2, 3]);
    let s = b.sum(&[0, 2, 7][..], false, None);
    assert_eq!(s.shape(), [4, 5, 2, 2, 2]);
    let sums = s.to_vec::<i64>();
    for (f, got) in sums.iter().enumerate() {
        // Dims 1, 3 and 6 of `s` broadcast `a`: only dims 4 and 5 pick its elements.
        let [_, _, i4, i5, _] = index(f, &[4, 5, 2, 2, 2])[..] else {
            unreachable!("five dims")
        };
        let mut want = 0;
        for i0 in 0..2 {
            for i2 in 0..3 {
                for i7 in 0..3 {
                    want += flat(&[i0, 0, i2, 0, i4, i5, 0, i7]) as i64 + 1;
                }
            }
        }
        assert_eq!(*got, want, "element {f}");
    }
}

/// Found by a soak of random programs on strided inputs: `eliminate_copies` let an in-place
/// write update the source of a clone instead of the clone. The write copies its target's
/// whole buffer as stored, so reading the source through the clone's view (flipped, expanded)
/// lost the view.
#[test]
fn an_in_place_write_into_a_clone_of_a_strided_view_updates_the_clone() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[4]);
    let c = x.flip(&[0]).deep_clone();
    c.select(0, 0).add_(10.0);
    smelt::realize(&[&c]).unwrap();
    assert_eq!(x.to_vec::<f32>(), vec![1.0, 2.0, 3.0, 4.0]);
    assert_eq!(c.to_vec::<f32>(), vec![14.0, 3.0, 2.0, 1.0]);

    let x = Tensor::from_vec(vec![5.0f32, 6.0, 7.0, 8.0], &[4]);
    let c = x.select(0, 0).expand(&[4]).deep_clone();
    c.select(0, 1).add_(10.0);
    smelt::realize(&[&c]).unwrap();
    assert_eq!(c.to_vec::<f32>(), vec![5.0, 15.0, 5.0, 5.0]);

    let base = Tensor::from_vec((0..8).map(|i| i as f64).collect::<Vec<f64>>(), &[8, 1]);
    let c = base.flip(&[0]).deep_clone();
    c.select(0, 0).mul_(2.0);
    let y = c.exp();
    smelt::realize(&[&c, &y]).unwrap();
    let want: Vec<f64> = [14.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0, 0.0].to_vec();
    assert_eq!(c.to_vec::<f64>(), want);
    // The cpu backend's f64 exp is inline and within 1 ulp of libm's (docs/math.md).
    let y = y.to_vec::<f64>();
    assert_eq!(y.len(), want.len(), "{y:?}");
    for (got, v) in y.iter().zip(&want) {
        let ulps = (got.to_bits() as i64 - v.exp().to_bits() as i64).abs();
        assert!(ulps <= 1, "exp({v}) = {got}, libm gives {}", v.exp());
    }
}

/// The same for `index_put` (found by a soak of in-place writes through views): it too starts
/// from its target's whole buffer, and read the 24-element source of a 6-element clone.
#[test]
fn an_index_put_into_a_clone_of_a_view_updates_the_clone() {
    let x = Tensor::from_vec((0..24).map(|i| i as f32).collect::<Vec<f32>>(), &[4, 6]);
    let c = x.select(0, 1).deep_clone();
    c.setitem(
        &[TensorIndex::Tensor(Tensor::from_vec(vec![0i64, 2], &[2]))],
        50.0,
    );
    assert_eq!(c.to_vec::<f32>(), vec![50.0, 7.0, 50.0, 9.0, 10.0, 11.0]);
    let d = x.select(1, 0).contiguous();
    d.setitem(
        &[TensorIndex::Tensor(Tensor::from_vec(vec![3i64], &[1]))],
        -1.0,
    );
    assert_eq!(d.to_vec::<f32>(), vec![0.0, 6.0, 12.0, -1.0]);
    assert_eq!(x.to_vec::<f32>()[18], 18.0);
}

/// `exp2`, added as a new unary op is added (the op enum, its scalar semantics, one arm per
/// backend, the frontend's dtype rule and method): PyTorch's values, and an integer input
/// computing in the default float dtype.
#[test]
fn exp2_is_two_to_the_power() {
    let x = Tensor::new([0.0f32, 1.0, -1.0, 3.5, 10.0]);
    let want = [1.0f32, 2.0, 0.5, 11.313_708, 1024.0];
    let got = x.exp2().to_vec::<f32>();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= 1e-6 * w, "{g} vs {w}");
    }
    let i = Tensor::new([3i64, -2]);
    assert_eq!(i.exp2().dtype(), DType::F32);
    assert_eq!(i.exp2().to_vec::<f32>(), vec![8.0, 0.25]);
    assert_eq!(
        smelt::UnaryOp::from_name("exp2").map(|o| o.name()),
        Some("exp2")
    );
}

/// Threads realising graphs that share pending nodes get the right values, however their walks
/// and the storing of results interleave: each walk knows the nodes it has seen by its own
/// marks, and one walk marks at a time.
#[test]
fn threads_realising_graphs_that_share_pending_nodes_agree() {
    let base = Tensor::from_vec((0..64).map(|i| i as f32).collect(), &[8, 8]);
    let expected = |t: usize, round: usize| -> Vec<f32> {
        (0..8)
            .map(|r| {
                (0..8)
                    .map(|c| {
                        let s = (r * 8 + c) as f32 * 2.0 + round as f32;
                        s * t as f32 + s
                    })
                    .sum()
            })
            .collect()
    };
    for round in 0..20 {
        // Pending, and read by every thread's graph (twice in each: a diamond).
        let shared = &base * 2.0 + round as f64;
        std::thread::scope(|s| {
            for t in 0..4 {
                let shared = &shared;
                s.spawn(move || {
                    let y = (shared * t as f64 + shared).sum(&[1], false, None);
                    assert_eq!(y.to_vec::<f32>(), expected(t, round), "thread {t}");
                });
            }
        });
    }
}
