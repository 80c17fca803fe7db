//! `propagate_layout`: physical layouts for buffers only the compiler sees (DESIGN §5.2).
//!
//! What: a computed buffer that no user can observe, and whose consumers all read it as one
//! dense permutation of its logical dims (a transpose, a permute), is laid out in the order
//! its consumers walk: its output view becomes that permutation's dense strides and every
//! consumer's view is rewritten to address the new layout. User-observable buffers keep
//! PyTorch's layout.
//!
//! Why it is correct: only the placement of elements in a private buffer changes; each
//! consumer's view is recomputed through the same logical index map (`compose_views`).
//!
//! Example: `(a * 2).t()` read by a matmul: the product is written column-major so the GEMM
//! streams it row-major.

use petgraph::Direction;
use petgraph::visit::EdgeRef;
use smelt_ir::affine::{AffineMap, compose_views};
use smelt_ir::graph::{Graph, NodeId, Op};
use smelt_ir::view::contiguous_strides;
use smelt_ir::{Parts, View};

/// For each dim `j` of the producer, the dim `i` of the read that walks it one to one
/// (`None` for size-1 producer dims), when the read is a permutation of the producer's dims
/// (plus size-1 dims of its own).
fn as_permutation(m: &AffineMap, read: &View, out: &View) -> Option<Vec<Option<usize>>> {
    if m.offset.iter().any(|&o| o != 0) {
        return None;
    }
    let mut used = vec![false; m.inputs];
    let mut perm = vec![None; m.outputs()];
    for (j, row) in m.coeffs.iter().enumerate() {
        let nonzero: Vec<usize> = (0..row.len()).filter(|&i| row[i] != 0).collect();
        match nonzero.as_slice() {
            [] if out.shape[j] <= 1 => {}
            [i] if row[*i] == 1 && read.shape[*i] == out.shape[j] && !used[*i] => {
                used[*i] = true;
                perm[j] = Some(*i);
            }
            _ => return None,
        }
    }
    // Every read dim that walks something is one of the producer's.
    (0..m.inputs)
        .all(|i| used[i] || read.shape[i] <= 1)
        .then_some(perm)
}

fn relayout(g: &mut Graph, id: NodeId) -> bool {
    let node = g.node(id).clone();
    match node.op {
        // A random draw depends on the logical index, not the layout: it may move too.
        Op::Unary { .. }
        | Op::Binary { .. }
        | Op::Where
        | Op::Cast
        | Op::Reduce { .. }
        | Op::Random { .. }
        | Op::Complex => {}
        Op::Input { .. } | Op::Fill { .. } | Op::Assign | Op::Library(_) => return false,
    }
    if g.outputs.contains(&id) || node.out.numel() != node.len || node.out.numel() < 2 {
        return false;
    }
    let reads: Vec<_> = g
        .graph
        .edges_directed(id, Direction::Outgoing)
        .map(|e| (e.id(), e.weight().view.clone()))
        .collect();
    let Some((_, first)) = reads.first() else {
        return false;
    };
    // Views reading parts of a complex buffer address it in other units than its output view.
    if reads.iter().any(|(_, v)| v.read.parts != Parts::Whole) {
        return false;
    }
    if first.is_contiguous() {
        return false;
    }
    let Some(m) = compose_views(first, &node.out) else {
        return false;
    };
    let Some(perm) = as_permutation(&m, first, &node.out) else {
        return false;
    };
    // The new layout: the first reader's dims, row-major.
    let walk = contiguous_strides(&first.shape);
    let strides: Vec<isize> = perm.iter().map(|p| p.map_or(1, |i| walk[i])).collect();
    let new_out = View::new(node.out.shape.clone(), strides, 0);
    let mut rewired = vec![];
    for (e, view) in &reads {
        let Some(mk) = compose_views(view, &node.out) else {
            return false;
        };
        let index = mk.index_through(&new_out);
        if index.offset < 0 {
            return false;
        }
        let v = View::new(view.shape.clone(), index.strides, index.offset as usize)
            .with_read(view.read);
        if !v.fits_in(node.len) {
            return false;
        }
        rewired.push((*e, v));
    }
    g.graph[id].out = new_out;
    for (e, v) in rewired {
        g.graph[e].view = v;
    }
    true
}

/// The `propagate_layout` pass.
pub fn propagate_layout(g: &mut Graph) {
    let live = g.live();
    for id in g.topo_order() {
        if live[id.index()] {
            relayout(g, id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smelt_ir::graph::Node;
    use smelt_ir::{DType, LibraryOp, UnaryOp};

    fn node(op: Op, shape: &[usize]) -> Node {
        Node::contiguous(op, DType::F32, shape)
    }

    #[test]
    fn a_private_buffer_read_transposed_is_written_transposed() {
        let mut g = Graph::new();
        let x = g.add_node(node(Op::Input { slot: 0 }, &[3, 4]), vec![]);
        let y = g.add_node(node(Op::Input { slot: 1 }, &[3, 5]), vec![]);
        let e = g.add_node(
            node(
                Op::Unary {
                    op: UnaryOp::Exp,
                    compute: DType::F32,
                },
                &[3, 4],
            ),
            vec![(x, View::contiguous(&[3, 4]))],
        );
        let t = View::contiguous(&[3, 4]).t().unwrap().unsqueeze(0).unwrap();
        let mm = g.add_node(
            node(Op::Library(LibraryOp::Matmul), &[1, 4, 5]),
            vec![(e, t), (y, View::contiguous(&[3, 5]).unsqueeze(0).unwrap())],
        );
        g.outputs = vec![mm];
        propagate_layout(&mut g);
        assert_eq!(g.node(e).out.strides, vec![1, 3]);
        assert!(g.inputs(mm)[0].1.is_contiguous());
    }
}
