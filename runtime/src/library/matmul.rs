//! Reference batched matmul: `out[b, m, n] = Σ_k a[b, m, k]·b[b, k, n]`, accumulated in f64
//! (floats) or wrapping i64 (ints) and rounded once to the output dtype.

use crate::buffer::Buffer;
use smelt_ir::{LibraryCall, Scalar};
use std::sync::Arc;

pub fn matmul(call: &LibraryCall, inputs: &[Arc<Buffer>], out: &mut Buffer) {
    let (a, av) = (&inputs[0], &call.inputs[0].1);
    let (b, bv) = (&inputs[1], &call.inputs[1].1);
    let ov = &call.out;
    assert!(
        av.ndim() == 3 && bv.ndim() == 3 && ov.ndim() == 3,
        "invariant: matmul views are [B, M, K], [B, K, N], [B, M, N]"
    );
    let (batch, m, k) = (av.shape[0], av.shape[1], av.shape[2]);
    let n = bv.shape[2];
    let float = call.dtype.is_float();
    for bi in 0..batch {
        for i in 0..m {
            for j in 0..n {
                let (mut facc, mut iacc) = (0.0f64, 0i64);
                for kk in 0..k {
                    let x = a.get(av.address(&[bi, i, kk]) as usize);
                    let y = b.get(bv.address(&[bi, kk, j]) as usize);
                    if float {
                        facc += x.as_f64() * y.as_f64();
                    } else {
                        iacc = iacc.wrapping_add(x.as_i64().wrapping_mul(y.as_i64()));
                    }
                }
                let v = if float {
                    Scalar::Float(facc)
                } else {
                    Scalar::Int(iacc)
                };
                out.set(ov.address(&[bi, i, j]) as usize, v);
            }
        }
    }
}
