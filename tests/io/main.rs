//! Data in and out (`cargo test --test io`; `--features ndarray` adds the `ndarray` tests):
//! files numpy and PyTorch wrote (`tests/fixtures/io/`, made once by `make_fixtures.py`) read
//! back exactly; npy, npz and safetensors round trips are exact for every dtype and layout;
//! `from_vec` adopts its vector and safetensors files are mapped, read when used and never
//! written; malformed files are errors that name the file and the rule.
//!
//! One file per concern: `round_trips.rs` (round trips and what is not copied), `malformed.rs`,
//! `ndarray_conversion.rs`; the helpers they share and the fixture tests are here.

use half::{bf16, f16};
use smelt::prelude::*;
use smelt_runtime::stats::bytes_allocated;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod malformed;
#[cfg(feature = "ndarray")]
mod ndarray_conversion;
mod round_trips;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/io")
        .join(name)
}

/// A fresh path for a file a test writes.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("io");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Every element's bits in logical order: two tensors are equal exactly when these are (a NaN
/// equals a NaN of the same bits, -0.0 differs from 0.0).
fn bits(t: &Tensor) -> Vec<u64> {
    match t.dtype() {
        DType::Bool => t.to_vec::<bool>().into_iter().map(u64::from).collect(),
        DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => {
            t.to_vec::<i64>().into_iter().map(|v| v as u64).collect()
        }
        DType::F16 => t
            .to_vec::<f16>()
            .iter()
            .map(|v| v.to_bits().into())
            .collect(),
        DType::BF16 => t
            .to_vec::<bf16>()
            .iter()
            .map(|v| v.to_bits().into())
            .collect(),
        DType::F32 => t
            .to_vec::<f32>()
            .iter()
            .map(|v| v.to_bits().into())
            .collect(),
        DType::F64 => t.to_vec::<f64>().iter().map(|v| v.to_bits()).collect(),
    }
}

#[track_caller]
fn assert_same(got: &Tensor, want: &Tensor, what: &str) {
    assert_eq!(
        (got.dtype(), got.shape()),
        (want.dtype(), want.shape()),
        "{what}"
    );
    assert_eq!(bits(got), bits(want), "{what}");
}

/// The arrays `make_fixtures.py` writes for each dtype (`FLOATS`, `INTS`, `BOOLS`, `BF16`).
fn expected_by_dtype() -> Vec<(&'static str, Tensor)> {
    let inf = f64::INFINITY;
    vec![
        (
            "float16",
            Tensor::from_vec(
                [
                    0.0,
                    -0.0,
                    1.5,
                    -2.25,
                    65504.0,
                    2f64.powi(-24),
                    inf,
                    -inf,
                    f64::NAN,
                ]
                .map(f16::from_f64)
                .to_vec(),
                &[3, 3],
            ),
        ),
        (
            "float32",
            Tensor::from_vec(
                vec![
                    0.0,
                    -0.0,
                    1.5,
                    -2.25,
                    f32::MAX,
                    f32::from_bits(1),
                    f32::INFINITY,
                ]
                .into_iter()
                .chain([f32::NEG_INFINITY, f32::NAN])
                .collect(),
                &[3, 3],
            ),
        ),
        (
            "float64",
            Tensor::from_vec(
                vec![
                    0.0,
                    -0.0,
                    0.1,
                    -2.5,
                    f64::MAX,
                    f64::from_bits(1),
                    inf,
                    -inf,
                    f64::NAN,
                ],
                &[3, 3],
            ),
        ),
        ("uint8", Tensor::from_vec(vec![0u8, 1, 127, 128, 255], &[5])),
        ("int8", Tensor::from_vec(vec![-128i8, -1, 0, 1, 127], &[5])),
        (
            "int16",
            Tensor::from_vec(vec![i16::MIN, -1, 0, 1, i16::MAX], &[5]),
        ),
        (
            "int32",
            Tensor::from_vec(vec![i32::MIN, -1, 0, 1, i32::MAX], &[5]),
        ),
        (
            "int64",
            Tensor::from_vec(vec![i64::MIN, -1, 0, 1, i64::MAX], &[5]),
        ),
        (
            "bool",
            Tensor::from_vec(vec![true, false, false, true], &[2, 2]),
        ),
    ]
}

fn expected_bf16() -> Tensor {
    let inf = f64::INFINITY;
    let values = [
        0.0,
        -0.0,
        1.5,
        -2.25,
        3.3895313892515355e38,
        2f64.powi(-133),
        inf,
        -inf,
    ];
    let mut v: Vec<bf16> = values.iter().map(|&x| bf16::from_f64(x)).collect();
    v.push(bf16::NAN);
    assert_eq!(
        (v[4], v[5].to_bits()),
        (bf16::MAX, 1),
        "the values bf16 holds exactly"
    );
    Tensor::from_vec(v, &[9])
}

fn arange(n: i64, dtype: DType) -> Tensor {
    Tensor::arange(0, n, 1, Some(dtype))
}

#[track_caller]
fn assert_error(e: Error, kind: ErrorKind, parts: &[&str]) {
    assert_eq!(e.kind, kind, "{e}");
    for p in parts {
        assert!(e.message.contains(p), "{p:?} not in: {e}");
    }
}

// ---- files numpy and PyTorch wrote --------------------------------------------------------

#[test]
fn numpy_files_of_every_dtype_read_back_exactly() {
    for (name, want) in expected_by_dtype() {
        let path = fixture(&format!("{name}.npy"));
        let got = Tensor::load_npy(&path);
        assert_same(&got, &want, name);
        assert!(got.is_contiguous(), "{name}");
        // What smelt writes is byte for byte what numpy wrote.
        assert_eq!(got.to_npy_bytes(), std::fs::read(&path).unwrap(), "{name}");
    }
}

#[test]
fn fortran_order_arrays_are_transposed_views() {
    let path = fixture("fortran_f32.npy");
    let a = Tensor::load_npy(&path);
    assert_eq!(
        (a.shape(), a.stride(), a.storage_len()),
        (&[2, 3][..], vec![1, 2], 6)
    );
    assert!(!a.is_contiguous() && a.t().is_contiguous());
    assert_same(&a, &arange(6, DType::F32).view(&[2, 3]), "fortran_f32");
    assert_eq!(
        a.to_npy_bytes(),
        std::fs::read(&path).unwrap(),
        "written back in Fortran order"
    );
    let b = Tensor::load_npy(fixture("fortran_i16.npy"));
    assert_eq!((b.shape(), b.stride()), (&[2, 3, 4][..], vec![1, 2, 6]));
    assert_same(&b, &arange(24, DType::I16).view(&[2, 3, 4]), "fortran_i16");
    assert_eq!(
        b.to_npy_bytes(),
        std::fs::read(fixture("fortran_i16.npy")).unwrap()
    );
}

#[test]
fn big_endian_arrays_are_byte_swapped() {
    let i = Tensor::load_npy(fixture("big_i4.npy"));
    assert_same(
        &i,
        &Tensor::from_vec(vec![-2i32, -1, 0, 1, 2], &[5]),
        "big_i4",
    );
    let f = Tensor::load_npy(fixture("big_f8.npy"));
    assert_same(
        &f,
        &Tensor::from_vec(vec![1.5f64, -0.25, 1e300], &[3]),
        "big_f8",
    );
    let h = Tensor::load_npy(fixture("big_f2.npy"));
    let want = [1.5, -0.25, 65504.0, 2f64.powi(-24)]
        .map(f16::from_f64)
        .to_vec();
    assert_same(&h, &Tensor::from_vec(want, &[2, 2]), "big_f2");
}

#[test]
fn scalars_empty_arrays_and_format_versions_2_and_3_read_back() {
    let s = Tensor::load_npy(fixture("scalar_f64.npy"));
    assert_eq!(
        (s.shape(), s.dtype(), s.item()),
        (&[][..], DType::F64, Scalar::Float(3.5))
    );
    let e = Tensor::load_npy(fixture("empty_f32.npy"));
    assert_eq!(
        (e.shape(), e.dtype(), e.numel()),
        (&[0, 3][..], DType::F32, 0)
    );
    assert_eq!(
        e.to_npy_bytes(),
        std::fs::read(fixture("empty_f32.npy")).unwrap()
    );
    let v2 = Tensor::load_npy(fixture("v2_i8.npy"));
    assert_same(&v2, &arange(4, DType::I64), "version 2.0");
    let v3 = Tensor::load_npy(fixture("v3_f4.npy"));
    assert_same(
        &v3,
        &Tensor::from_vec(vec![1.0f32, 2.0], &[2]),
        "version 3.0",
    );
}

#[test]
fn numpy_archives_stored_and_deflated_read_back() {
    for name in ["stored.npz", "compressed.npz"] {
        let m = Tensor::load_npz(fixture(name));
        assert_eq!(
            m.keys().collect::<Vec<_>>(),
            ["a", "b", "f", "flags"],
            "{name}"
        );
        assert_same(&m["a"], &arange(6, DType::F32).view(&[2, 3]), name);
        assert_same(&m["b"], &Tensor::from_vec(vec![-1i64, 0, 1], &[3]), name);
        assert_same(
            &m["flags"],
            &Tensor::from_vec(vec![true, false, true], &[3]),
            name,
        );
        assert_same(&m["f"], &arange(6, DType::F64).view(&[2, 3]), name);
        assert_eq!(
            m["f"].stride(),
            vec![1, 2],
            "{name}: a Fortran-order member"
        );
    }
}

#[test]
fn pytorch_safetensors_of_every_dtype_read_back() {
    let m = Tensor::load_safetensors(fixture("torch.safetensors"));
    assert_eq!(m.len(), 13);
    for (name, want) in expected_by_dtype() {
        assert_same(&m[name], &want, name);
    }
    assert_same(&m["bfloat16"], &expected_bf16(), "bfloat16");
    assert_eq!(
        (m["scalar"].shape(), m["scalar"].item()),
        (&[][..], Scalar::Float(7.25))
    );
    assert_eq!(
        (m["empty"].shape(), m["empty"].dtype()),
        (&[0, 4][..], DType::I32)
    );
    assert_same(
        &m["weight"],
        &arange(12, DType::F32).view(&[3, 4]),
        "weight",
    );
}
