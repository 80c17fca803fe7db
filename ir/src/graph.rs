//! Graph IR: one node per computing op on a petgraph graph, the views its inputs are read
//! through on the edges. Built by the frontend at realisation from the pending lazy nodes.

use crate::random::RandomDist;
use crate::{BinaryOp, DType, LibraryOp, ReduceOp, Scalar, UnaryOp, View};
use petgraph::Direction;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;
use std::fmt::{self, Write as _};
use std::panic::Location;

/// A node of the graph; typed index into the petgraph arena.
pub type NodeId = NodeIndex<u32>;

/// What a graph node computes. Every variant is handled without wildcards by the lowering,
/// the interpreter and the dumps.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// A buffer that already exists (realized earlier); `slot` indexes the graph's inputs.
    Input { slot: usize },
    /// Every element is `value` (already of the node's dtype).
    Fill { value: Scalar },
    /// `dtype(op(cast(x, compute)))`.
    Unary { op: UnaryOp, compute: DType },
    /// `op(cast(a, compute), cast(b, compute))`.
    Binary { op: BinaryOp, compute: DType },
    /// `cond ? a : b`, with `a` and `b` cast to the node's dtype.
    Where,
    /// Converts the input to the node's dtype (a copy when the dtype is the same).
    Cast,
    /// The next version of a storage: input 0 is the old version (read whole), input 1 the
    /// values written through the node's `out` view (`copy_`, in-place ops, setitem).
    Assign,
    /// Reduces input 0 over its trailing `axes` dims (the frontend permutes them last).
    Reduce { op: ReduceOp, axes: usize },
    /// A library routine (matmul, gather, sort …).
    Library(LibraryOp),
    /// Random values (`random.rs`): input 0 is the generator's state for this draw, an int64
    /// `[seed, offset]`; the element at logical (row-major) index `p` is the draw of `dist` for
    /// counter `offset + p`, whatever reads it, however it is fused and laid out.
    Random { dist: RandomDist },
    /// `torch.complex`: a complex node (of the node's dtype) whose real part is input 0 and
    /// imaginary part input 1, each cast to the node's real counterpart.
    Complex,
}

impl Op {
    /// Whether the op's output starts as its input 0's whole buffer as stored, then updated
    /// (`Assign`, `index_put`): that input is read whole, whatever its edge's view says.
    pub fn updates_input_0(&self) -> bool {
        match self {
            Op::Assign => true,
            Op::Library(op) => op.updates_input_0(),
            Op::Input { .. }
            | Op::Fill { .. }
            | Op::Unary { .. }
            | Op::Binary { .. }
            | Op::Where
            | Op::Cast
            | Op::Reduce { .. }
            | Op::Random { .. }
            | Op::Complex => false,
        }
    }

    pub fn name(&self) -> String {
        match self {
            Op::Input { slot } => format!("input[{slot}]"),
            Op::Fill { value } => format!("fill({value})"),
            Op::Unary { op, .. } => op.name().to_string(),
            Op::Binary { op, .. } => op.name().to_string(),
            Op::Where => "where".to_string(),
            Op::Cast => "cast".to_string(),
            Op::Assign => "assign".to_string(),
            Op::Reduce { op, axes } => format!("reduce_{}[{axes}]", op.name()),
            Op::Library(op) => op.name(),
            Op::Random { dist } => format!("random_{}", dist.name()),
            Op::Complex => "complex".to_string(),
        }
    }
}

/// One graph node: it produces a buffer of `len` elements of `dtype` and writes its logical
/// result (of shape `out.shape`) through the view `out` into that buffer.
#[derive(Clone, Debug)]
pub struct Node {
    pub op: Op,
    pub dtype: DType,
    pub len: usize,
    pub out: View,
    /// The user's source line that created the node.
    pub location: Option<&'static Location<'static>>,
    /// Why the node exists, shown by the dumps as `# note`; e.g. `graph break: nonzero` on an
    /// input whose values an op with a data-dependent shape computed on the host.
    pub note: Option<&'static str>,
}

impl Node {
    /// A node writing a contiguous buffer of `shape` (no source line, no note).
    pub fn contiguous(op: Op, dtype: DType, shape: &[usize]) -> Node {
        let out = View::contiguous(shape);
        Node {
            op,
            dtype,
            len: out.numel(),
            out,
            location: None,
            note: None,
        }
    }
}

/// An edge: input `slot` of the consumer reads the producer's buffer through `view`.
#[derive(Clone, Debug)]
pub struct Edge {
    pub slot: usize,
    pub view: View,
}

/// A computation graph with its requested outputs.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    pub graph: DiGraph<Node, Edge, u32>,
    pub outputs: Vec<NodeId>,
    /// Fusion groups chosen by the `fuse` pass (empty: every node is its own kernel).
    pub groups: Vec<Group>,
    /// Why producer→consumer edges were not fused (for `explain`).
    pub boundaries: Vec<Boundary>,
}

/// Nodes that run as one kernel. The kernel loops over `space`, whose trailing `reduce_axes`
/// dims are reduced, and materialises only the group's `outputs`: the node it grew from, any
/// member also needed outside the kernel (requested by the user or read by another kernel),
/// and the roots of groups merged into it horizontally. Every other member is recomputed
/// where it is read.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// The stored members, in output-argument order, each with the map taking a point of the
    /// space to its logical index (the map covers the node's shape exactly once). The first
    /// is the root: the node the group was seeded from.
    pub outputs: Vec<(NodeId, crate::affine::AffineMap)>,
    /// Members, the seeds first.
    pub members: Vec<NodeId>,
    pub space: Vec<usize>,
    pub reduce_axes: usize,
}

impl Group {
    /// The node the group grew from (its first output).
    pub fn root(&self) -> NodeId {
        self.outputs[0].0
    }

    /// The map of output `id`, if `id` is an output.
    pub fn output_map(&self, id: NodeId) -> Option<&crate::affine::AffineMap> {
        self.outputs.iter().find(|(n, _)| *n == id).map(|(_, m)| m)
    }

    /// The output nodes, in output-argument order.
    pub fn output_nodes(&self) -> Vec<NodeId> {
        self.outputs.iter().map(|(n, _)| *n).collect()
    }
}

/// An edge the fuser left as a kernel boundary, and the rule that refused it.
#[derive(Clone, Debug, PartialEq)]
pub struct Boundary {
    pub producer: NodeId,
    pub consumer: NodeId,
    pub reason: String,
}

impl Graph {
    pub fn new() -> Graph {
        Graph::default()
    }

    pub fn add_node(&mut self, node: Node, inputs: Vec<(NodeId, View)>) -> NodeId {
        let id = self.graph.add_node(node);
        for (slot, (src, view)) in inputs.into_iter().enumerate() {
            self.graph.add_edge(src, id, Edge { slot, view });
        }
        id
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.graph[id]
    }

    /// Inputs of `id` in slot order, with the views they are read through.
    pub fn inputs(&self, id: NodeId) -> Vec<(NodeId, View)> {
        let mut ins: Vec<(usize, NodeId, View)> = self
            .graph
            .edges_directed(id, Direction::Incoming)
            .map(|e| (e.weight().slot, e.source(), e.weight().view.clone()))
            .collect();
        ins.sort_by_key(|(slot, _, _)| *slot);
        ins.into_iter().map(|(_, n, v)| (n, v)).collect()
    }

    /// Removes several edges. petgraph's removal moves the last edge into the freed slot, so
    /// removing by stale indices one by one would drop the wrong edges: remove from the
    /// highest index down.
    pub fn remove_edges(&mut self, mut edges: Vec<petgraph::graph::EdgeIndex<u32>>) {
        edges.sort_unstable_by(|a, b| b.cmp(a));
        edges.dedup();
        for e in edges {
            self.graph.remove_edge(e);
        }
    }

    /// Which nodes some output depends on (the rest is dead code no schedule runs).
    pub fn live(&self) -> Vec<bool> {
        let mut live = vec![false; self.graph.node_count()];
        let mut stack = self.outputs.clone();
        while let Some(n) = stack.pop() {
            if std::mem::replace(&mut live[n.index()], true) {
                continue;
            }
            stack.extend(self.graph.neighbors_directed(n, Direction::Incoming));
        }
        live
    }

    /// Nodes in a topological order (inputs before consumers).
    pub fn topo_order(&self) -> Vec<NodeId> {
        petgraph::algo::toposort(&self.graph, None).expect("graph IR is acyclic")
    }

    /// Checks the graph's invariants and lists every violation (empty = valid).
    pub fn verify(&self) -> Vec<String> {
        let mut errors = vec![];
        if petgraph::algo::is_cyclic_directed(&self.graph) {
            errors.push("graph has a cycle".to_string());
        }
        for id in self.graph.node_indices() {
            let node = &self.graph[id];
            if !node.out.read.is_plain() && node.op != Op::Assign {
                errors.push(format!(
                    "%{}: output view {} reads its buffer other than plainly (only an assign \
                     writes through a reinterpreting view)",
                    id.index(),
                    node.out
                ));
            }
            if let Some(e) = reading_error(&node.out, node.dtype) {
                errors.push(format!("%{}: output view {}: {e}", id.index(), node.out));
            }
            if !node.out.fits_in(node.out.read.len(node.len)) {
                errors.push(format!(
                    "%{}: output view {} outside its buffer of {}",
                    id.index(),
                    node.out,
                    node.len
                ));
            }
            for (src, view) in self.inputs(id) {
                let p = &self.graph[src];
                if let Some(e) = reading_error(&view, p.dtype) {
                    errors.push(format!(
                        "%{}: reads %{} through {view}: {e}",
                        id.index(),
                        src.index()
                    ));
                }
                if !view.fits_in(view.read.len(p.len)) {
                    errors.push(format!(
                        "%{}: reads %{} through {} outside its buffer of {}",
                        id.index(),
                        src.index(),
                        view,
                        p.len
                    ));
                }
            }
            let arity = self.inputs(id).len();
            let expected = match &node.op {
                Op::Library(op) => op.arity(),
                Op::Input { .. } | Op::Fill { .. } => 0,
                Op::Unary { .. } | Op::Cast | Op::Reduce { .. } | Op::Random { .. } => 1,
                Op::Binary { .. } | Op::Assign | Op::Complex => 2,
                Op::Where => 3,
            };
            if arity != expected {
                errors.push(format!(
                    "%{}: {} has {arity} inputs, expects {expected}",
                    id.index(),
                    node.op.name()
                ));
            }
            if let Op::Random { dist } = node.op
                && !dist.draws(node.dtype)
            {
                errors.push(format!(
                    "%{}: {} draws into {}",
                    id.index(),
                    node.op.name(),
                    node.dtype
                ));
            }
        }
        errors
    }

    /// Stable text form, one line per node: `%3 = add %1(view), %2(view) : f32[4,4] (view) @ file:line`.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        for id in self.topo_order() {
            let n = &self.graph[id];
            let ins: Vec<String> = self
                .inputs(id)
                .iter()
                .map(|(src, v)| format!("%{}{}", src.index(), v))
                .collect();
            let _ = write!(
                s,
                "%{} = {} {} : {}{} out {} len {}",
                id.index(),
                n.op.name(),
                ins.join(", "),
                n.dtype,
                crate::view::fmt_list(&n.out.shape),
                n.out,
                n.len
            );
            if let Some(loc) = n.location {
                let _ = write!(s, " @ {}:{}", loc.file(), loc.line());
            }
            if let Some(note) = n.note {
                let _ = write!(s, " # {note}");
            }
            if self.outputs.contains(&id) {
                s.push_str(" [output]");
            }
            s.push('\n');
        }
        s
    }

    /// Graphviz DOT form.
    pub fn to_dot(&self) -> String {
        let mut s = String::from("digraph smelt {\n  node [shape=box, fontname=monospace];\n");
        for id in self.graph.node_indices() {
            let n = &self.graph[id];
            let mut loc = n
                .location
                .map(|l| format!("\\n{}:{}", l.file(), l.line()))
                .unwrap_or_default();
            if let Some(note) = n.note {
                loc.push_str(&format!("\\n# {note}"));
            }
            let _ = writeln!(
                s,
                "  n{} [label=\"%{} {}\\n{}{}{}\"];",
                id.index(),
                id.index(),
                n.op.name().replace('"', "'"),
                n.dtype,
                crate::view::fmt_list(&n.out.shape),
                loc
            );
        }
        for e in self.graph.edge_references() {
            let _ = writeln!(
                s,
                "  n{} -> n{} [label=\"{}\"];",
                e.source().index(),
                e.target().index(),
                e.weight().view
            );
        }
        s.push_str("}\n");
        s
    }
}

/// Why reading a storage of `dtype` through `view` makes no sense, if it does not: a split
/// read of a real storage, a paired read of anything but float32/float64, a conjugate read of
/// real values.
fn reading_error(view: &View, dtype: DType) -> Option<&'static str> {
    use crate::reading::Parts;
    match view.read.parts {
        Parts::Whole => {}
        Parts::Split if !dtype.is_complex() => return Some("a split read of a real storage"),
        Parts::Paired if !matches!(dtype, DType::F32 | DType::F64) => {
            return Some("a paired read of a storage that is not float32 or float64");
        }
        Parts::Split | Parts::Paired => {}
    }
    (view.read.conj && !view.read.dtype(dtype).is_complex())
        .then_some("a conjugate read of real values")
}

impl fmt::Display for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text())
    }
}
