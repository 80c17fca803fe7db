//! `fold_bias`: a half-precision `a @ b + c` becomes one `matmul_add` library call.
//!
//! What: an `add` node of f16 or bf16 (computed in its own dtype) whose input 0 is a `matmul`
//! of that dtype, read as the matmul writes it by this add alone (no other consumer, not an
//! output), and whose input 1 is a row of the same dtype broadcast over the rest (a bias:
//! stride 0 along every dim but the last): the add node becomes a
//! `LibraryOp::MatmulAdd` reading the matmul's two operands (through the matmul's views) and
//! `c` (through its own view of it), writing through its own output view; the matmul, read
//! by nothing now, is dead.
//!
//! Why it is correct: `MatmulAdd` is defined as the two ops (the product rounded to the dtype,
//! then the sum rounded again), which is what the matmul and the add compute; the add reads
//! the product at its own logical index (the edge view is the product's output view) and `c`
//! through the same view as before.
//!
//! Why only f16 and bf16: their products are rounded by smelt's own code (the bf16 GEMM's
//! epilogue, or the rounding pass of a product widened to f32), where adding a bias row costs
//! a load per vector; the graph's `add` kernel read the whole product back and rounded twice
//! (a GPT block's `h @ w_qkv + b` was a kernel of its own: 1.1 ms of 94). f32 and f64 products
//! are written by the `gemm` crate, which has no such epilogue: folding there would add a pass
//! and take the add out of the kernel it fuses into (bias + ReLU).
//!
//! Example: `(h @ w + b).gelu()` in bf16 runs as `matmul_add` then one GELU kernel.

use petgraph::Direction;
use petgraph::visit::EdgeRef;
use smelt_ir::graph::{Edge, Graph, NodeId, Op};
use smelt_ir::{BinaryOp, DType, LibraryOp};

/// Folds every `matmul` + `add` pair the module docs describe.
pub fn fold_bias(g: &mut Graph) {
    let adds: Vec<NodeId> = g.graph.node_indices().collect();
    for add in adds {
        if let Some((product, addend)) = foldable(g, add) {
            fold(g, add, product, addend);
        }
    }
}

/// The product and the addend's input of `add` when the pair folds.
fn foldable(g: &Graph, add: NodeId) -> Option<(NodeId, (NodeId, smelt_ir::View))> {
    let n = g.node(add);
    let Op::Binary {
        op: BinaryOp::Add,
        compute,
    } = n.op
    else {
        return None;
    };
    if !matches!(n.dtype, DType::F16 | DType::BF16) || compute != n.dtype {
        return None;
    }
    let mut ins = g.inputs(add).into_iter();
    let (product, read) = ins.next()?;
    let addend = ins.next()?;
    let p = g.node(product);
    let readers = g.graph.edges_directed(product, Direction::Outgoing).count();
    // A bias row: the same `c` at every row and batch point (anything else would add in a
    // scalar pass of the library's, where an add kernel is vectorised).
    let strides = &addend.1.strides;
    let row = strides
        .split_last()
        .is_some_and(|(_, outer)| outer.iter().all(|&s| s == 0));
    (p.op == Op::Library(LibraryOp::Matmul)
        && row
        && p.dtype == n.dtype
        && g.node(addend.0).dtype == n.dtype
        && read == p.out
        && p.out.shape == n.out.shape
        && readers == 1
        && !g.outputs.contains(&product))
    .then_some((product, addend))
}

/// Makes `add` the `matmul_add` of `product`'s operands and `addend`; `product` loses its one
/// reader. The add node keeps its identity (the frontend maps its buffer back to the tensor by
/// node), its output view and its consumers.
fn fold(g: &mut Graph, add: NodeId, product: NodeId, (addend, view): (NodeId, smelt_ir::View)) {
    let operands = g.inputs(product);
    let reads: Vec<_> = g
        .graph
        .edges_directed(add, Direction::Incoming)
        .map(|e| e.id())
        .collect();
    g.remove_edges(reads);
    for (slot, (src, view)) in operands.into_iter().enumerate() {
        g.graph.add_edge(src, add, Edge { slot, view });
    }
    g.graph.add_edge(addend, add, Edge { slot: 2, view });
    g.graph[add].op = Op::Library(LibraryOp::MatmulAdd);
}

#[cfg(test)]
mod tests {
    use super::*;
    use smelt_ir::View;
    use smelt_ir::graph::Node;

    /// `x[4, 3] @ w[3, 5] + b[5]` (b broadcast over the rows) in `dtype`, the sum read by an
    /// `exp`; returns the graph and the matmul, add and exp nodes.
    fn biased(dtype: DType, bias_dtype: DType) -> (Graph, NodeId, NodeId, NodeId) {
        let mut g = Graph::new();
        let input = |g: &mut Graph, slot, shape: &[usize], d| {
            g.add_node(Node::contiguous(Op::Input { slot }, d, shape), vec![])
        };
        let x = input(&mut g, 0, &[4, 3], dtype);
        let w = input(&mut g, 1, &[3, 5], dtype);
        let b = input(&mut g, 2, &[5], bias_dtype);
        let mm = g.add_node(
            Node::contiguous(Op::Library(LibraryOp::Matmul), dtype, &[4, 5]),
            vec![
                (x, View::contiguous(&[4, 3])),
                (w, View::contiguous(&[3, 5])),
            ],
        );
        let add_op = Op::Binary {
            op: BinaryOp::Add,
            compute: dtype,
        };
        let row = View::new(vec![4, 5], vec![0, 1], 0);
        let add = g.add_node(
            Node::contiguous(add_op, dtype, &[4, 5]),
            vec![(mm, View::contiguous(&[4, 5])), (b, row)],
        );
        let exp_op = Op::Unary {
            op: smelt_ir::UnaryOp::Exp,
            compute: dtype,
        };
        let exp = g.add_node(
            Node::contiguous(exp_op, dtype, &[4, 5]),
            vec![(add, View::contiguous(&[4, 5]))],
        );
        g.outputs = vec![exp];
        (g, mm, add, exp)
    }

    #[test]
    fn a_bf16_bias_folds_into_its_matmul() {
        for dtype in [DType::BF16, DType::F16] {
            let (mut g, mm, add, exp) = biased(dtype, dtype);
            fold_bias(&mut g);
            assert!(g.verify().is_empty(), "{:?}", g.verify());
            assert_eq!(g.node(add).op, Op::Library(LibraryOp::MatmulAdd));
            let (operands, ins) = (g.inputs(mm), g.inputs(add));
            assert_eq!(ins.len(), 3);
            assert_eq!(ins[..2], operands[..]);
            assert_eq!(ins[2].1, View::new(vec![4, 5], vec![0, 1], 0));
            assert_eq!(g.inputs(exp), vec![(add, View::contiguous(&[4, 5]))]);
            assert!(!g.live()[mm.index()]);
        }
    }

    #[test]
    fn other_products_and_readers_stay_as_they_are() {
        // f32 (the gemm crate writes it), a bias of another dtype, an addend that is not a
        // row, a product read twice, a product that is an output: no fold.
        let unfolded = |g: &Graph, add: NodeId| matches!(g.node(add).op, Op::Binary { .. });
        let (mut f32_graph, _, add, _) = biased(DType::F32, DType::F32);
        fold_bias(&mut f32_graph);
        assert!(unfolded(&f32_graph, add));
        let (mut mixed, _, add, _) = biased(DType::BF16, DType::F32);
        fold_bias(&mut mixed);
        assert!(unfolded(&mixed, add));
        // A full [4, 5] addend, not a row: its add stays a vectorised kernel.
        let (mut full, _, add, _) = biased(DType::BF16, DType::BF16);
        let c = full.add_node(
            Node::contiguous(Op::Input { slot: 3 }, DType::BF16, &[4, 5]),
            vec![],
        );
        let edge = full
            .graph
            .find_edge(full.inputs(add)[1].0, add)
            .expect("the bias edge");
        full.graph.remove_edge(edge);
        full.graph.add_edge(
            c,
            add,
            Edge {
                slot: 1,
                view: View::contiguous(&[4, 5]),
            },
        );
        fold_bias(&mut full);
        assert!(full.verify().is_empty(), "{:?}", full.verify());
        assert!(unfolded(&full, add));
        let (mut shared, mm, add, exp) = biased(DType::BF16, DType::BF16);
        let twice = shared.add_node(
            Node::contiguous(Op::Cast, DType::BF16, &[4, 5]),
            vec![(mm, View::contiguous(&[4, 5]))],
        );
        shared.outputs = vec![exp, twice];
        fold_bias(&mut shared);
        assert!(unfolded(&shared, add));
        let (mut output, mm, add, exp) = biased(DType::BF16, DType::BF16);
        output.outputs = vec![exp, mm];
        fold_bias(&mut output);
        assert!(unfolded(&output, add));
    }
}
