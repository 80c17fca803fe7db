//! The lazy graph: nodes recorded by ops, storages whose current version is a node, and
//! realisation (collect the pending subgraph into graph IR, run passes, schedule, execute).

use smelt_ir::graph::{Graph, Node, NodeId, Op};
use smelt_ir::{DType, Result, View};
use smelt_runtime::Buffer;
use std::collections::HashMap;
use std::panic::Location;
use std::sync::{Arc, Mutex, MutexGuard};

/// What a lazy node still needs, or what it produced.
#[derive(Debug)]
pub(crate) enum NodeState {
    /// Not computed yet: its inputs and the views it reads them through.
    Pending(Vec<(Arc<LazyNode>, View)>),
    /// Computed: the buffer stays, the inputs are dropped.
    Realized(Arc<Buffer>),
}

/// One recorded op. Its buffer holds `len` elements of `dtype`; its logical result is written
/// through `out`.
#[derive(Debug)]
pub struct LazyNode {
    pub(crate) op: Op,
    pub(crate) dtype: DType,
    pub(crate) len: usize,
    pub(crate) out: View,
    pub(crate) location: &'static Location<'static>,
    /// Shown by the dumps (e.g. `graph break: nonzero`).
    pub(crate) note: Option<&'static str>,
    pub(crate) state: Mutex<NodeState>,
}

impl Drop for LazyNode {
    /// Drops a long chain of pending nodes iteratively (a recursive drop of a 100k-op eager
    /// loop that was never realized would overflow the stack).
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        let NodeState::Pending(inputs) = state else {
            return;
        };
        let mut stack = std::mem::take(inputs);
        while let Some((node, _)) = stack.pop() {
            if let Ok(mut inner) = Arc::try_unwrap(node)
                && let NodeState::Pending(more) =
                    inner.state.get_mut().unwrap_or_else(|p| p.into_inner())
            {
                stack.append(more);
            }
        }
    }
}

impl LazyNode {
    #[track_caller]
    pub(crate) fn pending(
        op: Op,
        dtype: DType,
        len: usize,
        out: View,
        inputs: Vec<(Arc<LazyNode>, View)>,
    ) -> Arc<LazyNode> {
        Arc::new(LazyNode {
            op,
            dtype,
            len,
            out,
            location: Location::caller(),
            note: None,
            state: Mutex::new(NodeState::Pending(inputs)),
        })
    }

    /// A node that already has its buffer (data from the host).
    #[track_caller]
    pub(crate) fn realized(buffer: Buffer, out: View) -> Arc<LazyNode> {
        LazyNode::realized_with_note(buffer, out, None)
    }

    /// A realized node with a note for the dumps (a graph break says which op forced it).
    #[track_caller]
    pub(crate) fn realized_with_note(
        buffer: Buffer,
        out: View,
        note: Option<&'static str>,
    ) -> Arc<LazyNode> {
        Arc::new(LazyNode {
            op: Op::Input { slot: 0 },
            dtype: buffer.dtype(),
            len: buffer.len(),
            out,
            location: Location::caller(),
            note,
            state: Mutex::new(NodeState::Realized(Arc::new(buffer))),
        })
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, NodeState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The buffer, if realized.
    pub(crate) fn buffer(&self) -> Option<Arc<Buffer>> {
        match &*self.state() {
            NodeState::Realized(b) => Some(b.clone()),
            NodeState::Pending(_) => None,
        }
    }
}

/// A storage: the flat allocation several tensors may share. Its contents are the output of
/// its current version node; an in-place write makes a new version.
#[derive(Debug)]
pub struct Storage {
    pub(crate) dtype: DType,
    pub(crate) len: usize,
    version: Mutex<Arc<LazyNode>>,
}

impl Storage {
    pub(crate) fn new(node: Arc<LazyNode>) -> Arc<Storage> {
        Arc::new(Storage {
            dtype: node.dtype,
            len: node.len,
            version: Mutex::new(node),
        })
    }

    pub(crate) fn current(&self) -> Arc<LazyNode> {
        self.version
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(crate) fn set_current(&self, node: Arc<LazyNode>) {
        *self.version.lock().unwrap_or_else(|p| p.into_inner()) = node;
    }
}

/// A pending subgraph turned into graph IR, with the lazy node behind every graph node.
pub(crate) struct Collected {
    pub graph: Graph,
    pub lazy: Vec<Arc<LazyNode>>,
    /// Buffers of the graph's `Input` nodes, by slot.
    pub buffers: Vec<Arc<Buffer>>,
}

/// Collects every node reachable from `roots` that is not realized yet into graph IR;
/// realized nodes at the frontier become `Input` nodes. With `take_dead` (realisation, not
/// dumps), realized buffers that nothing outside the graph can reach move into it.
pub(crate) fn collect(roots: &[Arc<LazyNode>], take_dead: bool) -> Collected {
    let mut graph = Graph::new();
    let mut lazy: Vec<Arc<LazyNode>> = vec![];
    let mut buffers = vec![];
    let mut ids: HashMap<*const LazyNode, NodeId> = HashMap::new();
    // Iterative post-order DFS so that long eager chains do not overflow the stack.
    let mut stack: Vec<(Arc<LazyNode>, bool)> = roots.iter().map(|r| (r.clone(), false)).collect();
    while let Some((node, expanded)) = stack.pop() {
        let key = Arc::as_ptr(&node);
        if ids.contains_key(&key) {
            continue;
        }
        let inputs = match &*node.state() {
            NodeState::Realized(b) => {
                let id = graph.add_node(
                    Node {
                        op: Op::Input {
                            slot: buffers.len(),
                        },
                        dtype: node.dtype,
                        len: node.len,
                        out: node.out.clone(),
                        location: Some(node.location),
                        note: node.note,
                    },
                    vec![],
                );
                buffers.push(b.clone());
                ids.insert(key, id);
                lazy.push(node.clone());
                continue;
            }
            NodeState::Pending(inputs) => inputs.clone(),
        };
        if !expanded {
            stack.push((node.clone(), true));
            for (input, _) in inputs.iter().rev() {
                if !ids.contains_key(&Arc::as_ptr(input)) {
                    stack.push((input.clone(), false));
                }
            }
            continue;
        }
        let edges = inputs
            .iter()
            .map(|(input, view)| (ids[&Arc::as_ptr(input)], view.clone()))
            .collect();
        let id = graph.add_node(
            Node {
                op: node.op.clone(),
                dtype: node.dtype,
                len: node.len,
                out: node.out.clone(),
                location: Some(node.location),
                note: node.note,
            },
            edges,
        );
        ids.insert(key, id);
        lazy.push(node.clone());
    }
    graph.outputs = roots.iter().map(|r| ids[&Arc::as_ptr(r)]).collect();
    // A pending node that something outside this graph still holds (a tensor handle, a
    // storage) must keep its buffer: count references beyond the graph's own edges.
    for (i, node) in lazy.iter().enumerate() {
        let id = NodeId::new(i);
        let in_graph = graph
            .graph
            .edges_directed(id, petgraph::Direction::Outgoing)
            .count();
        let external = Arc::strong_count(node) > in_graph + 1 || graph.outputs.contains(&id);
        match graph.graph[id].op {
            // A realized buffer nobody outside this graph can reach any more (an old storage
            // version) moves into the graph, so its last reader may update it in place.
            Op::Input { .. } if !external && take_dead => {
                *node.state() = NodeState::Pending(vec![])
            }
            Op::Input { .. } | Op::Fill { .. } => {}
            Op::Unary { .. }
            | Op::Binary { .. }
            | Op::Where
            | Op::Cast
            | Op::Assign
            | Op::Reduce { .. }
            | Op::Library(_) => {
                if external && !graph.outputs.contains(&id) {
                    graph.outputs.push(id);
                }
            }
        }
    }
    Collected {
        graph,
        lazy,
        buffers,
    }
}

/// Realizes `roots`: compiles and runs everything they still need, then stores each computed
/// buffer in its lazy node and drops that node's inputs.
pub(crate) fn realize_nodes(roots: &[Arc<LazyNode>]) -> Result<()> {
    realize_nodes_with(roots, false, smelt_runtime::Backend::from_env())
}

/// [`realize_nodes`] with fusion on or off (`unfused`: every op its own kernel) on `backend`.
pub(crate) fn realize_nodes_with(
    roots: &[Arc<LazyNode>],
    unfused: bool,
    backend: smelt_runtime::Backend,
) -> Result<()> {
    if roots.iter().all(|r| r.buffer().is_some()) {
        return Ok(());
    }
    let check = std::env::var("SMELT_CHECK").is_ok_and(|v| v == "1");
    let collected = collect(roots, !check);
    let mut graph = collected.graph;
    let unoptimized = check.then(|| graph.clone());
    let dump = std::env::var("SMELT_DUMP").unwrap_or_default();
    let wants = |what: &str| dump.split(',').any(|d| d.trim() == what);
    if wants("graph") {
        eprintln!("realize: graph\n{}", graph.to_text());
    }
    let mut disabled = smelt_passes::disabled_by_env();
    if unfused {
        // Every op its own kernel: no fusion, and copies stay copies.
        disabled.extend(
            crate::explain::UNFUSED_DISABLES
                .iter()
                .map(|s| s.to_string()),
        );
    }
    smelt_passes::optimize_with(&mut graph, &disabled);
    let schedule = smelt_passes::schedule(&graph);
    if wants("kernels") {
        eprintln!("realize: kernels\n{}", schedule.to_text());
    }
    let inputs = collected.buffers;
    let check_inputs = check.then(|| inputs.clone());
    let buffers = smelt_runtime::execute_on(backend, &graph, &schedule, inputs)?;
    if let (Some(mut plain), Some(check_inputs)) = (unoptimized, check_inputs) {
        crate::check::compare_unfused(&mut plain, check_inputs, &buffers)?;
    }
    for (i, node) in collected.lazy.iter().enumerate() {
        if let Some(buffer) = &buffers[i] {
            let mut state = node.state();
            if matches!(*state, NodeState::Pending(_)) {
                *state = NodeState::Realized(buffer.clone());
            }
        }
    }
    Ok(())
}
