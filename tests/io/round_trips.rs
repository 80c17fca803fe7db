//! Round trips through npy, npz and safetensors, exact for every dtype and layout; what is
//! not copied: adopted vectors, shared elements, mapped safetensors files.

use super::*;

// ---- round trips ---------------------------------------------------------------------------

/// Tensors of `dtype` in the layouts a writer must handle, by name: contiguous, transposed, a
/// strided view at an offset, an expanded one (stride 0), a 0-dim one and an empty one.
fn layouts(dtype: DType) -> Vec<(String, Tensor)> {
    let special = [
        0.0,
        -0.0,
        1.5,
        -2.25,
        100.0,
        -7.0,
        f64::INFINITY,
        f64::NAN,
        3.0,
        0.5,
        -1.0,
        2.0,
    ];
    let base = Tensor::from_vec(special.to_vec(), &[3, 4]).to_dtype(dtype);
    let base = Tensor::from_scalars(&base.to_scalars(), &[3, 4], dtype);
    let views = [
        ("contiguous", base.clone()),
        ("transposed", base.t()),
        ("strided", base.slice(1, Some(1), None, 2)),
        ("expanded", base.select(0, 1).unsqueeze(0).expand(&[2, 4])),
        ("scalar", base.select(0, 2).select(0, 1)),
        ("empty", base.narrow(0, 1, 0)),
    ];
    views
        .into_iter()
        .map(|(layout, t)| (format!("{}_{layout}", dtype.name()), t))
        .collect()
}

fn all_layouts(with_bf16: bool) -> Vec<(String, Tensor)> {
    DType::ALL
        .into_iter()
        .filter(|&d| with_bf16 || d != DType::BF16)
        .flat_map(layouts)
        .collect()
}

#[test]
fn npy_round_trips_are_exact_for_every_dtype_and_layout() {
    for (name, t) in all_layouts(false) {
        let back = Tensor::from_npy_bytes(&t.to_npy_bytes());
        assert_same(&back, &t, &name);
        let path = scratch(&format!("{name}.npy"));
        t.save_npy(&path);
        let loaded = Tensor::load_npy(&path);
        assert_same(&loaded, &t, &name);
        // A transposed tensor is saved in Fortran order and comes back with its strides.
        if name.ends_with("transposed") {
            assert_eq!(loaded.stride(), t.stride(), "{name}");
        } else {
            assert!(loaded.is_contiguous(), "{name}");
        }
        // Writing what was read gives the same bytes.
        assert_eq!(
            loaded.to_npy_bytes(),
            std::fs::read(&path).unwrap(),
            "{name}"
        );
    }
}

#[test]
fn npz_round_trips_stored_and_compressed_are_exact() {
    let tensors: BTreeMap<String, Tensor> = all_layouts(false).into_iter().collect();
    let stored = scratch("round_trip.npz");
    let compressed = scratch("round_trip_compressed.npz");
    Tensor::save_npz(&stored, &tensors);
    Tensor::save_npz_compressed(&compressed, &tensors);
    for path in [&stored, &compressed] {
        let back = Tensor::load_npz(path);
        assert_eq!(back.len(), tensors.len());
        for (name, t) in &tensors {
            assert_same(&back[name], t, name);
        }
    }
    // Deflate pays on compressible data; pairs work as well as a map.
    let zeros = Tensor::zeros(&[64, 64], None);
    let (small, big) = (scratch("zeros_compressed.npz"), scratch("zeros.npz"));
    Tensor::save_npz_compressed(&small, [("z", &zeros)]);
    Tensor::save_npz(&big, [("z", &zeros)]);
    let size = |p: &Path| std::fs::metadata(p).unwrap().len();
    assert!(
        size(&big) > 16384 && size(&small) < 1024,
        "{} {}",
        size(&big),
        size(&small)
    );
    assert_same(&Tensor::load_npz(&small)["z"], &zeros, "zeros");
}

#[test]
fn safetensors_round_trips_every_dtype_including_bfloat16() {
    let tensors: BTreeMap<String, Tensor> = all_layouts(true).into_iter().collect();
    let path = scratch("round_trip.safetensors");
    Tensor::save_safetensors(&path, &tensors);
    let back = Tensor::load_safetensors(&path);
    assert_eq!(back.len(), tensors.len());
    for (name, t) in &tensors {
        assert_same(&back[name], t, name);
        assert!(back[name].is_contiguous(), "{name}");
    }
    // Saving what was loaded writes the same file.
    let again = scratch("round_trip_again.safetensors");
    Tensor::save_safetensors(&again, &back);
    assert_eq!(
        std::fs::read(&again).unwrap(),
        std::fs::read(&path).unwrap()
    );
}

#[test]
fn bfloat16_has_no_npy_dtype() {
    let t = Tensor::ones(&[2], Some(DType::BF16));
    let path = scratch("bf16.npy");
    let e = t.try_save_npy(&path).unwrap_err();
    assert_eq!(e.kind, ErrorKind::DType);
    assert!(e.message.contains("bfloat16 has no numpy dtype"), "{e}");
    assert!(e.message.contains("bf16.npy"), "{e}");
    let npz = scratch("bf16.npz");
    let e = Tensor::try_save_npz(&npz, [("w", &t)]).unwrap_err();
    assert!(
        e.message.contains("key 'w'") && e.message.contains("bfloat16"),
        "{e}"
    );
    assert!(!npz.exists(), "nothing is written when a tensor cannot be");
}

// ---- no copies -----------------------------------------------------------------------------

#[test]
fn from_vec_adopts_the_vector_without_a_copy() {
    let v: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    let at = v.as_ptr() as usize;
    let before = bytes_allocated();
    let t = Tensor::from_vec(v, &[10, 100]);
    assert_eq!(bytes_allocated(), before, "no buffer allocated");
    assert_eq!(t.data_ptr(), at);
    assert_eq!(
        t.narrow(1, 2, 3).data_ptr(),
        at + 2 * 4,
        "data_ptr follows the offset"
    );
    assert_eq!(t.select(0, 9).to_vec::<f32>()[99], 999.0);
    // The tensor owns the vector: an in-place op writes it in place.
    t.add_(1.0).realize();
    assert_eq!(t.data_ptr(), at);
    assert_eq!(t.to_vec::<f32>()[..3], [1.0, 2.0, 3.0]);
    for (dtype, ptr, t) in [
        {
            let v = vec![true, false];
            (DType::Bool, v.as_ptr() as usize, Tensor::from_vec(v, &[2]))
        },
        {
            let v = vec![f16::ONE; 3];
            (DType::F16, v.as_ptr() as usize, Tensor::from_vec(v, &[3]))
        },
        {
            let v = vec![-5i64; 4];
            (
                DType::I64,
                v.as_ptr() as usize,
                Tensor::from_vec(v, &[2, 2]),
            )
        },
    ] {
        assert_eq!((t.dtype(), t.data_ptr()), (dtype, ptr));
    }
    let e = Tensor::try_from_vec(vec![1u8, 2, 3], &[2, 2]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Shape);
}

#[test]
fn shared_elements_are_not_copied_until_written() {
    static WEIGHTS: [f32; 4] = [1.0, 2.0, 3.0, 4.0];
    let t = Tensor::from_static(&WEIGHTS, &[2, 2]);
    assert_eq!(t.data_ptr(), WEIGHTS.as_ptr() as usize);
    let doubled = &t * 2.0;
    assert_eq!(doubled.to_vec::<f32>(), [2.0, 4.0, 6.0, 8.0]);
    // Copy on write: the tensor changes, the static does not.
    t.select(0, 1).fill_(0.0);
    assert_eq!(t.to_vec::<f32>(), [1.0, 2.0, 0.0, 0.0]);
    assert_ne!(t.data_ptr(), WEIGHTS.as_ptr() as usize);
    assert_eq!(WEIGHTS, [1.0, 2.0, 3.0, 4.0]);

    let shared: Arc<[i32]> = Arc::from(vec![7, 8, 9]);
    let t = Tensor::from_arc(shared.clone(), &[3]);
    assert_eq!(t.data_ptr(), shared.as_ptr() as usize);
    assert_eq!(Arc::strong_count(&shared), 2);
    t.add_(1);
    assert_eq!(
        (t.to_vec::<i32>(), &*shared),
        (vec![8, 9, 10], &[7, 8, 9][..])
    );
    drop(t);
    assert_eq!(Arc::strong_count(&shared), 1);
    let e = Tensor::try_from_static(&WEIGHTS, &[3]).unwrap_err();
    assert!(
        e.message
            .contains("from_static: 4 elements cannot have shape [3]"),
        "{e}"
    );
}

/// Writes a safetensors file of a 1 MiB float32 tensor `a`, a small `b` and a bool `mask`.
fn three_tensor_file(name: &str) -> PathBuf {
    let path = scratch(name);
    let a = arange(1 << 18, DType::F32);
    let b = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3]);
    let mask = Tensor::from_vec(vec![true, false, true, true], &[4]);
    Tensor::save_safetensors(&path, [("a", &a), ("b", &b), ("mask", &mask)]);
    path
}

#[test]
fn safetensors_values_are_read_when_used_not_at_load() {
    let path = three_tensor_file("lazy.safetensors");
    let before = bytes_allocated();
    let m = Tensor::load_safetensors(&path);
    assert_eq!(bytes_allocated(), before, "loading copies no tensor");
    // The tensors view the mapped file: a change to the file made after loading (which a
    // program must not do, and this test does only to show it) is what `b` reads.
    let file = std::fs::read(&path).unwrap();
    let header = String::from_utf8_lossy(&file[8..]).into_owned();
    let b_info = &header[header.find("\"b\"").unwrap()..];
    let offsets = &b_info[b_info.find("data_offsets\":[").unwrap() + 15..];
    let b_start: u64 = offsets[..offsets.find(',').unwrap()].parse().unwrap();
    let header_len = u64::from_le_bytes(file[..8].try_into().unwrap());
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.seek(SeekFrom::Start(8 + header_len + b_start)).unwrap();
        f.write_all(&42.0f64.to_le_bytes()).unwrap();
    }
    assert_eq!(m["b"].to_vec::<f64>(), [42.0, 2.0, 3.0]);
    // Reading `a`, here through a kernel, copies none of it: the kernel's output is all.
    let before = bytes_allocated();
    let doubled = &m["a"].narrow(0, 1000, 4) * 2.0;
    assert_eq!(doubled.to_vec::<f32>(), [2000.0, 2002.0, 2004.0, 2006.0]);
    assert_eq!(bytes_allocated() - before, 16);
    // Bools are copied when first read (a byte of a file need not be 0 or 1), not at load.
    let mask = &m["mask"];
    let before = bytes_allocated();
    assert_eq!(mask.to_vec::<bool>(), [true, false, true, true]);
    assert_eq!(bytes_allocated() - before, 4);
}

#[test]
fn writes_to_mapped_tensors_copy_and_never_touch_the_file() {
    let path = three_tensor_file("written.safetensors");
    let on_disk = std::fs::read(&path).unwrap();
    let m = Tensor::load_safetensors(&path);
    let (a, b, mask) = (&m["a"], &m["b"], &m["mask"]);
    let alias = a.clone();
    a.narrow(0, 0, 2).add_(1.0);
    b.copy_(&Tensor::from_vec(vec![-1.0f64, -2.0, -3.0], &[3]));
    mask.setitem(&[TensorIndex::Int(0)], false);
    assert_eq!(a.narrow(0, 0, 3).to_vec::<f32>(), [1.0, 2.0, 2.0]);
    assert_eq!(
        alias.narrow(0, 0, 3).to_vec::<f32>(),
        [1.0, 2.0, 2.0],
        "one storage"
    );
    assert_eq!(b.to_vec::<f64>(), [-1.0, -2.0, -3.0]);
    assert_eq!(mask.to_vec::<bool>(), [false, false, true, true]);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        on_disk,
        "the file is unchanged"
    );
    let again = Tensor::load_safetensors(&path);
    assert_eq!(again["b"].to_vec::<f64>(), [1.0, 2.0, 3.0]);
    assert_eq!(again["a"].narrow(0, 0, 3).to_vec::<f32>(), [0.0, 1.0, 2.0]);
}
