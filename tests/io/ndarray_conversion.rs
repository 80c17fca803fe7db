//! Conversion between tensors and `ndarray` arrays (`--features ndarray`): without a copy where
//! the layout allows, a copy where not.

use super::*;
use ndarray::{Array, ShapeBuilder, s};

#[test]
fn owned_arrays_become_tensors_without_a_copy() {
    let a = Array::from_shape_vec((3, 4), (0..12).map(|i| i as f32).collect()).unwrap();
    let at = a.as_ptr() as usize;
    let before = bytes_allocated();
    let t = Tensor::from_ndarray(a.clone());
    assert_eq!(bytes_allocated(), before);
    assert_eq!((t.shape(), t.stride()), (&[3, 4][..], vec![4, 1]));
    assert_ne!(t.data_ptr(), at, "the clone's vector, not the original's");
    let sliced = a.slice_move(s![.., 1..;2]);
    let first = sliced.as_ptr() as usize;
    let t = Tensor::from_ndarray(sliced);
    assert_eq!(
        (t.shape(), t.stride(), t.storage_offset()),
        (&[3, 2][..], vec![4, 2], 1)
    );
    assert_eq!((t.data_ptr(), t.storage_len()), (first, 12));
    assert_eq!(t.to_vec::<f32>(), [1.0, 3.0, 5.0, 7.0, 9.0, 11.0]);
    let f = Array::from_shape_vec((2, 3).f(), vec![1i64, 2, 3, 4, 5, 6]).unwrap();
    let t = Tensor::from_ndarray(f);
    assert_eq!(
        (t.stride(), t.to_vec::<i64>()),
        (vec![1, 2], vec![1, 3, 5, 2, 4, 6])
    );
    let flipped = Array::from_shape_vec(3, vec![1u8, 2, 3])
        .unwrap()
        .slice_move(s![..;-1]);
    let t = Tensor::from_ndarray(flipped);
    assert_eq!(
        (t.stride(), t.to_vec::<u8>()),
        (vec![1], vec![3, 2, 1]),
        "copied"
    );
    let view = Tensor::from_ndarray_view(ndarray::arr2(&[[true, false]]).view());
    assert_eq!(view.to_vec::<bool>(), [true, false]);
}

#[test]
fn tensors_become_arrays_without_a_copy_where_the_layout_allows() {
    let v: Vec<f32> = (0..12).map(|i| i as f32).collect();
    let at = v.as_ptr() as usize;
    let t = Tensor::from_vec(v, &[3, 4]);
    let tt = t.t();
    let guard = tt.as_ndarray::<f32>();
    let view = guard.view();
    assert_eq!((view.shape(), view.strides()), (&[4, 3][..], &[1, 4][..]));
    assert_eq!(view.as_ptr() as usize, at);
    assert_eq!(view[[1, 2]], 9.0);
    assert_eq!(
        tt.to_ndarray::<f32>().as_slice().unwrap()[..4],
        [0.0, 4.0, 8.0, 1.0]
    );
    drop((guard, tt));
    // The only handle on an adopted vector gives the vector itself back.
    let back = t.into_ndarray::<f32>();
    assert_eq!((back.as_ptr() as usize, back.shape()), (at, &[3, 4][..]));
    // A shared storage, a computed one or an expanded view: a copy.
    let t = Tensor::from_vec(vec![1i32, 2, 3], &[3]);
    let keep = t.clone();
    let copied = t.into_ndarray::<i32>();
    assert_ne!(copied.as_ptr() as usize, keep.data_ptr());
    assert_eq!(copied.as_slice().unwrap(), [1, 2, 3]);
    let computed = (&keep * 2).into_ndarray::<i32>();
    assert_eq!(computed.as_slice().unwrap(), [2, 4, 6]);
    let only_expanded = Tensor::from_vec(vec![1i32, 2, 3], &[3])
        .unsqueeze(0)
        .expand(&[2, 3]);
    let expanded = only_expanded.into_ndarray::<i32>();
    assert_eq!(expanded, ndarray::arr2(&[[1, 2, 3], [1, 2, 3]]).into_dyn());
    let e = keep.try_as_ndarray::<f32>().unwrap_err();
    assert_error(
        e,
        ErrorKind::DType,
        &["as_ndarray: the tensor is int32, not float32"],
    );
}
