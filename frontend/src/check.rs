//! `SMELT_CHECK=1`: every realisation also runs unoptimised (every pass off: one kernel per
//! op) on the reference interpreter, the oracle, and the requested outputs are compared; the
//! first output node whose values differ is reported as an error naming the node, its op and its source line.

use smelt_ir::{Error, ErrorKind, Graph, Result};
use smelt_runtime::Buffer;
use std::sync::Arc;

fn close(a: &Buffer, b: &Buffer) -> Option<usize> {
    (0..a.len().min(b.len())).find(|&i| {
        let (x, y) = (a.get(i), b.get(i));
        if a.dtype().is_float() {
            let (x, y) = (x.as_f64(), y.as_f64());
            !(x == y || x.is_nan() && y.is_nan() || (x - y).abs() <= 1e-6 + 1e-5 * y.abs())
        } else {
            x != y
        }
    })
}

/// Runs `plain` with every pass disabled on `inputs` on the reference backend and compares its outputs with `optimized`.
pub(crate) fn compare_unfused(
    plain: &mut Graph,
    inputs: Vec<Arc<Buffer>>,
    optimized: &[Option<Arc<Buffer>>],
) -> Result<()> {
    let all: Vec<String> = smelt_passes::PIPELINE
        .iter()
        .map(|(n, _)| n.to_string())
        .collect();
    smelt_passes::optimize_with(plain, &all);
    let schedule = smelt_passes::schedule(plain);
    let reference =
        smelt_runtime::execute_on(smelt_runtime::Backend::Reference, plain, &schedule, inputs)?;
    let order = plain.topo_order();
    for id in order.into_iter().filter(|id| plain.outputs.contains(id)) {
        let (Some(a), Some(b)) = (&optimized[id.index()], &reference[id.index()]) else {
            continue;
        };
        if let Some(i) = close(a, b) {
            let n = plain.node(id);
            let at = n
                .location
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            return Err(Error::new(
                ErrorKind::Compile,
                format!(
                    "SMELT_CHECK: node %{} ({}){at} differs between the optimised and the one-kernel-per-op runs at element {i}: {} vs {}",
                    id.index(),
                    n.op.name(),
                    a.get(i),
                    b.get(i)
                ),
            ));
        }
    }
    Ok(())
}
