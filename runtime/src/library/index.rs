//! Advanced indexing with several index tensors: reads (`x[i, j]`) and writes
//! (`x[i, j] = v`, index_put). The indexed dims come first in the source/target view, the
//! index tensors are viewed with their common broadcast shape `B`.

use super::{checked_index, for_each_index};
use crate::buffer::HostBuffer;
use smelt_ir::{LibraryCall, View};
use std::sync::Arc;

/// The source point for output point `(b, r)`, or `None` when an index is out of range.
fn source_point(
    target: &View,
    indices: &[(&Arc<HostBuffer>, &View)],
    b: &[usize],
    r: &[usize],
    point: &mut Vec<usize>,
) -> Option<()> {
    point.clear();
    for (d, (buf, view)) in indices.iter().enumerate() {
        point.push(checked_index(
            buf.get(view.address(b) as usize).as_i64(),
            target.shape[d],
            true,
        )?);
    }
    point.extend_from_slice(r);
    Some(())
}

/// `out[b, r] = src[idx_1[b], .., idx_k[b], r]`.
pub fn index(call: &LibraryCall, inputs: &[Arc<HostBuffer>], out: &mut HostBuffer, k: usize) {
    let (src, sv) = (&inputs[0], &call.inputs[0].1);
    let ov = &call.out;
    let rest = sv.ndim() - k;
    let b_rank = ov.ndim() - rest;
    let indices: Vec<(&Arc<HostBuffer>, &View)> =
        (1..=k).map(|i| (&inputs[i], &call.inputs[i].1)).collect();
    assert!(
        indices.iter().all(|(_, v)| v.ndim() == b_rank),
        "invariant: index views have the broadcast shape"
    );
    let mut sp = Vec::with_capacity(sv.ndim());
    for_each_index(&ov.shape, |p| {
        let (b, r) = p.split_at(b_rank);
        if source_point(sv, &indices, b, r, &mut sp).is_some() {
            let v = src.get_as(call.inputs[0].0, sv.address(&sp) as usize);
            out.set_as(call.dtype, ov.address(p) as usize, v);
        }
    });
}

/// `out[target(idx_1[b], .., idx_k[b], r)] = values[b, r]` on a copy of the old version;
/// with repeated indices the last write wins.
pub fn index_put(call: &LibraryCall, inputs: &[Arc<HostBuffer>], out: &mut HostBuffer, k: usize) {
    let (vals, vv) = (&inputs[1], &call.inputs[1].1);
    let tv = &call.out;
    // The target may read the storage as parts (`z.real[i] = v`): elements of that dtype.
    let dtype = tv.read.dtype(call.dtype);
    let rest = tv.ndim() - k;
    let b_rank = vv.ndim() - rest;
    let indices: Vec<(&Arc<HostBuffer>, &View)> = (2..2 + k)
        .map(|i| (&inputs[i], &call.inputs[i].1))
        .collect();
    let mut tp = Vec::with_capacity(tv.ndim());
    for_each_index(&vv.shape, |p| {
        let (b, r) = p.split_at(b_rank);
        if source_point(tv, &indices, b, r, &mut tp).is_some() {
            let v = vals.get_as(call.inputs[1].0, vv.address(p) as usize);
            out.set_as(dtype, tv.address(&tp) as usize, v);
        }
    });
}
