//! End-to-end tests of the indexing ops: gather, index_select, take, masked ops, nonzero,
//! one-argument where and advanced getitem/setitem, against hand-computed values.

use smelt::prelude::*;

fn t(data: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_vec(data.to_vec(), shape)
}

fn idx(data: &[i64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(data.to_vec(), shape)
}

fn kind<T: std::fmt::Debug>(r: Result<T>) -> ErrorKind {
    r.expect_err("expected an error").kind
}

#[test]
fn gather_along_each_dim() {
    let x = t(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
    let g = x.gather(1, &idx(&[2, 0, 1, 1], &[2, 2]));
    assert_eq!(g.shape(), &[2, 2]);
    assert_eq!(g.to_vec::<f32>(), vec![3., 1., 5., 5.]);
    let g0 = x.gather(0, &idx(&[1, 0, 1], &[1, 3]));
    assert_eq!(g0.to_vec::<f32>(), vec![4., 2., 6.]);
    // A transposed self is read through its view.
    let gt = x.t().gather(0, &idx(&[2, 0], &[1, 2]));
    assert_eq!(gt.to_vec::<f32>(), vec![3., 4.]);
}

#[test]
fn gather_errors() {
    let x = t(&[1., 2., 3., 4.], &[2, 2]);
    assert_eq!(
        kind(x.try_gather(1, &idx(&[2, 0], &[2, 1]))),
        ErrorKind::Index
    );
    assert_eq!(
        kind(x.try_gather(1, &idx(&[-1, 0], &[2, 1]))),
        ErrorKind::Index
    );
    assert_eq!(kind(x.try_gather(2, &idx(&[0], &[1, 1]))), ErrorKind::Index);
    assert_eq!(
        kind(x.try_gather(0, &Tensor::from_vec(vec![0i32], &[1, 1]))),
        ErrorKind::DType
    );
    assert_eq!(
        kind(x.try_gather(0, &idx(&[0, 0, 0], &[1, 3]))),
        ErrorKind::Shape
    );
}

#[test]
fn index_select_and_take() {
    let x = t(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
    let s = x.index_select(1, &Tensor::from_vec(vec![2i32, 0, 2], &[3]));
    assert_eq!(s.shape(), &[2, 3]);
    assert_eq!(s.to_vec::<f32>(), vec![3., 1., 3., 6., 4., 6.]);
    assert_eq!(x.index_select(0, &idx(&[1], &[])).shape(), &[1, 3]);
    assert_eq!(
        kind(x.try_index_select(0, &idx(&[2], &[1]))),
        ErrorKind::Index
    );
    assert_eq!(
        kind(x.try_index_select(0, &idx(&[0, 1], &[1, 2]))),
        ErrorKind::Index
    );
    let tk = x.t().take(&idx(&[0, 1, -1, 5], &[2, 2]));
    // x.t() flattened row-major: 1 4 2 5 3 6.
    assert_eq!(tk.to_vec::<f32>(), vec![1., 4., 6., 6.]);
    assert_eq!(kind(x.try_take(&idx(&[6], &[1]))), ErrorKind::Index);
    assert_eq!(kind(x.try_take(&idx(&[-7], &[1]))), ErrorKind::Index);
}

#[test]
fn masked_fill_select_and_nonzero() {
    let x = t(&[1., -2., 3., -4.], &[2, 2]);
    let mask = x.lt(0.0);
    let f = x.masked_fill(&mask, 9.0);
    assert_eq!(f.to_vec::<f32>(), vec![1., 9., 3., 9.]);
    assert!(f.is_contiguous());
    // A row mask broadcasts over self.
    let row = Tensor::from_vec(vec![true, false], &[2]);
    assert_eq!(
        x.masked_fill(&row, Tensor::scalar(0.5, DType::F32))
            .to_vec::<f32>(),
        vec![0.5, -2., 0.5, -4.]
    );
    assert_eq!(kind(x.try_masked_fill(&x, 1.0)), ErrorKind::DType);
    assert_eq!(
        kind(x.try_masked_fill(&mask, t(&[1., 2.], &[2]))),
        ErrorKind::Shape
    );

    let y = x.deep_clone();
    y.masked_fill_(&mask, 0.0);
    assert_eq!(y.to_vec::<f32>(), vec![1., 0., 3., 0.]);
    assert_eq!(
        kind(t(&[1.], &[1]).try_masked_fill_(&mask, 0.0)),
        ErrorKind::Shape
    );

    let sel = x.masked_select(&mask);
    assert_eq!(sel.shape(), &[2]);
    assert_eq!(sel.to_vec::<f32>(), vec![-2., -4.]);

    let nz = x.lt(0.0).nonzero();
    assert_eq!(nz.shape(), &[2, 2]);
    assert_eq!(nz.stride(), vec![1, 2]);
    assert_eq!(nz.to_vec::<i64>(), vec![0, 1, 1, 1]);
    assert!(nz.graph().text().contains("graph break: nonzero"));
    let cols = Tensor::where_nonzero(&mask);
    assert_eq!(cols.len(), 2);
    assert_eq!(cols[0].to_vec::<i64>(), vec![0, 1]);
    assert_eq!(cols[1].to_vec::<i64>(), vec![1, 1]);
    assert_eq!(Tensor::scalar(3, DType::I64).nonzero().shape(), &[1, 0]);
}

#[test]
fn advanced_getitem() {
    let x = Tensor::arange(0, 24, 1, Some(DType::I64)).reshape(&[2, 3, 4]);
    // Adjacent advanced indices keep their place.
    let a = x.getitem(&[
        TensorIndex::Slice(None, None, None),
        TensorIndex::Tensor(idx(&[2, 0], &[2])),
        TensorIndex::Tensor(idx(&[1, -1], &[2])),
    ]);
    assert_eq!(a.shape(), &[2, 2]);
    assert_eq!(a.to_vec::<i64>(), vec![9, 3, 21, 15]);
    // Non-adjacent ones move the broadcast dims first.
    let b = x.getitem(&[
        TensorIndex::Tensor(idx(&[1, 0], &[2])),
        TensorIndex::Slice(None, None, None),
        TensorIndex::Tensor(idx(&[3], &[1])),
    ]);
    assert_eq!(b.shape(), &[2, 3]);
    assert_eq!(b.to_vec::<i64>(), vec![15, 19, 23, 3, 7, 11]);
    // A 2-D index in the middle.
    let c = x.getitem(&[
        TensorIndex::Int(1),
        TensorIndex::Tensor(idx(&[0, 2, 1, 1], &[2, 2])),
    ]);
    assert_eq!(c.shape(), &[2, 2, 4]);
    assert_eq!(c.to_vec::<i64>()[..4], [12, 13, 14, 15]);
    // A bool mask expands to its true positions.
    let m = x.getitem(&[TensorIndex::Tensor(x.gt(20i64))]);
    assert_eq!(m.to_vec::<i64>(), vec![21, 22, 23]);
    assert_eq!(
        kind(x.try_getitem(&[TensorIndex::Tensor(idx(&[2], &[1]))])),
        ErrorKind::Index
    );
    assert_eq!(
        kind(x.try_getitem(&[
            TensorIndex::Tensor(idx(&[0, 1], &[2])),
            TensorIndex::Tensor(idx(&[0, 1, 2], &[3]))
        ])),
        ErrorKind::Index
    );
    assert_eq!(
        kind(x.try_getitem(&[TensorIndex::Tensor(t(&[0.], &[1]))])),
        ErrorKind::Index
    );
}

#[test]
fn advanced_setitem() {
    let x = Tensor::zeros(&[3, 3], Some(DType::F32));
    let alias = x.getitem(&[TensorIndex::Int(1)]);
    x.setitem(
        &[
            TensorIndex::Tensor(idx(&[0, 1], &[2])),
            TensorIndex::Tensor(idx(&[2, 0], &[2])),
        ],
        5.0,
    );
    assert_eq!(x.to_vec::<f32>(), vec![0., 0., 5., 5., 0., 0., 0., 0., 0.]);
    // The write goes to the storage: views see it.
    assert_eq!(alias.to_vec::<f32>(), vec![5., 0., 0.]);
    x.setitem(
        &[TensorIndex::Tensor(idx(&[2], &[1]))],
        t(&[1., 2., 3.], &[3]),
    );
    assert_eq!(x.to_vec::<f32>()[6..], [1., 2., 3.]);
    assert_eq!(
        kind(x.try_setitem(&[TensorIndex::Tensor(idx(&[3], &[1]))], 1.0)),
        ErrorKind::Index
    );
    assert_eq!(
        kind(x.try_setitem(&[TensorIndex::Tensor(idx(&[0], &[1]))], t(&[1., 2.], &[2]))),
        ErrorKind::Shape
    );
    let e = t(&[1.], &[1]).expand(&[3]);
    assert_eq!(
        kind(e.try_setitem(&[TensorIndex::Tensor(idx(&[0], &[1]))], 1.0)),
        ErrorKind::Overlap
    );
}
