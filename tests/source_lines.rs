//! Every node an op records names the user's line (`#[track_caller]`, DESIGN §8), composites
//! included: softmax, log_softmax, mean, var, std, logsumexp, a layernorm written from
//! primitives, clamp, addmm, outer, round with decimals, count_nonzero, masked_fill, cat/stack,
//! copying reshapes, casts, in-place ops and random draws record several nodes each — scalar
//! fills, casts and reshapes among them — and none may name a file of smelt's own.

use smelt::prelude::*;
use smelt::{BinaryOp, UnaryOp};
use std::collections::BTreeSet;

/// The recorded lines of every node of `t`'s pending graph that is not a realized input, after
/// checking that every node (inputs too) names this file.
fn node_lines(t: &Tensor) -> BTreeSet<u32> {
    let dump = t.graph();
    let graph = dump.graph();
    let mut lines = BTreeSet::new();
    for id in graph.graph.node_indices() {
        let node = &graph.graph[id];
        let location = node
            .location
            .unwrap_or_else(|| panic!("node {:?} has no location:\n{dump}", node.op));
        assert_eq!(
            location.file(),
            file!(),
            "node {:?} names {location}, not the test's line:\n{dump}",
            node.op
        );
        if !matches!(node.op, smelt_ir::graph::Op::Input { .. }) {
            lines.insert(location.line());
        }
    }
    lines
}

/// Asserts that the pending graph of `t` holds computed nodes and that they all name `line`.
#[track_caller]
fn recorded_on(t: &Tensor, line: u32) {
    let lines = node_lines(t);
    assert_eq!(lines, BTreeSet::from([line]), "{}", t.graph());
}

fn input(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_vec((0..n).map(|i| i as f32 * 0.25 - 1.0).collect(), shape)
}

#[test]
fn reductions_and_softmax_name_the_callers_line() {
    let x = input(&[4, 6]);
    let h = x.to_dtype(DType::F16);
    h.realize();
    #[rustfmt::skip]
    let cases: Vec<(Tensor, u32)> = vec![
        (x.softmax(1, None), line!()),
        (x.log_softmax(0, None), line!()),
        (x.softmax(-1, Some(DType::F64)), line!()),
        (h.softmax(1, None), line!()),
        (h.log_softmax(1, None), line!()),
        (x.mean(&[1], false, None), line!()),
        (x.mean(&[0, 1], true, Some(DType::F64)), line!()),
        (x.var(&[1], 1.0, false), line!()),
        (x.std(&[0], 0.0, true), line!()),
        (h.var(&[1], 1.0, false), line!()),
        (h.std(&[1], 1.0, true), line!()),
        (x.logsumexp(&[1], false), line!()),
        (x.logsumexp(&[0], true), line!()),
        (h.logsumexp(&[1], false), line!()),
        (Tensor::from_vec(vec![1i64, 2, 3], &[3]).logsumexp(&[0], false), line!()),
        (x.sum(&[1], false, Some(DType::F64)), line!()),
        (x.count_nonzero(&[1]), line!()),
        (x.prod(Some(0), false, None), line!()),
        (x.max_dim(1, false).0, line!()),
        (x.cumsum(0, Some(DType::F64)), line!()),
    ];
    for (t, line) in &cases {
        recorded_on(t, *line);
    }
}

#[test]
fn named_composites_name_the_callers_line() {
    let x = input(&[2, 3]).named(&[Some("N"), Some("C")]);
    #[rustfmt::skip]
    let cases: Vec<(Tensor, u32)> = vec![
        (x.softmax("C", None), line!()),
        (x.log_softmax("N", None), line!()),
        (x.var("C", 1.0, false), line!()),
        (x.std("N", 1.0, true), line!()),
        (x.mean("C", false, None), line!()),
        (x.logsumexp("C", true), line!()),
    ];
    for (t, line) in &cases {
        recorded_on(t, *line);
    }
}

#[test]
fn elementwise_composites_name_the_callers_line() {
    let x = input(&[4, 6]);
    let w = input(&[6]);
    let m = input(&[6, 5]);
    let b = input(&[5]);
    let mask = x.gt(0.0);
    mask.realize();
    let i = Tensor::from_vec((0..24i64).collect(), &[4, 6]);
    #[rustfmt::skip]
    let cases: Vec<(Tensor, u32)> = vec![
        // A layernorm written from primitives, on one line.
        ((&x - x.mean(&[1], true, None)) / (x.var(&[1], 0.0, true) + 1e-5).sqrt() * &w + 0.5, line!()),
        (x.clamp(Some(0.0.into()), Some(1.0.into())), line!()),
        (x.clamp(Some((&w).into()), None), line!()),
        (b.addmm(&x, &m), line!()),
        (b.try_addmm(&x, &m, Scalar::Float(0.5), Scalar::Float(2.0)).unwrap(), line!()),
        (w.outer(&b), line!()),
        (x.try_round(2).unwrap(), line!()),
        (x.try_add_scaled(&w, 3, BinaryOp::Sub).unwrap(), line!()),
        (x.try_div_mode(2.0, Some(RoundingMode::Floor)).unwrap(), line!()),
        (x.masked_fill(&mask, 0.5), line!()),
        (Tensor::r#where(&mask, &x, 2.0), line!()),
        (i.isinf(), line!()),
        (i.isfinite(), line!()),
        (i.exp(), line!()),
        (x.pow(2), line!()),
        (x.to_dtype(DType::I32), line!()),
        (x.t().contiguous(), line!()),
        (x.t().reshape(&[24]), line!()),
        (x.t().flatten(0, 1), line!()),
        (x.t().ravel(), line!()),
        (x.deep_clone(), line!()),
        (Tensor::cat(&[x.clone(), x.clone()], 0), line!()),
        (Tensor::stack(&[w.clone(), w.clone()], 1), line!()),
        (x.flip(&[0]), line!()),
        (x.roll(&[1], &[1]), line!()),
        (x.repeat(&[2, 1]), line!()),
        (x.tril(0), line!()),
        (x.matmul(&m), line!()),
        (w.dot(&w), line!()),
        (x.zeros_like(None, None), line!()),
        (x.rand_like(None), line!()),
        (x.dropout(0.5, true), line!()),
        (x.sigmoid().bernoulli(), line!()),
        (x.t().named(&[Some("A"), Some("B")]).flatten_named(0, 1, "AB"), line!()),
    ];
    for (t, line) in &cases {
        recorded_on(t, *line);
    }
}

#[test]
fn inplace_ops_name_the_callers_line() {
    let fresh = || {
        let x = input(&[4, 6]);
        x.realize();
        x
    };
    let w = input(&[6]);
    let mask = fresh().gt(0.0);
    mask.realize();
    let x = fresh();
    x.add_(&w);
    let line = line!() - 1;
    recorded_on(&x, line);
    let x = fresh();
    x.try_add_(&w, Some(Scalar::Int(2))).unwrap();
    let line = line!() - 1;
    recorded_on(&x, line);
    let x = fresh();
    x.try_clamp_(Some(0.0.into()), Some(1.0.into())).unwrap();
    let line = line!() - 1;
    recorded_on(&x, line);
    let x = fresh();
    x.masked_fill_(&mask, 2.0);
    let line = line!() - 1;
    recorded_on(&x, line);
    let x = fresh();
    x.setitem(&[TensorIndex::Int(0)], 3.0);
    let line = line!() - 1;
    recorded_on(&x, line);
    let x = fresh();
    x.try_unary_(UnaryOp::Exp).unwrap();
    let line = line!() - 1;
    recorded_on(&x, line);
    let x = fresh();
    x.uniform_(0.0, 1.0);
    let line = line!() - 1;
    recorded_on(&x, line);
    let mut x = fresh();
    x *= 2.0;
    let line = line!() - 1;
    recorded_on(&x, line);
}

#[test]
fn more_inplace_and_indexing_ops_name_the_callers_line() {
    let fresh = || {
        let x = input(&[4, 6]);
        x.realize();
        x
    };
    let x = fresh();
    x.normal_(0.0, 2.0);
    let line = line!() - 1;
    recorded_on(&x, line);
    let x = fresh();
    x.exponential_(2.0);
    let line = line!() - 1;
    recorded_on(&x, line);
    let x = fresh();
    x.bernoulli_(0.5);
    let line = line!() - 1;
    recorded_on(&x, line);
    let x = fresh();
    let i = Tensor::from_vec(vec![0i64, 2], &[2]);
    i.realize();
    x.setitem(&[TensorIndex::Tensor(i.clone())], 1.5);
    let line = line!() - 1;
    recorded_on(&x, line);
    let (g, line) = (fresh().getitem(&[TensorIndex::Tensor(i)]), line!());
    recorded_on(&g, line);
    let idx = Tensor::from_vec(vec![1i64], &[1]);
    let (r, line) = (fresh().index_select(1, &idx), line!());
    recorded_on(&r, line);
}

/// An op whose result shape depends on data realizes it on the host (a graph break): the
/// realized result names the line too.
#[test]
fn graph_breaks_name_the_callers_line() {
    let x = input(&[4, 6]);
    let mask = x.gt(0.0);
    #[rustfmt::skip]
    let cases: Vec<(Tensor, u32)> = vec![
        (x.masked_select(&mask), line!()),
        (x.nonzero(), line!()),
    ];
    for (t, line) in &cases {
        let dump = t.graph();
        let graph = dump.graph();
        for id in graph.graph.node_indices() {
            let location = graph.graph[id].location.expect("a location");
            assert_eq!(
                (location.file(), location.line()),
                (file!(), *line),
                "{dump}"
            );
        }
    }
}

/// Factories and loaders: their nodes (realized inputs included) name the caller's line.
#[test]
fn factories_name_the_callers_line() {
    let npy = input(&[2, 3]).to_npy_bytes();
    #[rustfmt::skip]
    let cases: Vec<(Tensor, u32)> = vec![
        (Tensor::new([[1.0f32, 2.0], [3.0, 4.0]]), line!()),
        (Tensor::from_vec(vec![1i64, 2], &[2]), line!()),
        (Tensor::scalar(1.5, DType::F64), line!()),
        (Tensor::zeros(&[2, 3], None), line!()),
        (Tensor::full(&[2, 3], 7, Some(DType::I32)), line!()),
        (Tensor::empty_strided(&[2, 3], &[1, 2], None), line!()),
        (Tensor::arange(0, 10, 3, None), line!()),
        (Tensor::arange(0.0, 1.0, 0.25, Some(DType::F64)), line!()),
        (Tensor::linspace(0.0, 1.0, 5, None), line!()),
        (Tensor::logspace(0.0, 2.0, 3, 10.0, None), line!()),
        (Tensor::eye(3, Some(4), None), line!()),
        (Tensor::rand(&[2, 3], None), line!()),
        (Tensor::randn(&[2, 3], Some(DType::F64)), line!()),
        (Tensor::randint(0, 9, &[4], None), line!()),
        (Tensor::randperm(5), line!()),
        (Tensor::from_npy_bytes(&npy), line!()),
        (Tensor::from_static(&[1.0f32, 2.0], &[2]), line!()),
        (Tensor::from_arc(std::sync::Arc::from(vec![1i32, 2, 3]), &[3]), line!()),
    ];
    for (t, line) in &cases {
        let dump = t.graph();
        let graph = dump.graph();
        for id in graph.graph.node_indices() {
            let location = graph.graph[id].location.expect("a location");
            assert_eq!(
                (location.file(), location.line()),
                (file!(), *line),
                "{dump}"
            );
        }
    }
}

/// Tensors read from files name the line that loaded them.
#[test]
fn loaded_tensors_name_the_callers_line() {
    let dir = std::env::temp_dir().join(format!("smelt-source-lines-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let x = input(&[2, 3]);
    x.save_npy(dir.join("x.npy"));
    Tensor::save_npz(dir.join("x.npz"), [("x", &x)]);
    Tensor::save_safetensors(dir.join("x.safetensors"), [("x", &x)]);
    #[rustfmt::skip]
    let cases: Vec<(Tensor, u32)> = vec![
        (Tensor::load_npy(dir.join("x.npy")), line!()),
        (Tensor::load_npz(dir.join("x.npz")).remove("x").expect("x"), line!()),
        (Tensor::load_safetensors(dir.join("x.safetensors")).remove("x").expect("x"), line!()),
    ];
    for (t, line) in &cases {
        let dump = t.graph();
        let graph = dump.graph();
        for id in graph.graph.node_indices() {
            let location = graph.graph[id].location.expect("a location");
            assert_eq!(
                (location.file(), location.line()),
                (file!(), *line),
                "{dump}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).expect("the scratch directory removed");
}
