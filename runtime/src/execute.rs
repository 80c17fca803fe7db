//! Executes a schedule on one target: prepares its steps once (kept in the [`Executable`]),
//! runs each step's kernel or library routine on that target's [`Backend`], hands buffers from
//! producers to consumers (a multi-output kernel produces several), frees each buffer after
//! its last use. Every buffer stays where the target runs: nothing crosses between host and
//! device here.

use crate::backend::{Backend, Executable};
use crate::buffer::{Buffer, HostBuffer};
use crate::device::Target;
use smelt_ir::{Graph, Kernel, NodeId, Op, Result, Scalar, Step, Work};
use std::sync::Arc;

/// Calls `$body` with `$b` bound to the backend of `$target` (static dispatch: each backend's
/// prepared steps keep their own type).
macro_rules! on_backend {
    ($target:expr, $b:ident => $body:expr) => {
        match $target {
            Target::Reference => {
                let $b = &crate::reference::Reference;
                $body
            }
            Target::Cpu => {
                let $b = &crate::cpu::Cpu;
                $body
            }
            Target::Cuda(n) => {
                let device = crate::cuda::backend(n)?;
                let $b = &*device;
                $body
            }
        }
    };
}

/// Runs `exec` for graph `g` on `target`; the graph's `Input` nodes hold `inputs` (by slot),
/// which live on the target's device. Returns, per graph node, the buffer it produced (or
/// held), where still alive. Launches may still be running on a device when this returns:
/// reading a buffer's values ([`Buffer::to_host`]) waits for them.
pub fn execute(
    target: Target,
    exec: &Executable,
    g: &Graph,
    inputs: Vec<Buffer>,
) -> Result<Vec<Option<Buffer>>> {
    on_backend!(target, b => run(b, exec, g, inputs, None))
}

/// Prepares `exec` for `target` now (compiles and loads its kernels where the backend
/// compiles), so that a realisation learns of such failures before it runs anything.
pub fn prepare(target: Target, exec: &Executable) -> Result<()> {
    on_backend!(target, b => b.prepared(exec).map(drop))
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

/// [`execute`], and every kernel also runs on the reference interpreter with the very same
/// input values (copied to the host where the target is a device); `agree` compares each
/// output pair (the element where they differ, if any). Comparing kernel by kernel holds each
/// kernel to its own error, which a chain of ill-conditioned ops would otherwise multiply.
pub fn execute_audited(
    target: Target,
    exec: &Executable,
    g: &Graph,
    inputs: Vec<Buffer>,
    agree: &dyn Fn(&HostBuffer, &HostBuffer) -> Option<usize>,
) -> Result<(Vec<Option<Buffer>>, Option<Mismatch>)> {
    let mut found = None;
    let mut audit = |step: &Step, args: &[Buffer], outs: &[Buffer]| -> Result<()> {
        let Work::Kernel(k) = &step.work else {
            return Ok(());
        };
        if found.is_some() {
            return Ok(());
        }
        let host_args = args.iter().map(Buffer::to_host).collect::<Result<_>>()?;
        let want = crate::reference::run_kernel(k, host_args);
        for ((node, got), want) in step.writes.iter().zip(outs).zip(&want) {
            let got = got.to_host()?;
            if let Some(element) = agree(&got, want) {
                found = Some(Mismatch {
                    kernel: k.name.clone(),
                    node: *node,
                    element,
                    got: got.get(element),
                    want: want.get(element),
                });
                break;
            }
        }
        Ok(())
    };
    let buffers = on_backend!(target, b => run(b, exec, g, inputs, Some(&mut audit)))?;
    Ok((buffers, found))
}

/// Sees each step's arguments and outputs.
type Audit<'a> = &'a mut dyn FnMut(&Step, &[Buffer], &[Buffer]) -> Result<()>;

fn run<B: Backend>(
    backend: &B,
    exec: &Executable,
    g: &Graph,
    inputs: Vec<Buffer>,
    mut audit: Option<Audit<'_>>,
) -> Result<Vec<Option<Buffer>>> {
    let schedule = exec.schedule();
    crate::record::observe(schedule);
    let device = backend.target().device();
    let prepared = backend.prepared(exec)?;
    let mut buffers: Vec<Option<Buffer>> = vec![None; schedule.nodes];
    let mut inputs: Vec<Option<Buffer>> = inputs.into_iter().map(Some).collect();
    for id in g.graph.node_indices() {
        if let Op::Input { slot } = g.node(id).op {
            let buffer = inputs[slot].take();
            if let Some(b) = &buffer {
                assert_eq!(
                    b.device(),
                    device,
                    "invariant: a realisation's inputs live where its target runs"
                );
            }
            buffers[id.index()] = buffer;
        }
    }
    for (step, prepared) in schedule.steps.iter().zip(prepared.iter()) {
        let args: Vec<Buffer> = step
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
        let kept: Option<Vec<Buffer>> = audit.as_ref().map(|_| args.clone());
        let outs = match &step.work {
            Work::Kernel(k) => backend.run_kernel(k, prepared, args)?,
            Work::Library(call) => vec![backend.run_library(call, prepared, args)?],
        };
        assert_eq!(
            outs.len(),
            step.writes.len(),
            "invariant: a step produces one buffer per node it writes"
        );
        if let (Some(audit), Some(kept)) = (audit.as_mut(), &kept) {
            audit(step, kept, &outs)?;
        }
        for (node, out) in step.writes.iter().zip(outs) {
            buffers[node.index()] = Some(out);
        }
    }
    Ok(buffers)
}

impl Target {
    /// Runs one kernel on this target with host inputs (in argument order) and returns its
    /// outputs on the host: the inputs are copied to the device and the outputs back where
    /// the target is one. For tests that run a kernel on every backend.
    pub fn try_run_kernel(
        self,
        kernel: &Kernel,
        inputs: Vec<Arc<HostBuffer>>,
    ) -> Result<Vec<HostBuffer>> {
        let work = Work::Kernel(kernel.clone());
        let outs = on_backend!(self, b => {
            #[allow(clippy::let_unit_value)] // the reference backend prepares nothing
            let prepared = b.prepare(&work)?;
            let args = inputs
                .into_iter()
                .map(|h| b.upload(h))
                .collect::<Result<Vec<_>>>()?;
            b.run_kernel(kernel, &prepared, args)?
        });
        outs.iter()
            .map(|o| {
                o.to_host()
                    .map(|h| Arc::try_unwrap(h).unwrap_or_else(|shared| (*shared).clone()))
            })
            .collect()
    }

    /// [`Target::try_run_kernel`], panicking with the error (a test's convenience).
    #[track_caller]
    pub fn run_kernel(self, kernel: &Kernel, inputs: Vec<Arc<HostBuffer>>) -> Vec<HostBuffer> {
        self.try_run_kernel(kernel, inputs)
            .unwrap_or_else(|e| panic!("{self}: {e}"))
    }
}
