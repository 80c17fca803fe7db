//! The lazy graph: nodes recorded by ops, storages whose current version is a node, and
//! realisation (collect the pending subgraph into graph IR, run passes, schedule, execute).

use crate::plan_cache::{Plan, PlanKey, cache_plan, cached_plan, encode_op, encode_view};
use smelt_ir::graph::{Graph, Node, NodeId, Op};
use smelt_ir::{DType, Result, View};
use smelt_runtime::{Buffer, Device, Target};
use std::cell::UnsafeCell;
use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// One input of a pending node: the node it reads and the view it reads it through.
pub(crate) type Input = (Arc<LazyNode>, View);

/// The inputs of a pending node, held in the node itself up to two (every unary and binary
/// op's), so that recording an op allocates its node and its storage but no list. A node's
/// inputs change only while [`WALKS`] is held (realisation drops them; a node being dropped
/// has no other owner), so a walk, which holds it, reads them in place.
pub(crate) type Inputs = smallvec::SmallVec<[Input; 2]>;

/// What a lazy node still needs, or what it produced.
#[derive(Debug)]
pub(crate) enum NodeState {
    /// Not computed yet: its inputs.
    Pending(Inputs),
    /// Computed: the buffer stays (on the node's device), the inputs are dropped.
    Realized(Buffer),
    /// A buffer that a realisation took (nothing outside its graph could reach it, so its last
    /// reader may update it in place) and that then failed on its device: the values are gone,
    /// and a graph reading them cannot run again.
    Lost,
}

/// One recorded op. Its buffer holds `len` elements of `dtype` on `device`; its logical result
/// is written through `out`.
#[derive(Debug)]
pub struct LazyNode {
    pub(crate) op: Op,
    pub(crate) dtype: DType,
    /// Where its buffer lives (or will): every input of a node is on its device.
    pub(crate) device: Device,
    pub(crate) len: usize,
    pub(crate) out: View,
    pub(crate) location: &'static Location<'static>,
    /// Shown by the dumps (e.g. `graph break: nonzero`).
    pub(crate) note: Option<&'static str>,
    /// Read and written only while [`WALKS`] is held ([`LazyNode::state`],
    /// [`LazyNode::set_state`]) or by the node's sole owner (its drop): a walk, which holds
    /// the lock anyway, reads every node's state without a lock of the node's own.
    state: UnsafeCell<NodeState>,
    /// Whether `state` is `Pending`, readable without the lock (written with it).
    pending: AtomicBool,
    /// The last walk that reached this node ([`walk`]'s ticket; 0: none yet) and its graph id
    /// there: a walk finds the nodes it has seen without a table of them.
    walked: AtomicU64,
    walk_id: AtomicU32,
}

impl Drop for LazyNode {
    /// Drops a long chain of pending nodes iteratively (a recursive drop of a 100k-op eager
    /// loop that was never realized would overflow the stack).
    fn drop(&mut self) {
        // Each node popped here is emptied of its inputs before it drops, so its own `drop`
        // returns at once.
        let mut stack = vec![];
        self.detach_inputs(&mut stack);
        while let Some(mut node) = stack.pop() {
            if let Some(node) = Arc::get_mut(&mut node) {
                node.detach_inputs(&mut stack);
            }
        }
    }
}

impl LazyNode {
    /// Moves the input handles of this node onto `stack` (its views are dropped).
    fn detach_inputs(&mut self, stack: &mut Vec<Arc<LazyNode>>) {
        if let NodeState::Pending(inputs) = self.state.get_mut() {
            while let Some((node, _)) = inputs.pop() {
                stack.push(node);
            }
        }
    }
}

impl LazyNode {
    /// A pending node on its inputs' device (the thread's default device for a node without
    /// inputs). Ops check devices before they record (`crate::device::common_device`), so
    /// inputs on several devices are a bug here.
    #[track_caller]
    pub(crate) fn pending(
        op: Op,
        dtype: DType,
        len: usize,
        out: View,
        inputs: impl Into<Inputs>,
    ) -> Arc<LazyNode> {
        let inputs = inputs.into();
        let device = match inputs.first() {
            Some((first, _)) => first.device,
            None => crate::device::get_default_device(),
        };
        LazyNode::pending_on(device, op, dtype, len, out, inputs)
    }

    /// [`LazyNode::pending`] on a given device. Inlined: an elementwise op's inputs (two
    /// 104-byte entries inline) then move from the recording op into the node with one copy
    /// fewer (`callgrind`: three `memcpy` calls an op became two).
    #[track_caller]
    #[inline]
    pub(crate) fn pending_on(
        device: Device,
        op: Op,
        dtype: DType,
        len: usize,
        out: View,
        inputs: impl Into<Inputs>,
    ) -> Arc<LazyNode> {
        let mut inputs = inputs.into();
        assert!(
            inputs.iter().all(|(i, _)| i.device == device),
            "invariant: every input of a node is on its device ({device}): the op checks first"
        );
        // Library routines read their inputs' elements (whole, or as parts) but neither
        // conjugate nor negate them: such a view is resolved by a copy first.
        if matches!(op, Op::Library(_)) && inputs.iter().any(|(_, v)| v.read.transforms()) {
            inputs = inputs
                .into_iter()
                .map(|(node, view)| resolved_input(device, node, view))
                .collect();
        }
        // Allocated first and then written, so that the node (a few hundred bytes with its
        // inputs) is built in place rather than on the stack and then copied over.
        let mut node = Arc::<LazyNode>::new_uninit();
        Arc::get_mut(&mut node)
            .expect("invariant: a fresh Arc has no other owner")
            .write(LazyNode {
                op,
                dtype,
                device,
                len,
                out,
                location: Location::caller(),
                note: None,
                state: UnsafeCell::new(NodeState::Pending(inputs)),
                pending: AtomicBool::new(true),
                walked: AtomicU64::new(0),
                walk_id: AtomicU32::new(0),
            });
        // SAFETY: written just above.
        unsafe { node.assume_init() }
    }

    /// A node of `dtype` that already has its buffer (on the buffer's device; a complex
    /// storage's buffer holds its real counterpart, two parts per element).
    #[track_caller]
    pub(crate) fn realized(buffer: Buffer, dtype: DType, out: View) -> Arc<LazyNode> {
        LazyNode::realized_with_note(buffer, dtype, out, None)
    }

    /// A realized node with a note for the dumps (a graph break says which op forced it).
    #[track_caller]
    pub(crate) fn realized_with_note(
        buffer: Buffer,
        dtype: DType,
        out: View,
        note: Option<&'static str>,
    ) -> Arc<LazyNode> {
        assert_eq!(
            buffer.dtype(),
            dtype.storage(),
            "invariant: a buffer holds its storage's real dtype"
        );
        Arc::new(LazyNode {
            op: Op::Input { slot: 0 },
            dtype,
            device: buffer.device(),
            len: buffer.len() / dtype.parts(),
            out,
            location: Location::caller(),
            note,
            state: UnsafeCell::new(NodeState::Realized(buffer)),
            pending: AtomicBool::new(false),
            walked: AtomicU64::new(0),
            walk_id: AtomicU32::new(0),
        })
    }

    /// The node's state, for as long as `held` (the walk lock) is borrowed: every change to a
    /// state needs the lock borrowed mutably ([`LazyNode::set_state`]), so none can happen
    /// meanwhile.
    pub(crate) fn state<'a>(&'a self, held: &'a Walks) -> &'a NodeState {
        let _ = held;
        // SAFETY: `state` is written only through `set_state`, which needs `&mut Walks`, and
        // by `drop` (`&mut self`); one `Walks` exists at a time (it holds `WALKS`), and it is
        // borrowed here for as long as the reference lives.
        unsafe { &*self.state.get() }
    }

    /// Replaces the node's state, returning the old one (dropped by the caller, lock held or
    /// not: dropping inputs only releases handles).
    pub(crate) fn set_state(&self, held: &mut Walks, state: NodeState) -> NodeState {
        let _ = held;
        self.pending
            .store(matches!(state, NodeState::Pending(_)), Ordering::Release);
        // SAFETY: `held` is the one `Walks` there is, borrowed mutably: no reference from
        // `state` is alive, and no other thread reads or writes a state now.
        unsafe { std::mem::replace(&mut *self.state.get(), state) }
    }

    /// Whether the node still waits for its value (neither realized nor lost), without the
    /// walk lock (which ops may call while recording: no global lock per op).
    pub(crate) fn is_pending(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// The buffer, if realized (takes the walk lock: not while this thread holds it).
    pub(crate) fn buffer(&self) -> Option<Buffer> {
        let held = walks();
        match self.state(&held) {
            NodeState::Realized(b) => Some(b.clone()),
            NodeState::Pending(_) | NodeState::Lost => None,
        }
    }
}

// SAFETY: the one field without synchronisation of its own, `state`, is read and written only
// while the process-wide `WALKS` lock is held (`LazyNode::state`, `LazyNode::set_state`) or
// through `&mut LazyNode`; everything else is immutable or atomic.
unsafe impl Sync for LazyNode {}

/// `(node, view)` as a plain read: itself, or, for a conjugating or negating view, a fresh
/// contiguous copy of the values it reads.
#[track_caller]
fn resolved_input(device: Device, node: Arc<LazyNode>, view: View) -> (Arc<LazyNode>, View) {
    if !view.read.transforms() {
        return (node, view);
    }
    let dtype = view.read.dtype(node.dtype);
    let out = View::contiguous(&view.shape);
    let copy = LazyNode::pending_on(
        device,
        Op::Cast,
        dtype,
        out.numel(),
        out.clone(),
        vec![(node, view)],
    );
    (copy, out)
}

/// A storage: the flat allocation several tensors may share. Its contents are the output of
/// its current version node; an in-place write makes a new version.
#[derive(Debug)]
pub struct Storage {
    pub(crate) dtype: DType,
    pub(crate) device: Device,
    pub(crate) len: usize,
    version: Mutex<Arc<LazyNode>>,
}

impl Storage {
    pub(crate) fn new(node: Arc<LazyNode>) -> Arc<Storage> {
        Arc::new(Storage {
            dtype: node.dtype,
            device: node.device,
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

/// The pending subgraph reachable from some roots, in post-order (inputs before consumers):
/// position `i` is graph node `%i`. Holds what realisation needs to look the graph up in the
/// plan cache ([`Walk::key`]) and to store the results; a walk that `captured` its edges also
/// builds the graph IR ([`Walk::graph`]).
pub(crate) struct Walk {
    /// The lazy node behind every graph node that realisation needs after the walk: every one
    /// when the walk captured its edges (to build the graph), else the outputs and the dead
    /// inputs (`None` for the rest, which the walk read without a handle of its own).
    pub lazy: Vec<Option<Arc<LazyNode>>>,
    /// Each node's input count (`None`: realized, an `Input` of the graph).
    inputs: Vec<Option<u32>>,
    /// With capture, every edge of every computed node in node order: its source's graph id
    /// and a copy of its view.
    edges: Option<Vec<(u32, View)>>,
    /// Buffers of the graph's `Input` nodes, by slot.
    pub buffers: Vec<Buffer>,
    pub outputs: Vec<NodeId>,
    /// The graph's structure ([`crate::plan_cache`]): word 0 is the node count, then one
    /// record per node (op, dtype, len, out view, inputs with their views), then the outputs.
    pub key: Vec<u64>,
    /// Realized inputs nothing outside the graph can reach (an old storage version): a
    /// realisation takes their buffers, so that their last reader may update them in place.
    pub dead: Vec<usize>,
    /// Why the graph cannot run, when an input it reads has no values now.
    pub unreadable: Option<Unreadable>,
}

/// What happened to an input that a walked graph cannot read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unreadable {
    /// Lost by a realisation that failed while updating it in place ([`NodeState::Lost`]).
    Lost,
    /// Taken, right now, by a realisation on another thread that updates it in place: a walk
    /// reached it through a pending node of that graph which this thread holds too. (Its
    /// state is then `Pending` with no inputs under an `Input` op, which no op records.)
    Taken,
}

impl Unreadable {
    fn error(self) -> smelt_ir::Error {
        smelt_ir::Error::device(match self {
            Unreadable::Lost => {
                "this tensor reads values that an earlier realisation lost when it failed on \
                 its device (an input it was updating in place); recompute them"
            }
            Unreadable::Taken => {
                "this tensor reads values that a realisation on another thread is updating in \
                 place (it shares pending ops with this one); realise it again once that one \
                 has finished"
            }
        })
    }
}

/// The ticket of the last walk; held by a walk while it runs and by a realisation while it
/// changes nodes' states. A walk marks each node it reaches with its ticket and the node's
/// graph id ([`LazyNode::walked`]), so that it finds the nodes it has seen with two loads
/// instead of a hash table keyed by address: tickets never repeat (64 bits), and no two walks
/// mark at once. And as nodes' inputs change only under it ([`Inputs`]), a walk reads them in
/// place, twice (to go down, then to encode the edges), without copying or counting them.
/// Walks are short next to the kernels they lead to, so threads realising at once wait little
/// for each other here.
static WALKS: Mutex<u64> = Mutex::new(0);

/// [`WALKS`] held: the key to every node's state ([`LazyNode::state`]).
pub(crate) struct Walks(MutexGuard<'static, u64>);

/// Takes [`WALKS`] (never while this thread holds it: it is not reentrant).
pub(crate) fn walks() -> Walks {
    Walks(WALKS.lock().unwrap_or_else(|p| p.into_inner()))
}

/// Walks every node reachable from `roots` that is not realized yet; realized nodes at the
/// frontier become `Input` nodes. With `take_dead` (realisation, not dumps), realized inputs
/// that nothing outside the graph can reach are listed in [`Walk::dead`]; with `capture`, the
/// edges are copied for [`Walk::graph`].
pub(crate) fn walk(roots: &[Arc<LazyNode>], take_dead: bool, capture: bool) -> Walk {
    thread_local! {
        /// Nodes and key words of this thread's previous walk: the next one is likely of the
        /// same shape, so its tables start that large instead of growing step by step.
        static SIZE_HINT: std::cell::Cell<(usize, usize)> = const { std::cell::Cell::new((0, 0)) };
    }
    let (nodes, words) = SIZE_HINT.with(|h| h.get());
    let mut w = Walk {
        lazy: Vec::with_capacity(nodes),
        inputs: Vec::with_capacity(nodes),
        edges: capture.then(Vec::new),
        buffers: vec![],
        outputs: vec![],
        // `encode_view` appends 8 words before it cuts the list back: room for them at the end.
        key: Vec::with_capacity(words + 8),
        dead: vec![],
        unreadable: None,
    };
    w.key.push(0);
    let mut walks = walks();
    *walks.0 += 1;
    let ticket = *walks.0;
    let held = &walks;
    // While `walks` is held, marks are read and written by this walk alone. `Relaxed`
    // suffices: the lock orders one walk's marks before the next walk's reads.
    let seen = |node: &LazyNode| node.walked.load(Ordering::Relaxed) == ticket;
    let id_of = |node: &LazyNode| node.walk_id.load(Ordering::Relaxed);
    let mark = |node: &LazyNode, id: u32| {
        node.walk_id.store(id, Ordering::Relaxed);
        node.walked.store(ticket, Ordering::Relaxed);
    };
    // Consumer edges inside the graph, per node.
    let mut uses: Vec<usize> = Vec::with_capacity(nodes);
    // The nodes in graph order, borrowed: the roots hold them, through inputs that cannot
    // change while `walks` is held, so the walk counts no references until it keeps some.
    let mut order: Vec<&Arc<LazyNode>> = Vec::with_capacity(nodes);
    // Iterative post-order DFS so that long eager chains do not overflow the stack. A node is
    // pushed unexpanded (`false`) and, once its inputs are pushed above it, expanded (`true`).
    let mut stack: Vec<(&Arc<LazyNode>, bool)> = Vec::with_capacity(2 * nodes);
    stack.extend(roots.iter().map(|r| (r, false)));
    while let Some((node, expanded)) = stack.pop() {
        let id = order.len() as u32;
        if !expanded {
            if seen(node) {
                continue;
            }
            let slot = w.buffers.len();
            let below = stack.len();
            let pending = match node.state(held) {
                NodeState::Realized(b) => {
                    w.buffers.push(b.clone());
                    false
                }
                NodeState::Lost => {
                    w.unreadable = Some(Unreadable::Lost);
                    false
                }
                NodeState::Pending(_) if matches!(node.op, Op::Input { .. }) => {
                    w.unreadable = Some(Unreadable::Taken);
                    false
                }
                NodeState::Pending(inputs) => {
                    // The inputs go above the node, to be expanded first.
                    for (input, _) in inputs.iter().rev() {
                        if !seen(input) {
                            stack.push((input, false));
                        }
                    }
                    true
                }
            };
            if pending {
                stack.insert(below, (node, true));
                continue;
            }
            encode_op(&Op::Input { slot }, &mut w.key);
            encode_node(node, 0, &mut w.key);
            mark(node, id);
            order.push(node);
            w.inputs.push(None);
            uses.push(0);
            continue;
        }
        {
            let NodeState::Pending(inputs) = node.state(held) else {
                unreachable!("invariant: a node's inputs change only while no walk runs")
            };
            encode_op(&node.op, &mut w.key);
            encode_node(node, inputs.len(), &mut w.key);
            for (input, view) in inputs.iter() {
                debug_assert!(
                    seen(input),
                    "invariant: inputs are walked before their consumer"
                );
                let src = id_of(input);
                uses[src as usize] += 1;
                encode_view(view, src as u64, &mut w.key);
                if let Some(edges) = &mut w.edges {
                    edges.push((src, view.clone()));
                }
            }
            w.inputs.push(Some(inputs.len() as u32));
        }
        mark(node, id);
        order.push(node);
        uses.push(0);
    }
    w.key[0] = order.len() as u64;
    w.outputs = roots
        .iter()
        .map(|r| NodeId::new(id_of(r) as usize))
        .collect();
    let mut is_output = vec![false; order.len()];
    for o in &w.outputs {
        is_output[o.index()] = true;
    }
    // A pending node that something outside this graph still holds (a tensor handle, a
    // storage) must keep its buffer: count references beyond the graph's own edges.
    for (i, node) in order.iter().enumerate() {
        let external = Arc::strong_count(node) > uses[i] || is_output[i];
        if w.inputs[i].is_none() {
            // A realized buffer nobody outside this graph can reach any more (an old storage
            // version): realisation moves it into the graph, so its last reader may update it
            // in place.
            if !external && take_dead {
                w.dead.push(i);
            }
            continue;
        }
        match node.op {
            Op::Input { .. } | Op::Fill { .. } => {}
            Op::Unary { .. }
            | Op::Binary { .. }
            | Op::Where
            | Op::Cast
            | Op::Assign
            | Op::Reduce { .. }
            | Op::Library(_)
            | Op::Random { .. }
            | Op::Complex => {
                if external && !is_output[i] {
                    is_output[i] = true;
                    w.outputs.push(NodeId::new(i));
                }
            }
        }
    }
    w.key.push(w.outputs.len() as u64);
    w.key.extend(w.outputs.iter().map(|o| o.index() as u64));
    // Handles to what realisation changes once the lock is released (the outputs' results,
    // the dead inputs' buffers), or to everything when a graph is built from the walk.
    let mut keep = is_output;
    for &i in &w.dead {
        keep[i] = true;
    }
    w.lazy = order
        .iter()
        .zip(keep)
        .map(|(n, keep)| (capture || keep).then(|| Arc::clone(n)))
        .collect();
    drop(walks);
    SIZE_HINT.with(|h| h.set((w.lazy.len(), w.key.len())));
    w
}

/// Appends what a graph node has besides its op and its input edges: dtype and input count
/// (one word), length, output view.
fn encode_node(node: &LazyNode, inputs: usize, key: &mut Vec<u64>) {
    key.extend([node.dtype as u64 | (inputs as u64) << 8, node.len as u64]);
    encode_view(&node.out, 0, key);
}

impl Walk {
    /// An error when the graph reads an input that has no values now ([`Walk::unreadable`]).
    fn readable(&self) -> Result<()> {
        self.unreadable.map_or(Ok(()), |why| Err(why.error()))
    }

    /// The nodes of the dead inputs ([`Walk::dead`]), which the walk keeps.
    fn dead_nodes(&self) -> impl Iterator<Item = &Arc<LazyNode>> {
        self.dead.iter().map(|&i| {
            self.lazy[i]
                .as_ref()
                .expect("invariant: a walk keeps its dead inputs")
        })
    }

    /// The graph IR of the walked subgraph (nodes numbered in walk order). The walk must have
    /// captured its edges.
    pub(crate) fn graph(&self) -> Graph {
        let captured = self
            .edges
            .as_ref()
            .expect("invariant: a walk that builds a graph captured its edges");
        let mut edges = captured.iter();
        let mut graph = Graph::new();
        let mut slot = 0;
        for (node, inputs) in self.lazy.iter().zip(&self.inputs) {
            let node = node
                .as_ref()
                .expect("invariant: a walk that captured its edges keeps every node");
            let (op, edges) = match inputs {
                None => {
                    slot += 1;
                    (Op::Input { slot: slot - 1 }, vec![])
                }
                Some(n) => (
                    node.op.clone(),
                    edges
                        .by_ref()
                        .take(*n as usize)
                        .map(|(src, view)| (NodeId::new(*src as usize), view.clone()))
                        .collect(),
                ),
            };
            graph.add_node(
                Node {
                    op,
                    dtype: node.dtype,
                    len: node.len,
                    out: node.out.clone(),
                    location: Some(node.location),
                    note: node.note,
                },
                edges,
            );
        }
        graph.outputs = self.outputs.clone();
        graph
    }
}

/// The graph IR of everything `roots` still need, as realisation would see it (dumps and
/// `explain`; nothing moves into the graph).
pub(crate) fn pending_graph(roots: &[Arc<LazyNode>]) -> Graph {
    walk(roots, false, true).graph()
}

/// Realizes `roots`: compiles and runs everything they still need, then stores each computed
/// buffer in its lazy node and drops that node's inputs. Roots on several devices realise as
/// one graph per device, each on its device's target.
pub(crate) fn realize_nodes(roots: &[Arc<LazyNode>]) -> Result<()> {
    realize_nodes_with(roots, false, None)
}

/// [`realize_nodes`] with fusion on or off (`unfused`: every op its own kernel) on `target`
/// (`None`: the target of the roots' device, `Target::for_device`). The optimised graph and
/// schedule come from the plan cache when this graph shape was realized before with the same
/// passes.
pub(crate) fn realize_nodes_with(
    roots: &[Arc<LazyNode>],
    unfused: bool,
    target: Option<Target>,
) -> Result<()> {
    if roots.iter().all(|r| r.buffer().is_some()) {
        return Ok(());
    }
    let device = roots[0].device;
    if roots.iter().any(|r| r.device != device) {
        let mut devices: Vec<Device> = roots.iter().map(|r| r.device).collect();
        devices.sort_unstable();
        devices.dedup();
        for d in devices {
            let mine: Vec<_> = roots.iter().filter(|r| r.device == d).cloned().collect();
            realize_nodes_with(&mine, unfused, target)?;
        }
        return Ok(());
    }
    let target = match target {
        None => Target::for_device(device),
        Some(t) if t.device() == device => t,
        Some(t) => {
            return Err(smelt_ir::Error::device(format!(
                "cannot realise tensors on {device} with the {t} backend"
            )));
        }
    };
    // A device that cannot run fails here, before the walk moves dead buffers into the graph:
    // failing after that would leave their nodes without values for the next attempt.
    if let Target::Cuda(n) = target {
        smelt_runtime::cuda::backend(n)?;
    }
    let check = std::env::var("SMELT_CHECK").is_ok_and(|v| v == "1");
    let dump = std::env::var("SMELT_DUMP").unwrap_or_default();
    let wants = |what: &str| smelt_ir::dump_names(&dump, what);
    let mode = if unfused {
        crate::explain::Mode::Unfused
    } else {
        crate::explain::Mode::Fused
    };
    let disabled = crate::explain::disabled_passes(device, mode);
    // Dumps print what the passes do, so a realisation that dumps builds its plan afresh.
    let dumps = ["graph", "passes", "kernels", "all"]
        .iter()
        .any(|d| wants(d));
    // A walk copies its edges only when a graph is built from it: to check, to dump, or after a
    // miss in the plan cache (below).
    let mut walk = walk(roots, !check, check || dumps);
    walk.readable()?;
    let unoptimized = check.then(|| walk.graph());
    let build = |walk: &Walk| {
        let mut graph = walk.graph();
        if wants("graph") {
            eprintln!("realize: graph\n{}", graph.to_text());
        }
        smelt_passes::optimize_with(&mut graph, &disabled);
        let schedule = smelt_passes::schedule(&graph);
        if wants("kernels") {
            eprintln!("realize: kernels\n{}", schedule.to_text());
        }
        Plan {
            graph,
            exec: smelt_runtime::Executable::new(schedule),
        }
    };
    let key = |walk: &mut Walk| PlanKey {
        disabled: disabled.clone(),
        words: std::mem::take(&mut walk.key),
    };
    let plan = if dumps {
        Arc::new(build(&walk))
    } else {
        let first = key(&mut walk);
        match cached_plan(&first) {
            Some(plan) => plan,
            None if walk.edges.is_some() => cache_plan(first, build(&walk)),
            None => {
                // Walked again, copying the edges. (Another thread may have realised part of
                // the graph since: this walk is the one that runs, and its key the one cached.)
                // The first walk goes first: its handles would count as references from
                // outside the graph.
                drop(walk);
                walk = self::walk(roots, !check, true);
                walk.readable()?;
                let plan = build(&walk);
                cache_plan(key(&mut walk), plan)
            }
        }
    };
    let inputs = std::mem::take(&mut walk.buffers);
    let check_inputs = check.then(|| inputs.clone());
    // Everything that can fail before a launch (compiling, loading) fails before the dead
    // inputs move into the graph; a failure after it loses them ([`NodeState::Lost`]).
    smelt_runtime::prepare(target, &plan.exec)?;
    // Nodes' states change while no walk runs ([`WALKS`]).
    if !walk.dead.is_empty() {
        let mut held = walks();
        for node in walk.dead_nodes() {
            node.set_state(&mut held, NodeState::Pending(Inputs::new()));
        }
    }
    let buffers =
        smelt_runtime::execute(target, &plan.exec, &plan.graph, inputs).inspect_err(|_| {
            let mut held = walks();
            for node in walk.dead_nodes() {
                node.set_state(&mut held, NodeState::Lost);
            }
        })?;
    if let (Some(mut plain), Some(check_inputs)) = (unoptimized, check_inputs) {
        crate::check::compare_unfused(target, &mut plain, check_inputs, &buffers)?;
    }
    // Storing a result replaces the node's inputs, which may hold the last handles to a long
    // chain of nodes: they are freed once the lock is released.
    let mut replaced: smallvec::SmallVec<[NodeState; 1]> = smallvec::SmallVec::new();
    let mut held = walks();
    for (buffer, node) in buffers.iter().zip(&walk.lazy) {
        if let (Some(buffer), Some(node)) = (buffer, node)
            && matches!(node.state(&held), NodeState::Pending(_))
        {
            replaced.push(node.set_state(&mut held, NodeState::Realized(buffer.clone())));
        }
    }
    drop(held);
    drop(replaced);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use smelt_ir::BinaryOp;
    use smelt_runtime::HostBuffer;

    /// A realized node of four f32 and a pending `x + x` reading it.
    fn input_and_sum() -> (Arc<LazyNode>, Arc<LazyNode>) {
        let out = View::contiguous(&[4]);
        let buffer: Buffer = HostBuffer::F32(vec![1.0, 2.0, 3.0, 4.0].into()).into();
        let x = LazyNode::realized(buffer, DType::F32, out.clone());
        let add = Op::Binary {
            op: BinaryOp::Add,
            compute: DType::F32,
        };
        let inputs = vec![(x.clone(), out.clone()), (x.clone(), out.clone())];
        let sum = LazyNode::pending_on(Device::Cpu, add, DType::F32, 4, out, inputs);
        (x, sum)
    }

    #[test]
    fn a_walk_reaching_a_buffer_another_realisation_took_refuses_to_run() {
        let (x, sum) = input_and_sum();
        // What a realisation on another thread leaves while it updates `x`'s buffer in place.
        x.set_state(&mut walks(), NodeState::Pending(Inputs::new()));
        let w = walk(std::slice::from_ref(&sum), true, false);
        assert_eq!(w.unreadable, Some(Unreadable::Taken));
        let err = realize_nodes(&[sum]).unwrap_err().to_string();
        assert!(err.contains("another thread"), "{err}");
    }

    #[test]
    fn a_walk_numbers_inputs_before_their_consumer_and_counts_each_edge() {
        let (_x, sum) = input_and_sum();
        let w = walk(std::slice::from_ref(&sum), true, true);
        assert_eq!(w.unreadable, None);
        assert_eq!(w.lazy.len(), 2);
        assert!(Arc::ptr_eq(w.lazy[1].as_ref().expect("kept"), &sum));
        let graph = w.graph();
        assert_eq!(graph.outputs, vec![NodeId::new(1)]);
        let words = |roots: &[Arc<LazyNode>]| walk(roots, true, false).key;
        // The same structure walked again gives the same key (a plan-cache hit).
        assert_eq!(words(std::slice::from_ref(&sum)), w.key);
        realize_nodes(std::slice::from_ref(&sum)).unwrap();
        let host = sum.buffer().expect("realized").to_host().unwrap();
        let values: Vec<f64> = (0..4)
            .map(|i| host.get_as(DType::F64, i).as_f64())
            .collect();
        assert_eq!(values, [2.0, 4.0, 6.0, 8.0]);
    }
}
