//! `fold_bias`: `a @ b + c` (`c` a bias row) becomes one `matmul_add` library call, and an
//! f32 `relu(a @ b + c)` one `matmul_add_relu`.
//!
//! What: an `add` node of f32, f16 or bf16 (computed in its own dtype) whose input 0 is a
//! `matmul` of that dtype, read as the matmul writes it by this add alone (no other consumer,
//! not an output), and whose input 1 is a row of the same dtype broadcast over the rest (a
//! bias: stride 0 along every dim but the last): the add node becomes a
//! `LibraryOp::MatmulAdd { relu: false }` reading the matmul's two operands (through the
//! matmul's views) and `c` (through its own view of it), writing through its own output view;
//! the matmul, read by nothing now, is dead. An f32 sum qualifies only when it is written
//! row-major and the product is one GEMM over folded rows (`matmul_rows`): the runtime's row
//! blocks need both. Then, for f32, a `relu` that alone reads the sum (not an output, computed
//! in f32, written row-major) becomes `MatmulAdd { relu: true }` of the same three inputs,
//! and the sum node is dead too.
//!
//! Why it is correct: `MatmulAdd` is defined as the two ops (the product rounded to the dtype,
//! then the sum rounded again) and, with `relu`, the graph's relu of the sum, which is what the
//! nodes it replaces compute; the add reads the product at its own logical index (the edge
//! view is the product's output view), the relu the sum at its own, and `c` is read through
//! the same view as before.
//!
//! Why: a separate kernel reads the whole product back and writes it again. Half-precision
//! products are rounded by smelt's own code (the bf16 GEMM's epilogue, or the rounding pass of
//! a product widened to f32), where adding a bias row costs a load per vector (a GPT block's
//! `h @ w_qkv + b` was a kernel of its own: 1.1 ms of 94). An f32 product's threads each run
//! the `gemm` crate on a block of rows and add the bias (and clamp) while the block is in
//! their cache: `matmul_bias_relu` at 1024³ went from 7.02–7.19 ms to 6.89–6.98 (gemm alone
//! 6.8–7.0). A half-precision relu stays a kernel: those epilogues do not clamp, and a pass
//! of the library's would be scalar. f64 products (no row-block path) are not folded.
//!
//! Example: `(h @ w + b).gelu()` in bf16 runs as `matmul_add` then one GELU kernel;
//! `(x @ w + b).relu()` in f32 as one `matmul_add_relu`.

use petgraph::Direction;
use petgraph::visit::EdgeRef;
use smelt_ir::graph::{Edge, Graph, NodeId, Op};
use smelt_ir::{BinaryOp, DType, LibraryOp, UnaryOp};

/// Folds every `matmul` + `add` pair (and an f32 sum's `relu`) the module docs describe.
pub fn fold_bias(g: &mut Graph) {
    let adds: Vec<NodeId> = g.graph.node_indices().collect();
    for add in adds {
        if let Some((product, addend)) = foldable(g, add) {
            fold(g, add, product, addend);
            if let Some(relu) = clamped(g, add) {
                absorb_relu(g, add, relu);
            }
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
    if !matches!(n.dtype, DType::F32 | DType::F16 | DType::BF16) || compute != n.dtype {
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
        && !g.outputs.contains(&product)
        && (n.dtype != DType::F32 || row_blocks(g, product, &n.out)))
    .then_some((product, addend))
}

/// Whether an f32 product of `product`'s operands written through `out` is one GEMM whose
/// rows the runtime splits and finishes block by block: `out` row-major and the operands'
/// batch dims folding into the rows (`x[B, T, C] @ w[C, D]`). Any other f32 product would add
/// its bias in a scalar pass.
fn row_blocks(g: &Graph, product: NodeId, out: &smelt_ir::View) -> bool {
    let operands = g.inputs(product);
    out.is_contiguous()
        && operands.len() == 2
        && smelt_ir::view::matmul_rows(&operands[0].1, &operands[1].1, out).is_some()
}

/// Makes `add` the `matmul_add` of `product`'s operands and `addend`; `product` loses its one
/// reader. The add node keeps its identity (the frontend maps its buffer back to the tensor by
/// node), its output view and its consumers.
fn fold(g: &mut Graph, add: NodeId, product: NodeId, (addend, view): (NodeId, smelt_ir::View)) {
    let mut inputs = g.inputs(product);
    inputs.push((addend, view));
    rewire(g, add, inputs, LibraryOp::MatmulAdd { relu: false });
}

/// Makes `node` the library call `op` of `inputs` (in slot order), in place of what it read.
fn rewire(g: &mut Graph, node: NodeId, inputs: Vec<(NodeId, smelt_ir::View)>, op: LibraryOp) {
    let reads: Vec<_> = g
        .graph
        .edges_directed(node, Direction::Incoming)
        .map(|e| e.id())
        .collect();
    g.remove_edges(reads);
    for (slot, (src, view)) in inputs.into_iter().enumerate() {
        g.graph.add_edge(src, node, Edge { slot, view });
    }
    g.graph[node].op = Op::Library(op);
}

/// The `relu` that alone reads the f32 `matmul_add` node `sum`, as it is written (not an
/// output, the same dtype and shape, computed in f32, its output row-major like the sum's).
fn clamped(g: &Graph, sum: NodeId) -> Option<NodeId> {
    let s = g.node(sum);
    let mut readers = g.graph.edges_directed(sum, Direction::Outgoing);
    let (edge, more) = (readers.next()?, readers.next());
    let relu = edge.target();
    let r = g.node(relu);
    let is_relu = r.op
        == Op::Unary {
            op: UnaryOp::Relu,
            compute: DType::F32,
        };
    (s.dtype == DType::F32
        && more.is_none()
        && is_relu
        && r.dtype == DType::F32
        && edge.weight().view == s.out
        && r.out.shape == s.out.shape
        && r.out.is_contiguous()
        && !g.outputs.contains(&sum))
    .then_some(relu)
}

/// Makes `relu` the `matmul_add_relu` of `sum`'s three inputs; `sum`, read by nothing now, is
/// dead. The relu node keeps its identity, output view and consumers, as `fold` does.
fn absorb_relu(g: &mut Graph, sum: NodeId, relu: NodeId) {
    let inputs = g.inputs(sum);
    rewire(g, relu, inputs, LibraryOp::MatmulAdd { relu: true });
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
    fn a_bias_row_folds_into_its_matmul() {
        for dtype in [DType::BF16, DType::F16, DType::F32] {
            let (mut g, mm, add, exp) = biased(dtype, dtype);
            fold_bias(&mut g);
            assert!(g.verify().is_empty(), "{:?}", g.verify());
            let op = Op::Library(LibraryOp::MatmulAdd { relu: false });
            assert_eq!(g.node(add).op, op);
            let (operands, ins) = (g.inputs(mm), g.inputs(add));
            assert_eq!(ins.len(), 3);
            assert_eq!(ins[..2], operands[..]);
            assert_eq!(ins[2].1, View::new(vec![4, 5], vec![0, 1], 0));
            assert_eq!(g.inputs(exp), vec![(add, View::contiguous(&[4, 5]))]);
            assert!(!g.live()[mm.index()]);
        }
    }

    /// `x @ w + b` of `dtype`, then `relu`, whose node is returned with the graph's.
    fn relu_of_biased(dtype: DType) -> (Graph, NodeId, NodeId, NodeId) {
        let (mut g, mm, add, exp) = biased(dtype, dtype);
        let relu_op = Op::Unary {
            op: UnaryOp::Relu,
            compute: dtype,
        };
        let relu = g.add_node(
            Node::contiguous(relu_op, dtype, &[4, 5]),
            vec![(add, View::contiguous(&[4, 5]))],
        );
        // The exp reads the relu: the add has one reader.
        let edge = g.graph.find_edge(add, exp).expect("the exp's edge");
        g.graph.remove_edge(edge);
        let view = View::contiguous(&[4, 5]);
        g.graph.add_edge(relu, exp, Edge { slot: 0, view });
        (g, mm, add, relu)
    }

    #[test]
    fn an_f32_relu_of_the_sum_folds_too() {
        let (mut g, mm, add, relu) = relu_of_biased(DType::F32);
        let operands = g.inputs(mm);
        fold_bias(&mut g);
        assert!(g.verify().is_empty(), "{:?}", g.verify());
        let op = Op::Library(LibraryOp::MatmulAdd { relu: true });
        assert_eq!(g.node(relu).op, op);
        let ins = g.inputs(relu);
        assert_eq!(ins[..2], operands[..]);
        assert_eq!(ins[2].1, View::new(vec![4, 5], vec![0, 1], 0));
        let live = g.live();
        assert!(!live[mm.index()] && !live[add.index()]);
        // A bf16 sum folds, its relu stays a kernel of its own (the graph's vectorised one).
        let (mut g, _, add, relu) = relu_of_biased(DType::BF16);
        fold_bias(&mut g);
        let op = Op::Library(LibraryOp::MatmulAdd { relu: false });
        assert_eq!(g.node(add).op, op);
        assert!(matches!(g.node(relu).op, Op::Unary { .. }));
        // An f32 sum that is also an output keeps its relu apart.
        let (mut g, _, add, relu) = relu_of_biased(DType::F32);
        g.outputs.push(add);
        fold_bias(&mut g);
        assert!(matches!(g.node(relu).op, Op::Unary { .. }));
    }

    #[test]
    fn other_products_and_readers_stay_as_they_are() {
        // An f32 sum written column-major (no row blocks), a bias of another dtype, an
        // addend that is not a row, a product read twice, a product that is an output: no
        // fold.
        let unfolded = |g: &Graph, add: NodeId| matches!(g.node(add).op, Op::Binary { .. });
        let (mut f32_graph, _, add, _) = biased(DType::F32, DType::F32);
        f32_graph.graph[add].out = View::new(vec![4, 5], vec![1, 4], 0);
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
