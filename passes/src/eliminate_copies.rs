//! `eliminate_copies`: contiguity elimination (DESIGN §5.3).
//!
//! What: a copy node (a cast to its own dtype: `contiguous()`, `clone()`, the copy of a
//! non-viewable `reshape`) whose buffer nobody observes is bypassed: each consumer reads the
//! copy's source directly, through the composition of its view of the copy with the copy's
//! view of the source, whenever that composition is one affine view. The copy becomes dead.
//!
//! Why it is correct: a copy's element at logical index `q` is its source read through `W` at
//! `q`; a consumer reading the copy through `V` reads index `M(y)` where `M` composes `V` with
//! the copy's output view; so it may read the source through `W ∘ M`.
//!
//! An in-place write (`Assign`, `index_put`) starts from its target's whole buffer as stored,
//! not through its edge's view: a copy it updates is bypassed only when the source's buffer is that copy
//! element for element (same length, read contiguously from offset 0).
//!
//! Cost rule: a copy read by more than `MAX_READERS` consumers is kept, so that one strided
//! gather feeds many streaming reads rather than each consumer reading with a bad stride.
//!
//! Example: `x.permute(0,2,3,1).contiguous() * 2 + 1` — the `mul` reads `x` through the
//! permuted view and the copy kernel disappears.

use petgraph::Direction;
use petgraph::visit::EdgeRef;
use smelt_ir::affine::compose_views;
use smelt_ir::graph::{Graph, NodeId, Op};
use smelt_ir::{Parts, View};

/// Consumers beyond which a copy is kept.
const MAX_READERS: usize = 4;

fn bypass(g: &mut Graph, copy: NodeId) -> bool {
    let node = g.node(copy);
    if !matches!(node.op, Op::Cast) || g.outputs.contains(&copy) {
        return false;
    }
    let (src, w) = g.inputs(copy).remove(0);
    // Views reading parts of a complex storage count other elements than the copy's: only
    // whole-element reads compose (their conjugate and negative bits combine).
    if g.node(src).dtype != node.dtype || w.read.parts != Parts::Whole {
        return false;
    }
    let reads: Vec<_> = g
        .graph
        .edges_directed(copy, Direction::Outgoing)
        .map(|e| (e.id(), e.target(), e.weight().clone()))
        .collect();
    if reads.is_empty() || reads.len() > MAX_READERS {
        return false;
    }
    let mut rewired = vec![];
    for (_, consumer, edge) in &reads {
        if edge.view.read.parts != Parts::Whole {
            return false;
        }
        let Some(m) = compose_views(&edge.view, &node.out) else {
            return false;
        };
        let index = m.index_through(&w);
        if index.offset < 0 {
            return false;
        }
        let view = View::new(
            edge.view.shape.clone(),
            index.strides,
            index.offset as usize,
        )
        .with_read(edge.view.read.then(w.read));
        if !view.fits_in(g.node(src).len) {
            return false;
        }
        // Library routines read plainly: the copy that conjugates or negates for one stays.
        if view.read.transforms() && matches!(g.node(*consumer).op, Op::Library(_)) {
            return false;
        }
        // An in-place write starts from its target's whole buffer as stored, whatever the
        // edge's view says: it may read the source instead only when the source's buffer
        // holds the copy's elements in the same places.
        if edge.slot == 0 && g.node(*consumer).op.updates_input_0() {
            let src_len = g.node(src).len;
            let whole = view.read.is_plain()
                && view.offset == 0
                && view.is_contiguous()
                && view.numel() == src_len
                && node.len == src_len;
            if !whole {
                return false;
            }
        }
        rewired.push((
            *consumer,
            smelt_ir::Edge {
                slot: edge.slot,
                view,
            },
        ));
    }
    g.remove_edges(reads.iter().map(|(id, _, _)| *id).collect());
    for (consumer, edge) in rewired {
        g.graph.add_edge(src, consumer, edge);
    }
    true
}

/// The `eliminate_copies` pass.
pub fn eliminate_copies(g: &mut Graph) {
    for id in g.topo_order() {
        bypass(g, id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smelt_ir::graph::Node;
    use smelt_ir::{DType, UnaryOp};

    fn node(op: Op, shape: &[usize]) -> Node {
        Node::contiguous(op, DType::F32, shape)
    }

    #[test]
    fn a_contiguous_copy_is_read_through() {
        let mut g = Graph::new();
        let x = g.add_node(node(Op::Input { slot: 0 }, &[3, 4]), vec![]);
        let t = View::contiguous(&[3, 4]).t().unwrap();
        let copy = g.add_node(node(Op::Cast, &[4, 3]), vec![(x, t.clone())]);
        let e = g.add_node(
            node(
                Op::Unary {
                    op: UnaryOp::Exp,
                    compute: DType::F32,
                },
                &[4, 3],
            ),
            vec![(copy, View::contiguous(&[4, 3]))],
        );
        g.outputs = vec![e];
        eliminate_copies(&mut g);
        assert_eq!(g.inputs(e), vec![(x, t)]);
        assert!(!g.live()[copy.index()]);
    }

    /// `c = x.clone()` through `view`, then `c[...] = 1`: the graph, `x`, the copy and the write.
    fn clone_then_write(view: View) -> (Graph, NodeId, NodeId, NodeId) {
        let mut g = Graph::new();
        let x = g.add_node(node(Op::Input { slot: 0 }, &[4]), vec![]);
        let copy = g.add_node(node(Op::Cast, &[4]), vec![(x, view)]);
        let one = g.add_node(
            node(
                Op::Fill {
                    value: smelt_ir::Scalar::Float(1.0),
                },
                &[],
            ),
            vec![],
        );
        let write = g.add_node(
            Node {
                out: View::new(vec![], vec![], 0),
                ..node(Op::Assign, &[4])
            },
            vec![
                (copy, View::contiguous(&[4])),
                (one, View::new(vec![], vec![], 0)),
            ],
        );
        g.outputs = vec![write];
        (g, x, copy, write)
    }

    #[test]
    fn a_strided_copy_an_in_place_write_updates_stays() {
        // c = x.flip(0).clone(); c[0] = 1: the write starts from c's buffer as stored.
        let (mut g, _, copy, write) = clone_then_write(View::new(vec![4], vec![-1], 3));
        eliminate_copies(&mut g);
        assert_eq!(g.inputs(write)[0].0, copy);
        // Read in order from offset 0, the source's buffer is the copy: the write may start
        // from it.
        let (mut g, x, _, write) = clone_then_write(View::contiguous(&[4]));
        eliminate_copies(&mut g);
        assert_eq!(g.inputs(write)[0].0, x);
    }

    #[test]
    fn an_observed_copy_stays() {
        let mut g = Graph::new();
        let x = g.add_node(node(Op::Input { slot: 0 }, &[3, 4]), vec![]);
        let copy = g.add_node(
            node(Op::Cast, &[3, 4]),
            vec![(x, View::contiguous(&[3, 4]))],
        );
        let e = g.add_node(
            node(
                Op::Unary {
                    op: UnaryOp::Exp,
                    compute: DType::F32,
                },
                &[3, 4],
            ),
            vec![(copy, View::contiguous(&[3, 4]))],
        );
        g.outputs = vec![e, copy];
        eliminate_copies(&mut g);
        assert_eq!(g.inputs(e)[0].0, copy);
    }
}
