//! Reference argmax/argmin: for every kept index (the input view's leading dims), the
//! row-major position of the extreme element over the trailing `axes` dims. One pass in
//! row-major order, a candidate replaces the best only when strictly more extreme, so ties
//! keep the first occurrence; NaN is more extreme than any number and the first NaN wins.

use crate::buffer::HostBuffer;
use smelt_ir::{LibraryCall, Scalar};
use std::cmp::Ordering;
use std::sync::Arc;

/// Advances a row-major multi-index over `shape`; false when it wraps around.
pub(crate) fn next_index(point: &mut [usize], shape: &[usize]) -> bool {
    for d in (0..shape.len()).rev() {
        point[d] += 1;
        if point[d] < shape[d] {
            return true;
        }
        point[d] = 0;
    }
    false
}

/// Total order used by max-like ops: NaN above everything, otherwise numeric.
pub(crate) fn compare_nan_largest(a: Scalar, b: Scalar) -> Ordering {
    match (a, b) {
        (Scalar::Float(x), Scalar::Float(y)) => match (x.is_nan(), y.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
        },
        (Scalar::Bool(x), Scalar::Bool(y)) => x.cmp(&y),
        (Scalar::Int(x), Scalar::Int(y)) => x.cmp(&y),
        (x, y) => x
            .as_f64()
            .partial_cmp(&y.as_f64())
            .unwrap_or(Ordering::Equal),
    }
}

/// Is `x` strictly more extreme than `best` (larger for max, smaller for min, NaN always)?
fn beats(x: Scalar, best: Scalar, max: bool) -> bool {
    let x_nan = matches!(x, Scalar::Float(v) if v.is_nan());
    let best_nan = matches!(best, Scalar::Float(v) if v.is_nan());
    if best_nan {
        return false;
    }
    if x_nan {
        return true;
    }
    let ord = compare_nan_largest(x, best);
    if max {
        ord == Ordering::Greater
    } else {
        ord == Ordering::Less
    }
}

pub fn argreduce(
    call: &LibraryCall,
    axes: usize,
    max: bool,
    inputs: &[Arc<HostBuffer>],
    out: &mut HostBuffer,
) {
    let (x, xv) = (&inputs[0], &call.inputs[0].1);
    let ov = &call.out;
    let kept = xv.ndim() - axes;
    assert!(
        ov.shape == xv.shape[..kept],
        "invariant: argreduce output has the input's kept shape"
    );
    let inner_shape = &xv.shape[kept..];
    assert!(
        !inner_shape.contains(&0),
        "invariant: argreduce over an empty dim is rejected by the frontend"
    );
    if xv.shape[..kept].contains(&0) {
        return;
    }
    let mut outer = vec![0usize; kept];
    let mut point = vec![0usize; xv.ndim()];
    loop {
        point[..kept].copy_from_slice(&outer);
        let mut inner = vec![0usize; axes];
        let mut best: Option<Scalar> = None;
        let (mut best_at, mut at) = (0i64, 0i64);
        loop {
            point[kept..].copy_from_slice(&inner);
            let v = x.get(xv.address(&point) as usize);
            if best.is_none_or(|b| beats(v, b, max)) {
                best = Some(v);
                best_at = at;
            }
            at += 1;
            if !next_index(&mut inner, inner_shape) {
                break;
            }
        }
        out.set(ov.address(&outer) as usize, Scalar::Int(best_at));
        if !next_index(&mut outer, &xv.shape[..kept]) {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smelt_ir::{DType, LibraryOp, View};

    fn run(values: &[f64], shape: &[usize], axes: usize, max: bool) -> Vec<i64> {
        let x = HostBuffer::from_scalars(
            DType::F32,
            &values.iter().map(|&v| Scalar::Float(v)).collect::<Vec<_>>(),
        );
        let kept = &shape[..shape.len() - axes];
        let op = if max {
            LibraryOp::ArgMax { axes }
        } else {
            LibraryOp::ArgMin { axes }
        };
        let n: usize = kept.iter().product();
        let call = LibraryCall {
            op,
            inputs: vec![(DType::F32, View::contiguous(shape))],
            dtype: DType::I64,
            len: n,
            out: View::contiguous(kept),
        };
        let mut out = HostBuffer::zeros(DType::I64, n);
        argreduce(&call, axes, max, &[Arc::new(x)], &mut out);
        (0..n).map(|i| out.get(i).as_i64()).collect()
    }

    #[test]
    fn first_occurrence_wins_ties() {
        assert_eq!(
            run(&[1.0, 3.0, 3.0, 0.0, 0.0, 2.0], &[2, 3], 1, true),
            vec![1, 2]
        );
        assert_eq!(
            run(&[1.0, 3.0, 3.0, 0.0, 0.0, 2.0], &[2, 3], 1, false),
            vec![0, 0]
        );
        assert_eq!(
            run(&[1.0, 3.0, 3.0, 0.0, 0.0, 2.0], &[2, 3], 2, false),
            vec![3]
        );
    }

    #[test]
    fn nan_is_the_extreme_for_both_directions() {
        let v = [1.0, f64::NAN, 5.0, f64::NAN];
        assert_eq!(run(&v, &[4], 1, true), vec![1]);
        assert_eq!(run(&v, &[4], 1, false), vec![1]);
    }
}
