//! Gather-like reads with one index tensor: `gather`, `index_select` and `take`. Indices are
//! checked again here (the frontend already raised on bad ones): an out-of-range index leaves
//! its output element zero. Elements move whole (a complex one as its two parts).

use super::{checked_index, for_each_index};
use crate::buffer::HostBuffer;
use smelt_ir::LibraryCall;
use std::sync::Arc;

/// `out[p] = self[p with p[dim] = index[p]]`; output shape = index shape.
pub fn gather(call: &LibraryCall, inputs: &[Arc<HostBuffer>], out: &mut HostBuffer, dim: usize) {
    let (src, (sd, sv)) = (&inputs[0], (call.inputs[0].0, &call.inputs[0].1));
    let (idx, iv) = (&inputs[1], &call.inputs[1].1);
    let ov = &call.out;
    assert!(
        sv.ndim() == ov.ndim() && iv.shape == ov.shape && dim < sv.ndim().max(1),
        "invariant: gather views agree"
    );
    if sv.ndim() == 0 {
        // A 0-dim self is indexed like a 1-element vector.
        for_each_index(&ov.shape, |p| {
            if checked_index(idx.get(iv.address(p) as usize).as_i64(), 1, false).is_some() {
                out.set_as(
                    call.dtype,
                    ov.address(p) as usize,
                    src.get_as(sd, sv.offset),
                );
            }
        });
        return;
    }
    let mut sp = vec![0usize; sv.ndim()];
    for_each_index(&ov.shape, |p| {
        let Some(i) = checked_index(
            idx.get(iv.address(p) as usize).as_i64(),
            sv.shape[dim],
            false,
        ) else {
            return;
        };
        sp.copy_from_slice(p);
        sp[dim] = i;
        if sp.iter().zip(&sv.shape).all(|(a, s)| a < s) {
            out.set_as(
                call.dtype,
                ov.address(p) as usize,
                src.get_as(sd, sv.address(&sp) as usize),
            );
        }
    });
}

/// `out[.., i, ..] = self[.., index[i], ..]` along `dim`; a 0-dim self takes index `[0]`.
pub fn index_select(
    call: &LibraryCall,
    inputs: &[Arc<HostBuffer>],
    out: &mut HostBuffer,
    dim: usize,
) {
    let (src, (sd, sv)) = (&inputs[0], (call.inputs[0].0, &call.inputs[0].1));
    let (idx, iv) = (&inputs[1], &call.inputs[1].1);
    let ov = &call.out;
    assert!(
        sv.ndim() == ov.ndim() && iv.ndim() == 1,
        "invariant: index_select views agree"
    );
    if sv.ndim() == 0 {
        if checked_index(idx.get(iv.offset).as_i64(), 1, false).is_some() {
            out.set_as(call.dtype, ov.offset, src.get_as(sd, sv.offset));
        }
        return;
    }
    let mut sp = vec![0usize; sv.ndim()];
    for_each_index(&ov.shape, |p| {
        let Some(i) = checked_index(
            idx.get(iv.address(&[p[dim]]) as usize).as_i64(),
            sv.shape[dim],
            false,
        ) else {
            return;
        };
        sp.copy_from_slice(p);
        sp[dim] = i;
        out.set_as(
            call.dtype,
            ov.address(p) as usize,
            src.get_as(sd, sv.address(&sp) as usize),
        );
    });
}

/// `out[p] = flat(self)[index[p]]`, negative indices counting from the end.
pub fn take(call: &LibraryCall, inputs: &[Arc<HostBuffer>], out: &mut HostBuffer) {
    let (src, (sd, sv)) = (&inputs[0], (call.inputs[0].0, &call.inputs[0].1));
    let (idx, iv) = (&inputs[1], &call.inputs[1].1);
    let ov = &call.out;
    let numel = sv.numel();
    let mut sp = vec![0usize; sv.ndim()];
    for_each_index(&ov.shape, |p| {
        let Some(mut flat) = checked_index(idx.get(iv.address(p) as usize).as_i64(), numel, true)
        else {
            return;
        };
        for d in (0..sv.ndim()).rev() {
            sp[d] = flat % sv.shape[d];
            flat /= sv.shape[d];
        }
        out.set_as(
            call.dtype,
            ov.address(p) as usize,
            src.get_as(sd, sv.address(&sp) as usize),
        );
    });
}
