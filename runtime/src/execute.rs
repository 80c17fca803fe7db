//! Executes a schedule: runs each step's kernel on its backend, hands buffers from producers
//! to consumers (a multi-output kernel produces several), frees each buffer after its last
//! use. `SMELT_DEVICE=cuda[:N]` runs the generated kernels and f32/f64 matmuls (cuBLAS) on that
//! CUDA device; other library calls stay on the host.

use crate::backend::Backend;
use crate::buffer::Buffer;
use smelt_ir::{Device, Graph, NodeId, Op, Result, Scalar, Schedule, Step, Work};
use std::sync::Arc;

/// Runs `schedule` for graph `g` whose `Input` nodes hold `inputs` (by slot) on the backend
/// `SMELT_BACKEND` selects. Returns, per graph node, the buffer it produced (or held), where
/// still alive.
pub fn execute(
    g: &Graph,
    schedule: &Schedule,
    inputs: Vec<Arc<Buffer>>,
) -> Result<Vec<Option<Arc<Buffer>>>> {
    execute_on(Backend::from_env(), g, schedule, inputs)
}

/// [`execute`] on a given backend.
pub fn execute_on(
    backend: Backend,
    g: &Graph,
    schedule: &Schedule,
    inputs: Vec<Arc<Buffer>>,
) -> Result<Vec<Option<Arc<Buffer>>>> {
    run(backend, g, schedule, inputs, None)
}

/// What [`execute_audited`] found: the first kernel whose outputs differ from the reference
/// interpreter's on the same inputs.
#[derive(Debug)]
pub struct Mismatch {
    /// The kernel, the graph node of the differing output, and where it differs.
    pub kernel: String,
    pub node: NodeId,
    pub element: usize,
    pub got: Scalar,
    pub want: Scalar,
}

/// [`execute_on`], and every kernel also runs on the reference interpreter with the very same
/// input buffers; `agree` compares each output pair (the element where they differ, if any).
/// Comparing kernel by kernel holds each kernel to its own error, which a chain of
/// ill-conditioned ops would otherwise multiply.
pub fn execute_audited(
    backend: Backend,
    g: &Graph,
    schedule: &Schedule,
    inputs: Vec<Arc<Buffer>>,
    agree: &dyn Fn(&Buffer, &Buffer) -> Option<usize>,
) -> Result<(Vec<Option<Arc<Buffer>>>, Option<Mismatch>)> {
    let mut found = None;
    let mut audit = |step: &Step, args: &[Arc<Buffer>], outs: &[Buffer]| {
        let Work::Kernel(k) = &step.work else { return };
        if found.is_some() {
            return;
        }
        let want = Backend::Reference.run_kernel(k, args.to_vec());
        for ((node, got), want) in step.writes.iter().zip(outs).zip(&want) {
            if let Some(element) = agree(got, want) {
                found = Some(Mismatch {
                    kernel: k.name.clone(),
                    node: *node,
                    element,
                    got: got.get(element),
                    want: want.get(element),
                });
                return;
            }
        }
    };
    let buffers = run(backend, g, schedule, inputs, Some(&mut audit))?;
    Ok((buffers, found))
}

/// Sees each step's arguments and outputs.
type Audit<'a> = &'a mut dyn FnMut(&Step, &[Arc<Buffer>], &[Buffer]);

fn run(
    backend: Backend,
    g: &Graph,
    schedule: &Schedule,
    inputs: Vec<Arc<Buffer>>,
    mut audit: Option<Audit<'_>>,
) -> Result<Vec<Option<Arc<Buffer>>>> {
    crate::record::observe(schedule);
    let device = Device::from_env()?;
    if let Device::Cuda(n) = device {
        crate::cuda::status(n)?;
    }
    let mut buffers: Vec<Option<Arc<Buffer>>> = vec![None; schedule.nodes];
    let mut inputs: Vec<Option<Arc<Buffer>>> = inputs.into_iter().map(Some).collect();
    for id in g.graph.node_indices() {
        if let Op::Input { slot } = g.node(id).op {
            buffers[id.index()] = inputs[slot].take();
        }
    }
    for step in &schedule.steps {
        let args: Vec<Arc<Buffer>> = step
            .reads
            .iter()
            .map(|r| {
                buffers[r.index()]
                    .clone()
                    .expect("invariant: a step's inputs are computed before it")
            })
            .collect();
        // Release our own handles on buffers this step reads last, so an in-place update
        // can take their memory.
        for f in &step.frees {
            buffers[f.index()] = None;
        }
        // An audit needs the arguments as they were: holding them keeps an in-place output
        // from taking their memory (it copies instead).
        let kept: Option<Vec<Arc<Buffer>>> = audit.as_ref().map(|_| args.clone());
        let outs = match &step.work {
            Work::Kernel(k) => match device {
                Device::Cpu => backend.run_step_kernel(k, &step.memo, args),
                Device::Cuda(n) => crate::cuda::run_kernel(n, k, &args)?,
            },
            Work::Library(call) => vec![match device {
                Device::Cpu => crate::library::run_library(call, &args),
                Device::Cuda(n) => crate::cuda::run_library(n, call, &args)?,
            }],
        };
        assert_eq!(
            outs.len(),
            step.writes.len(),
            "invariant: a step produces one buffer per node it writes"
        );
        if let (Some(audit), Some(kept)) = (audit.as_mut(), &kept) {
            audit(step, kept, &outs);
        }
        for (node, out) in step.writes.iter().zip(outs) {
            buffers[node.index()] = Some(Arc::new(out));
        }
    }
    Ok(buffers)
}
