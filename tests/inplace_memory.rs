//! In-place writes through a view of a large tensor update its storage in place when the old
//! version is dead: no whole-storage copy per step, memory bounded over a loop.

use smelt::prelude::*;
use smelt_runtime::stats::bytes_allocated;

const ROWS: i64 = 512;
const COLS: i64 = 1024;
const STORAGE_BYTES: u64 = (ROWS * COLS * 4) as u64;

#[test]
fn slice_update_in_a_loop_copies_no_whole_storage() {
    let x = Tensor::zeros(&[ROWS, COLS], None);
    x.realize();
    let before = bytes_allocated();
    for step in 0..100 {
        x.select(0, step % ROWS).add_(1.0);
        x.realize();
    }
    let spent = bytes_allocated() - before;
    // Each step allocates the row it computes (4 KiB) and nothing of the 2 MiB storage.
    assert!(
        spent < STORAGE_BYTES,
        "100 row updates allocated {spent} bytes; one storage is {STORAGE_BYTES}"
    );
    assert_eq!(x.select(0, 0).to_vec::<f32>()[0], 1.0);
    assert_eq!(x.select(0, 99).to_vec::<f32>()[COLS as usize - 1], 1.0);
    assert_eq!(x.select(0, 100).to_vec::<f32>()[0], 0.0);
}

#[test]
fn lazy_updates_without_realizing_stay_bounded() {
    let x = Tensor::zeros(&[ROWS, COLS], None);
    x.realize();
    let before = bytes_allocated();
    for step in 0..100 {
        x.select(0, 0).add_(step as f64);
    }
    x.realize();
    let spent = bytes_allocated() - before;
    // One realisation of 100 chained updates: the storage moves through them in place.
    assert!(spent < STORAGE_BYTES, "allocated {spent} bytes");
    assert_eq!(
        x.select(0, 0).to_vec::<f32>()[3],
        (0..100).sum::<i32>() as f32
    );
}

#[test]
fn an_old_version_still_observed_is_copied_not_clobbered() {
    let x = Tensor::ones(&[4], None);
    x.realize();
    let y = x.detach();
    let before_write = &x * 1.0;
    x.select(0, 0).add_(1.0);
    assert_eq!(x.to_vec::<f32>(), vec![2.0, 1.0, 1.0, 1.0]);
    assert_eq!(y.to_vec::<f32>(), vec![2.0, 1.0, 1.0, 1.0]);
    assert_eq!(before_write.to_vec::<f32>(), vec![1.0; 4]);
}
