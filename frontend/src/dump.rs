//! Debug dumps of the pending work behind a tensor: the lazy graph (text and Graphviz DOT)
//! and the kernels a realisation would run.

use crate::lazy::pending_graph;
use crate::tensor::Tensor;
use std::fmt;

/// The lazy graph behind a tensor, as of now.
#[derive(Clone, Debug)]
pub struct GraphDump {
    graph: smelt_ir::Graph,
}

impl GraphDump {
    /// The stable one-line-per-node text form (`docs/ir.md`).
    pub fn text(&self) -> String {
        self.graph.to_text()
    }
    /// Graphviz DOT.
    pub fn dot(&self) -> String {
        self.graph.to_dot()
    }
    /// The graph itself (`smelt_ir::Graph`), for tools that walk it.
    pub fn graph(&self) -> &smelt_ir::Graph {
        &self.graph
    }
}

impl fmt::Display for GraphDump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

impl Tensor {
    /// The pending graph that realizing this tensor would run (realized inputs appear as
    /// `input[k]` nodes). Each node shows op, dtype, shape, the views it reads and the source line.
    /// This is the graph as recorded; `smelt::explain` and `SMELT_DUMP=passes` show it optimised.
    pub fn graph(&self) -> GraphDump {
        let graph = pending_graph(&[self.storage.current()]);
        GraphDump { graph }
    }

    /// The kernels (kernel IR, in schedule order) that realizing this tensor would run.
    pub fn kernels(&self) -> String {
        let mut graph = pending_graph(&[self.storage.current()]);
        let disabled = crate::explain::disabled_passes(self.device(), crate::explain::Mode::Fused);
        smelt_passes::optimize_with(&mut graph, &disabled);
        smelt_passes::schedule(&graph).to_text()
    }
}
