//! `smelt::explain`: the kernels a realisation would run, the ops each fuses, why each kernel
//! boundary exists (the rule that refused to fuse), the bytes each kernel moves, and its IR.

use crate::lazy::pending_graph;
use crate::tensor::Tensor;
use smelt_ir::graph::NodeId;
use smelt_ir::kernel::{Access, Instr, Work};
use smelt_ir::{Graph, Schedule, View};
use smelt_runtime::Device;
use std::fmt::{self, Write as _};

/// Fused (the default pipeline) or unfused (fusion off: one kernel per op).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The default pipeline: fusion and copy elimination on.
    Fused,
    /// Fusion and copy elimination off: one kernel per op, a baseline for measurements.
    Unfused,
}

impl Mode {
    /// `fused` or `unfused`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Fused => "fused",
            Mode::Unfused => "unfused",
        }
    }
}

/// The passes the unfused mode turns off.
pub const UNFUSED_DISABLES: &[&str] = &["fuse", "eliminate_copies", "fold_bias"];

/// The passes off for graphs realised on `device`: CUDA runs float products on cuBLAS, which
/// the `matmul_add` calls `fold_bias` makes would leave for a rendered loop. (Public for
/// tests that record a graph's kernels on the cpu backend as another device would run them.)
pub fn device_disables(device: Device) -> &'static [&'static str] {
    match device {
        Device::Cpu => &[],
        Device::Cuda(_) => &["fold_bias"],
    }
}

/// The passes a realisation on `device` in `mode` runs without, sorted: `SMELT_DISABLE`'s (and
/// the thread's), the device's, and for the unfused mode [`UNFUSED_DISABLES`].
pub(crate) fn disabled_passes(device: Device, mode: Mode) -> Vec<String> {
    let mut disabled = smelt_passes::disabled_by_env();
    disabled.extend(device_disables(device).iter().map(|s| s.to_string()));
    if mode == Mode::Unfused {
        // Every op its own kernel: no fusion, and copies stay copies.
        disabled.extend(UNFUSED_DISABLES.iter().map(|s| s.to_string()));
    }
    disabled.sort_unstable();
    disabled.dedup();
    disabled
}

/// One kernel of the plan.
#[derive(Clone, Debug)]
pub struct KernelInfo {
    /// The kernel's name, as the dumps and profilers show it.
    pub name: String,
    /// The graph ops it computes (`%id op @ file:line`), root first.
    pub ops: Vec<String>,
    /// The ops whose buffers it writes, in output order (several for a multi-output kernel).
    pub outputs: Vec<String>,
    /// Bytes it reads and writes (distinct elements of each buffer it touches).
    pub bytes: u64,
    /// Its kernel IR (or library call) text.
    pub ir: String,
}

/// A kernel boundary and the rule that made it.
#[derive(Clone, Debug)]
pub struct BoundaryInfo {
    /// The op writing the buffer at the boundary (`%id op @ file:line`).
    pub producer: String,
    /// The op reading it in another kernel.
    pub consumer: String,
    /// The rule that kept the two apart.
    pub reason: String,
}

/// The plan for realizing one tensor (or several together).
#[derive(Clone, Debug)]
pub struct Explain {
    /// Fused or unfused.
    pub mode: Mode,
    /// Where the kernels run: the realisation's storages' device. A realisation copies nothing
    /// between host and device; its buffers stay where they are.
    pub device: Device,
    /// The kernels in schedule order.
    pub kernels: Vec<KernelInfo>,
    /// Every kernel boundary and the rule that made it.
    pub boundaries: Vec<BoundaryInfo>,
    /// The bytes all the kernels read and write together.
    pub bytes_moved: u64,
    /// Inputs of a device realisation that an op with a data-dependent result size
    /// (`nonzero`, `masked_select`, a bool index) computed on the host and copied over when
    /// it was called: the host round trips behind this plan.
    pub round_trips: Vec<String>,
}

/// Distinct elements an index over `shape` with `strides` touches (dims with stride 0 repeat).
fn touched(shape: &[usize], strides: &[isize]) -> u64 {
    shape
        .iter()
        .zip(strides)
        .filter(|(_, s)| **s != 0)
        .map(|(&n, _)| n as u64)
        .product()
}

fn view_touched(v: &View) -> u64 {
    touched(&v.shape, &v.strides)
}

fn work_bytes(work: &Work) -> u64 {
    match work {
        Work::Kernel(k) => {
            // Per argument: the widest access, or the distinct single elements read (a
            // random draw's seed and offset) where those are all there is.
            let mut per_arg = vec![0u64; k.args.len()];
            let mut points: Vec<Vec<isize>> = vec![vec![]; k.args.len()];
            for instr in &k.body {
                if let Instr::Load { arg, index } | Instr::Store { arg, index, .. } = instr {
                    let n = touched(&k.shape, &index.strides);
                    if n == 1 && !points[*arg].contains(&index.offset) {
                        points[*arg].push(index.offset);
                    }
                    per_arg[*arg] = per_arg[*arg].max(n);
                }
            }
            for (n, p) in per_arg.iter_mut().zip(&points) {
                *n = (*n).max(p.len() as u64);
            }
            k.args
                .iter()
                .zip(&per_arg)
                .map(|(a, &n)| {
                    let n = if let Access::Update { .. } = a.access {
                        n * 2
                    } else {
                        n
                    };
                    n.min(a.len as u64 * 2) * a.dtype.size() as u64
                })
                .sum()
        }
        Work::Library(c) => {
            let ins: u64 = c
                .inputs
                .iter()
                .map(|(d, v)| view_touched(v) * d.size() as u64)
                .sum();
            ins + view_touched(&c.out) * c.dtype.size() as u64
        }
    }
}

fn describe_node(g: &Graph, id: NodeId) -> String {
    let n = g.node(id);
    let at = n
        .location
        .map(|l| format!(" @ {}:{}", l.file(), l.line()))
        .unwrap_or_default();
    format!("%{} {}{at}", id.index(), n.op.name())
}

/// Builds the plan of `g` (already optimised) and its schedule, run on `device`.
pub fn plan(g: &Graph, schedule: &Schedule, mode: Mode, device: Device) -> Explain {
    let kernels: Vec<KernelInfo> = schedule
        .steps
        .iter()
        .map(|step| {
            let outputs: Vec<String> = step.writes.iter().map(|w| describe_node(g, *w)).collect();
            let ops = match g
                .groups
                .iter()
                .find(|grp| grp.output_nodes() == step.writes)
            {
                Some(grp) => grp.members.iter().map(|m| describe_node(g, *m)).collect(),
                None => outputs.clone(),
            };
            KernelInfo {
                outputs,
                name: step.work.name(),
                ops,
                bytes: work_bytes(&step.work),
                ir: step.work.to_text(),
            }
        })
        .collect();
    let live = g.live();
    let boundaries = match mode {
        Mode::Fused => g
            .boundaries
            .iter()
            .filter(|b| live[b.producer.index()] && live[b.consumer.index()])
            .map(|b| BoundaryInfo {
                producer: describe_node(g, b.producer),
                consumer: describe_node(g, b.consumer),
                reason: b.reason.clone(),
            })
            .collect(),
        Mode::Unfused => schedule
            .steps
            .iter()
            .flat_map(|s| s.reads.iter().map(move |r| (*r, s.writes[0])))
            .filter(|(r, _)| !matches!(g.node(*r).op, smelt_ir::Op::Input { .. }))
            .map(|(p, c)| BoundaryInfo {
                producer: describe_node(g, p),
                consumer: describe_node(g, c),
                reason: "fusion disabled".into(),
            })
            .collect(),
    };
    let bytes_moved = kernels.iter().map(|k| k.bytes).sum();
    let round_trips = if device.is_cuda() {
        g.graph
            .node_indices()
            .filter(|&id| matches!(g.node(id).op, smelt_ir::Op::Input { .. }))
            .filter_map(|id| {
                let note = g.node(id).note?;
                Some(format!(
                    "{} ({note}): computed on the host, copied to {device}",
                    describe_node(g, id)
                ))
            })
            .collect()
    } else {
        vec![]
    };
    Explain {
        mode,
        device,
        kernels,
        boundaries,
        bytes_moved,
        round_trips,
    }
}

/// The fused plan for realizing `t`: kernels, what each fuses, why each boundary exists,
/// bytes moved, kernel IR. Nothing runs.
///
/// ```
/// # use smelt_frontend as smelt;
/// use smelt::prelude::*;
/// let x = Tensor::new([1.0f32, -2.0, 3.0]);
/// let y = (x.exp() + 1.0).relu();
/// assert_eq!(smelt::explain(&y).kernels.len(), 1); // one fused kernel
/// ```
pub fn explain(t: &Tensor) -> Explain {
    explain_all_mode(&[t], Mode::Fused)
}

/// The plan for realizing `t` fused or unfused ([`Mode`]). Nothing runs.
pub fn explain_mode(t: &Tensor, mode: Mode) -> Explain {
    explain_all_mode(&[t], mode)
}

/// The fused plan for realizing `tensors` together ([`crate::realize`]): one compilation, and
/// kernels whose outputs share an iteration space store several of them. Nothing runs.
pub fn explain_all(tensors: &[&Tensor]) -> Explain {
    explain_all_mode(tensors, Mode::Fused)
}

/// The plan for realizing `tensors` together, fused or unfused ([`Mode`]). Nothing runs.
pub fn explain_all_mode(tensors: &[&Tensor], mode: Mode) -> Explain {
    let roots: Vec<_> = tensors.iter().map(|t| t.storage.current()).collect();
    let mut graph = pending_graph(&roots);
    let device = tensors
        .first()
        .map_or_else(crate::device::get_default_device, |t| t.device());
    smelt_passes::optimize_with(&mut graph, &disabled_passes(device, mode));
    let schedule = smelt_passes::schedule(&graph);
    plan(&graph, &schedule, mode, device)
}

fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

impl Explain {
    /// `{"workload","mode","kernels","bytes_moved","boundaries":[…]}` on one line.
    pub fn to_json(&self, workload: &str) -> String {
        let boundaries: Vec<String> = self
            .boundaries
            .iter()
            .map(|b| {
                format!(
                    "{{\"producer\":{},\"consumer\":{},\"reason\":{}}}",
                    json_str(&b.producer),
                    json_str(&b.consumer),
                    json_str(&b.reason)
                )
            })
            .collect();
        format!(
            "{{\"workload\":{},\"mode\":\"{}\",\"device\":\"{}\",\"kernels\":{},\"bytes_moved\":{},\"host_round_trips\":{},\"boundaries\":[{}]}}",
            json_str(workload),
            self.mode.name(),
            self.device,
            self.kernels.len(),
            self.bytes_moved,
            self.round_trips.len(),
            boundaries.join(",")
        )
    }
}

impl fmt::Display for Explain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} kernel(s) on {}, {} bytes moved ({}){}",
            self.kernels.len(),
            self.device,
            self.bytes_moved,
            self.mode.name(),
            if self.device.is_cuda() {
                "; buffers stay on the device: no host↔device copy"
            } else {
                ""
            }
        );
        for r in &self.round_trips {
            let _ = writeln!(s, "host round trip before this plan: {r}");
        }
        for (i, k) in self.kernels.iter().enumerate() {
            let _ = writeln!(s, "\nkernel {i}: {} — {} bytes", k.name, k.bytes);
            for op in &k.ops {
                let _ = writeln!(s, "  fuses {op}");
            }
            if k.outputs.len() > 1 {
                let _ = writeln!(s, "  stores {}", k.outputs.join(", "));
            }
            for line in k.ir.lines() {
                let _ = writeln!(s, "  | {line}");
            }
        }
        if !self.boundaries.is_empty() {
            let _ = writeln!(s, "\nkernel boundaries:");
            for b in &self.boundaries {
                let _ = writeln!(s, "  {} -> {}: {}", b.producer, b.consumer, b.reason);
            }
        }
        f.write_str(&s)
    }
}
