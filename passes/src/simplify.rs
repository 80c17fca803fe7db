//! `simplify`: common-subexpression elimination, constant folding and exact algebraic
//! identities, as local rewrites run to a fixpoint.
//!
//! What: two nodes with the same op, dtype, output view and inputs (read through the same
//! views) become one (consumers are redirected to the first); an elementwise node whose
//! inputs are all constant fills becomes a fill of the folded value (`zeros(3) + 1`); `x * 1`, `x - 0`,
//! `--x`-style identities that are exact in floating point, and `where(c, True, False)`,
//! redirect consumers to `x` (or `c`) when the views agree. Dead code needs no pass of its own: the schedule runs only nodes an output
//! depends on, and a redirected node loses its consumers.
//!
//! Why it is correct: nodes are pure functions of their inputs; folding uses the same scalar
//! semantics the backends implement (`smelt_ir::scalar_ops`, the reference interpreter's).
//!
//! Example: `(x + 1) * (x + 1)` records two `add` nodes; after `simplify` the `mul` reads one.

use petgraph::Direction;
use petgraph::visit::EdgeRef;
use smelt_ir::graph::{Graph, NodeId, Op};
use smelt_ir::{BinaryOp, Scalar, UnaryOp, scalar_ops};

/// Redirects every consumer edge of `from` to read `to` instead (same views).
fn redirect(g: &mut Graph, from: NodeId, to: NodeId) {
    let edges: Vec<_> = g
        .graph
        .edges_directed(from, Direction::Outgoing)
        .map(|e| (e.id(), e.target(), e.weight().clone()))
        .collect();
    g.remove_edges(edges.iter().map(|(id, _, _)| *id).collect());
    for (_, target, weight) in edges {
        g.graph.add_edge(to, target, weight);
    }
}

/// The key under which two nodes compute the same buffer.
fn key(g: &Graph, id: NodeId) -> Option<String> {
    let n = g.node(id);
    match n.op {
        Op::Input { .. } | Op::Assign | Op::Library(_) => None,
        Op::Fill { .. }
        | Op::Unary { .. }
        | Op::Binary { .. }
        | Op::Where
        | Op::Complex
        | Op::Cast
        | Op::Reduce { .. }
        | Op::Random { .. } => {
            let ins: Vec<String> = g
                .inputs(id)
                .iter()
                .map(|(src, v)| format!("{}{v}", src.index()))
                .collect();
            Some(format!(
                "{:?}|{}|{}|{}|{}",
                n.op,
                n.dtype,
                n.out,
                n.len,
                ins.join(";")
            ))
        }
    }
}

/// Is `(src, view)` a constant fill equal to `value`?
fn is_const(g: &Graph, src: NodeId, value: f64) -> bool {
    matches!(g.node(src).op, Op::Fill { value: v } if v.as_f64() == value && matches!(v, Scalar::Int(_) | Scalar::Float(_)))
}

/// Is `src` a constant bool fill of `value`?
fn is_bool(g: &Graph, src: NodeId, value: bool) -> bool {
    matches!(g.node(src).op, Op::Fill { value: Scalar::Bool(v) } if v == value)
}

/// An identity `id` computes the same values as one of its inputs, read the same way:
/// returns that input when the node can be bypassed.
fn identity_of(g: &Graph, id: NodeId) -> Option<NodeId> {
    let n = g.node(id);
    let ins = g.inputs(id);
    let pass_through = |k: usize| -> Option<NodeId> {
        let (src, view) = &ins[k];
        let s = g.node(*src);
        // Bypassing is exact only when the input is read as the node writes (same layout,
        // same dtype) and the input's buffer is laid out the same.
        (s.dtype == n.dtype
            && *view == n.out
            && s.out == n.out
            && s.len == n.len
            && !g.outputs.contains(&id))
        .then_some(*src)
    };
    match n.op {
        // Not for complex values: `(inf + 0i) * 1` has a NaN imaginary part.
        Op::Binary {
            op: BinaryOp::Mul,
            compute,
        } if compute == n.dtype && !compute.is_complex() => {
            if is_const(g, ins[1].0, 1.0) {
                pass_through(0)
            } else if is_const(g, ins[0].0, 1.0) {
                pass_through(1)
            } else {
                None
            }
        }
        Op::Binary {
            op: BinaryOp::Sub,
            compute,
        } if compute == n.dtype && is_const(g, ins[1].0, 0.0) => pass_through(0),
        Op::Binary {
            op: BinaryOp::Div,
            compute,
        } if compute == n.dtype && !compute.is_complex() && is_const(g, ins[1].0, 1.0) => {
            pass_through(0)
        }
        Op::Unary {
            op: UnaryOp::Neg, ..
        } => {
            let (src, view) = &ins[0];
            let inner = g.node(*src);
            if let Op::Unary {
                op: UnaryOp::Neg, ..
            } = inner.op
                && *view == n.out
                && inner.dtype == n.dtype
            {
                let (x, xv) = &g.inputs(*src)[0];
                let xn = g.node(*x);
                (xn.dtype == n.dtype
                    && *xv == inner.out
                    && xn.out == n.out
                    && xn.len == n.len
                    && !g.outputs.contains(&id))
                .then_some(*x)
            } else {
                None
            }
        }
        // `where(c, True, False)` is `c` (a bool mask built by `triu`/`tril` of `ones`): a
        // bool select a row kernel could not run in SIMD lanes.
        Op::Where
            if n.dtype == smelt_ir::DType::Bool
                && is_bool(g, ins[1].0, true)
                && is_bool(g, ins[2].0, false) =>
        {
            pass_through(0)
        }
        Op::Input { .. }
        | Op::Fill { .. }
        | Op::Unary { .. }
        | Op::Binary { .. }
        | Op::Where
        | Op::Complex
        | Op::Cast
        | Op::Assign
        | Op::Reduce { .. }
        | Op::Library(_)
        | Op::Random { .. } => None,
    }
}

/// Folds an elementwise node whose inputs are all constant fills into a fill of the value,
/// computed with the runtime's own scalar semantics (`smelt_ir::scalar_ops`).
fn fold(g: &mut Graph, id: NodeId) -> bool {
    let n = g.node(id);
    let ins = g.inputs(id);
    // Complex values are computed by the lowering's expansion (`smelt_ir::complex`), not by
    // the scalar semantics: a complex node, or one reading a fill through a reinterpreting,
    // conjugating or negating view, stays.
    if n.dtype.is_complex()
        || ins
            .iter()
            .any(|(src, v)| !v.read.is_plain() || g.node(*src).dtype.is_complex())
        || matches!(n.op, Op::Unary { compute, .. } | Op::Binary { compute, .. } if compute.is_complex())
    {
        return false;
    }
    let mut consts = vec![];
    for (src, _) in &ins {
        match g.node(*src).op {
            Op::Fill { value } => consts.push((value, g.node(*src).dtype)),
            Op::Input { .. }
            | Op::Unary { .. }
            | Op::Binary { .. }
            | Op::Where
            | Op::Complex
            | Op::Cast
            | Op::Assign
            | Op::Reduce { .. }
            | Op::Library(_)
            | Op::Random { .. } => return false,
        }
    }
    let value = match n.op {
        Op::Cast => consts[0].0.cast(n.dtype),
        Op::Unary { op, compute } => {
            scalar_ops::unary(op, consts[0].0.cast(compute), compute).cast(n.dtype)
        }
        Op::Binary { op, compute } => scalar_ops::binary(
            op,
            consts[0].0.cast(compute),
            consts[1].0.cast(compute),
            compute,
        )
        .cast(n.dtype),
        Op::Where => {
            if consts[0].0.as_bool() {
                consts[1].0.cast(n.dtype)
            } else {
                consts[2].0.cast(n.dtype)
            }
        }
        Op::Input { .. }
        | Op::Fill { .. }
        | Op::Assign
        | Op::Reduce { .. }
        | Op::Library(_)
        | Op::Random { .. }
        | Op::Complex => return false,
    };
    let edges: Vec<_> = g
        .graph
        .edges_directed(id, Direction::Incoming)
        .map(|e| e.id())
        .collect();
    g.remove_edges(edges);
    g.graph[id].op = Op::Fill { value };
    true
}

/// The `simplify` pass.
pub fn simplify(g: &mut Graph) {
    let mut seen: std::collections::HashMap<String, NodeId> = std::collections::HashMap::new();
    for id in g.topo_order() {
        fold(g, id);
        if let Some(x) = identity_of(g, id) {
            redirect(g, id, x);
            continue;
        }
        if let Some(k) = key(g, id) {
            match seen.get(&k) {
                Some(&first) if !g.outputs.contains(&id) => redirect(g, id, first),
                Some(_) | None => {
                    seen.insert(k, id);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smelt_ir::graph::Node;
    use smelt_ir::{DType, View};

    #[test]
    fn constants_fold_and_duplicates_merge() {
        let mut g = Graph::new();
        let two = g.add_node(
            Node::contiguous(
                Op::Fill {
                    value: Scalar::Float(2.0),
                },
                DType::F32,
                &[],
            ),
            vec![],
        );
        let b = View::new(vec![4], vec![0], 0);
        let sq = g.add_node(
            Node::contiguous(
                Op::Binary {
                    op: BinaryOp::Mul,
                    compute: DType::F32,
                },
                DType::F32,
                &[4],
            ),
            vec![(two, b.clone()), (two, b)],
        );
        let x = g.add_node(
            Node::contiguous(Op::Input { slot: 0 }, DType::F32, &[4]),
            vec![],
        );
        let v = View::contiguous(&[4]);
        let e1 = g.add_node(
            Node::contiguous(
                Op::Unary {
                    op: UnaryOp::Exp,
                    compute: DType::F32,
                },
                DType::F32,
                &[4],
            ),
            vec![(x, v.clone())],
        );
        let e2 = g.add_node(
            Node::contiguous(
                Op::Unary {
                    op: UnaryOp::Exp,
                    compute: DType::F32,
                },
                DType::F32,
                &[4],
            ),
            vec![(x, v.clone())],
        );
        let add = g.add_node(
            Node::contiguous(
                Op::Binary {
                    op: BinaryOp::Add,
                    compute: DType::F32,
                },
                DType::F32,
                &[4],
            ),
            vec![(e1, v.clone()), (e2, v.clone())],
        );
        let out = g.add_node(
            Node::contiguous(
                Op::Binary {
                    op: BinaryOp::Mul,
                    compute: DType::F32,
                },
                DType::F32,
                &[4],
            ),
            vec![(add, v.clone()), (sq, v)],
        );
        g.outputs = vec![out];
        simplify(&mut g);
        assert_eq!(
            g.node(sq).op,
            Op::Fill {
                value: Scalar::Float(4.0)
            }
        );
        let ins: Vec<NodeId> = g.inputs(add).iter().map(|(n, _)| *n).collect();
        assert_eq!(ins[0], ins[1], "the two exps are one node now");
        let live = g.live();
        assert!(live[e1.index()] != live[e2.index()]);
    }

    #[test]
    fn a_bool_select_of_true_and_false_is_its_condition() {
        let mut g = Graph::new();
        let v = View::contiguous(&[4]);
        let scalar = View::new(vec![4], vec![0], 0);
        let fill = |g: &mut Graph, b: bool| {
            g.add_node(
                Node::contiguous(
                    Op::Fill {
                        value: Scalar::Bool(b),
                    },
                    DType::Bool,
                    &[],
                ),
                vec![],
            )
        };
        let c = g.add_node(
            Node::contiguous(Op::Input { slot: 0 }, DType::Bool, &[4]),
            vec![],
        );
        let (t, f) = (fill(&mut g, true), fill(&mut g, false));
        let select = |g: &mut Graph, a: NodeId, b: NodeId| {
            g.add_node(
                Node::contiguous(Op::Where, DType::Bool, &[4]),
                vec![(c, v.clone()), (a, scalar.clone()), (b, scalar.clone())],
            )
        };
        let same = select(&mut g, t, f);
        let flipped = select(&mut g, f, t);
        let out = g.add_node(
            Node::contiguous(
                Op::Binary {
                    op: BinaryOp::BitAnd,
                    compute: DType::Bool,
                },
                DType::Bool,
                &[4],
            ),
            vec![(same, v.clone()), (flipped, v.clone())],
        );
        g.outputs = vec![out];
        simplify(&mut g);
        let ins: Vec<NodeId> = g.inputs(out).iter().map(|(n, _)| *n).collect();
        assert_eq!(
            ins,
            [c, flipped],
            "where(c, True, False) is c; the flipped one stays"
        );
    }
}
