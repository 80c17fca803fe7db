//! Malformed npy, npz and safetensors files: errors of the right kind naming the file (and
//! member or key) and the broken rule, never a panic.

use super::*;

// ---- malformed files ----------------------------------------------------------------------

/// An npy file: preamble, `dict` padded as numpy pads it, then `data`.
fn npy(version: u8, dict: &str, data: &[u8]) -> Vec<u8> {
    let preamble = if version == 1 { 10 } else { 12 };
    let total = (preamble + dict.len() + 1).next_multiple_of(64);
    let mut out = b"\x93NUMPY".to_vec();
    out.extend([version, 0]);
    let len = total - preamble;
    if version == 1 {
        out.extend((len as u16).to_le_bytes());
    } else {
        out.extend((len as u32).to_le_bytes());
    }
    out.extend(dict.as_bytes());
    out.resize(total - 1, b' ');
    out.push(b'\n');
    out.extend(data);
    out
}

#[test]
fn malformed_npy_files_are_errors_naming_the_rule() {
    let f4 =
        |shape: &str| format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
    let good = npy(1, &f4("(3,)"), &[0; 12]);
    assert_eq!(Tensor::from_npy_bytes(&good).shape(), [3]);
    let mut wrong_magic = good.clone();
    wrong_magic[5] = b'Z';
    let mut wrong_version = good.clone();
    wrong_version[6] = 9;
    let mut long_header = good.clone();
    long_header[8] = 0xff;
    let cases: Vec<(&str, Vec<u8>, ErrorKind, Vec<&str>)> = vec![
        (
            "empty",
            vec![],
            ErrorKind::Io,
            vec!["truncated", "preamble"],
        ),
        (
            "short preamble",
            good[..9].to_vec(),
            ErrorKind::Io,
            vec!["truncated", "preamble"],
        ),
        (
            "magic",
            wrong_magic,
            ErrorKind::Io,
            vec!["not an npy file", "NUMPZ"],
        ),
        ("version", wrong_version, ErrorKind::Io, vec!["version 9.0"]),
        (
            "header length",
            long_header,
            ErrorKind::Io,
            vec!["truncated", "header"],
        ),
        (
            "cut header",
            good[..40].to_vec(),
            ErrorKind::Io,
            vec!["truncated", "header"],
        ),
        (
            "not a dict",
            npy(1, "['descr', '<f4']", &[]),
            ErrorKind::Io,
            vec!["malformed header", "expected '{'"],
        ),
        (
            "missing key",
            npy(1, "{'descr': '<f4', 'shape': (3,)}", &[0; 12]),
            ErrorKind::Io,
            vec!["key 'fortran_order' is missing"],
        ),
        (
            "unsigned 32",
            npy(1, &f4("(3,)").replace("<f4", "<u4"), &[0; 12]),
            ErrorKind::DType,
            vec!["dtype '<u4'"],
        ),
        (
            "complex",
            npy(1, &f4("(3,)").replace("<f4", "<c8"), &[0; 24]),
            ErrorKind::DType,
            vec!["dtype '<c8'"],
        ),
        (
            "short data",
            npy(1, &f4("(3, 3)"), &[0; 32]),
            ErrorKind::Io,
            vec!["the data is 32 bytes, but shape (3, 3) of float32 needs 36"],
        ),
        (
            "long data",
            npy(1, &f4("(3,)"), &[0; 16]),
            ErrorKind::Io,
            vec!["the data is 16 bytes", "needs 12"],
        ),
        (
            "shape overflow",
            npy(2, &f4("(4611686018427387904, 8)"), &[0; 4]),
            ErrorKind::Io,
            vec!["overflows"],
        ),
        (
            "huge shape",
            npy(1, &f4("(1000000000000,)"), &[0; 4]),
            ErrorKind::Io,
            vec!["the data is 4 bytes", "needs 4000000000000"],
        ),
    ];
    for (what, bytes, kind, parts) in cases {
        let e = Tensor::try_from_npy_bytes(&bytes).unwrap_err();
        assert!(e.message.starts_with("from_npy_bytes: "), "{what}: {e}");
        assert_error(e, kind, &parts);
    }
    // A file's errors name it.
    let path = scratch("cut.npy");
    std::fs::write(&path, &good[..good.len() - 1]).unwrap();
    let e = Tensor::try_load_npy(&path).unwrap_err();
    assert_error(
        e,
        ErrorKind::Io,
        &["load_npy: ", "cut.npy", "the data is 11 bytes"],
    );
    let e = Tensor::try_load_npy(scratch("missing.npy")).unwrap_err();
    assert_error(e, ErrorKind::Io, &["load_npy: ", "missing.npy"]);
}

#[test]
fn malformed_npz_archives_are_errors_naming_the_member() {
    let path = scratch("not_a_zip.npz");
    std::fs::write(&path, Tensor::from_vec(vec![1u8], &[1]).to_npy_bytes()).unwrap();
    let e = Tensor::try_load_npz(&path).unwrap_err();
    assert_error(
        e,
        ErrorKind::Io,
        &["load_npz: ", "not_a_zip.npz", "not a readable zip"],
    );
    // A stored member whose npy magic is broken.
    let good = std::fs::read(fixture("stored.npz")).unwrap();
    let at = good.windows(6).position(|w| w == b"\x93NUMPY").unwrap();
    let mut bad_member = good.clone();
    bad_member[at + 5] = b'Z';
    let path = scratch("bad_member.npz");
    std::fs::write(&path, &bad_member).unwrap();
    let e = Tensor::try_load_npz(&path).unwrap_err();
    assert_error(
        e,
        ErrorKind::Io,
        &["bad_member.npz: member 'a.npy'", "not an npy file"],
    );
    // A deflated member that declares more bytes than deflate can expand to is refused before
    // anything is allocated for it.
    let path = scratch("liar.npz");
    Tensor::save_npz_compressed(&path, [("z", &Tensor::zeros(&[4], None))]);
    let mut liar = std::fs::read(&path).unwrap();
    for (signature, at) in [(b"PK\x03\x04", 22), (b"PK\x01\x02", 24)] {
        let header = liar.windows(4).position(|w| w == signature).unwrap();
        liar[header + at..header + at + 4].copy_from_slice(&0x7fff_0000u32.to_le_bytes());
    }
    std::fs::write(&path, liar).unwrap();
    let e = Tensor::try_load_npz(&path).unwrap_err();
    assert_error(
        e,
        ErrorKind::Io,
        &["member 'z.npy'", "declares 2147418112 bytes"],
    );
    // Damaged deflate data, and an archive cut short: errors, whatever the zip reader finds.
    let mut deflated = std::fs::read(fixture("compressed.npz")).unwrap();
    for b in &mut deflated[60..120] {
        *b ^= 0x5a;
    }
    let cut = std::fs::read(fixture("compressed.npz")).unwrap()[..400].to_vec();
    for (name, bytes) in [("damaged.npz", deflated), ("cut.npz", cut)] {
        let path = scratch(name);
        std::fs::write(&path, bytes).unwrap();
        let e = Tensor::try_load_npz(&path).unwrap_err();
        assert_error(e, ErrorKind::Io, &["load_npz: ", name]);
    }
}

/// A safetensors file: the header's length, the header, the data.
fn safetensors_file(name: &str, header: &str, data: &[u8]) -> PathBuf {
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend(header.as_bytes());
    bytes.extend(data);
    let path = scratch(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn malformed_safetensors_files_are_errors() {
    let ok = safetensors_file(
        "ok.safetensors",
        r#"{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#,
        &[0; 8],
    );
    assert_eq!(
        Tensor::load_safetensors(&ok)["x"].to_vec::<f32>(),
        [0.0, 0.0]
    );
    let short = scratch("short.safetensors");
    std::fs::write(&short, [1, 2, 3]).unwrap();
    let e = Tensor::try_load_safetensors(&short).unwrap_err();
    assert_error(
        e,
        ErrorKind::Io,
        &["load_safetensors: ", "short.safetensors", "truncated"],
    );
    let long_header = scratch("long_header.safetensors");
    std::fs::write(&long_header, [200, 0, 0, 0, 0, 0, 0, 0, b'{', b'}']).unwrap();
    let e = Tensor::try_load_safetensors(&long_header).unwrap_err();
    assert_error(
        e,
        ErrorKind::Io,
        &["long_header.safetensors", "invalid header length"],
    );
    let cases = [
        (
            "json",
            r#"{"x":{"dtype":"F32","shape":[2],"#,
            8,
            "invalid JSON",
        ),
        (
            "incomplete",
            r#"{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#,
            4,
            "not a valid safetensors file",
        ),
        (
            "shape_vs_offsets",
            r#"{"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#,
            8,
            "not a valid safetensors file",
        ),
        (
            "offsets_overlap",
            r#"{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}"#,
            12,
            "not a valid safetensors file",
        ),
    ];
    for (name, header, data, why) in cases {
        let path = safetensors_file(&format!("{name}.safetensors"), header, &vec![0; data]);
        let e = Tensor::try_load_safetensors(&path).unwrap_err();
        assert_error(e, ErrorKind::Io, &["load_safetensors: ", name, why]);
    }
    let u16s = safetensors_file(
        "u16.safetensors",
        r#"{"w":{"dtype":"U16","shape":[2],"data_offsets":[0,4]}}"#,
        &[0; 4],
    );
    let e = Tensor::try_load_safetensors(&u16s).unwrap_err();
    assert_error(
        e,
        ErrorKind::DType,
        &["u16.safetensors", "tensor 'w' has dtype U16"],
    );
    let e = Tensor::try_load_safetensors(scratch("missing.safetensors")).unwrap_err();
    assert_error(e, ErrorKind::Io, &["missing.safetensors"]);
    let e = Tensor::try_save_safetensors(
        scratch("twice.safetensors"),
        [("x", &arange(2, DType::F32)), ("x", &arange(3, DType::F32))],
    )
    .unwrap_err();
    assert_error(e, ErrorKind::Io, &["two tensors are named 'x'"]);
}
