//! Executes a schedule: runs each step's kernel on its backend, hands buffers from producers
//! to consumers (a multi-output kernel produces several), frees each buffer after its last
//! use. `SMELT_DEVICE=cuda[:N]` runs the generated kernels and f32/f64 matmuls (cuBLAS) on that
//! CUDA device; other library calls stay on the host.

use crate::backend::Backend;
use crate::buffer::Buffer;
use smelt_ir::{Device, Graph, Op, Result, Schedule, Work};
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
        let outs = match &step.work {
            Work::Kernel(k) => match device {
                Device::Cpu => backend.run_kernel(k, args),
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
        for (node, out) in step.writes.iter().zip(outs) {
            buffers[node.index()] = Some(Arc::new(out));
        }
    }
    Ok(buffers)
}
