//! numpy's `.npy` format, versions 1.0, 2.0 and 3.0: `Tensor::load_npy` / `save_npy` and the
//! in-memory forms `from_npy_bytes` / `to_npy_bytes`; `npz.rs` reads and writes its members
//! with the same [`read`] and [`write`].
//!
//! A file is a preamble (`\x93NUMPY`, the version, the header's length), a header that is a
//! Python dict literal (`{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`) and the
//! elements. Read: the elements go straight from the file into the tensor's own vector; a
//! Fortran-order array becomes the transposed view numpy shows (strides `(1, 2)` for shape
//! `(2, 3)`), a big-endian one is byte-swapped. Written: a Fortran-contiguous tensor (a
//! transposed contiguous one) is saved in Fortran order, any other non-contiguous view is made
//! contiguous first; bfloat16 has no numpy dtype and is refused.

use super::{dense_bytes, io_error, os_error};
use crate::tensor::{Tensor, ok};
use smelt_ir::{DType, Error, Result, View};
use smelt_runtime::HostElement;
use smelt_runtime::memory::Memory;
use std::io::{BufWriter, Read, Write};
use std::path::Path;

const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// The dtypes smelt reads, as numpy's descr strings (little-endian forms; `>` for big-endian
/// ones is read too).
const READABLE: &str = "|b1, |u1, |i1, <i2, <i4, <i8, <f2, <f4, <f8";

/// What a header says.
#[derive(Debug, PartialEq)]
struct Header {
    dtype: DType,
    /// The elements' byte order is not the host's.
    swap: bool,
    fortran: bool,
    shape: Vec<usize>,
}

impl Tensor {
    /// numpy's `np.load` of a `.npy` file (format 1.0, 2.0 or 3.0; dtypes bool, uint8, int8,
    /// int16, int32, int64, float16, float32, float64, either byte order). A Fortran-order
    /// array is a transposed view, as numpy shows it.
    #[track_caller]
    pub fn load_npy(path: impl AsRef<Path>) -> Tensor {
        ok(Tensor::try_load_npy(path))
    }

    /// [`Tensor::load_npy`]; an `io` error for a file that cannot be read or breaks the
    /// format (magic, version, header, data length), a `dtype` error for a dtype smelt lacks.
    #[track_caller]
    pub fn try_load_npy(path: impl AsRef<Path>) -> Result<Tensor> {
        let path = path.as_ref();
        let context = format!("load_npy: {}", path.display());
        let file = std::fs::File::open(path).map_err(|e| os_error(&context, e))?;
        let len = file.metadata().map_err(|e| os_error(&context, e))?.len();
        read(&mut std::io::BufReader::new(file), len, &context)
    }

    /// A tensor from the bytes of a `.npy` file ([`Tensor::load_npy`]).
    #[track_caller]
    pub fn from_npy_bytes(bytes: &[u8]) -> Tensor {
        ok(Tensor::try_from_npy_bytes(bytes))
    }

    /// [`Tensor::from_npy_bytes`], with [`Tensor::try_load_npy`]'s errors.
    #[track_caller]
    pub fn try_from_npy_bytes(mut bytes: &[u8]) -> Result<Tensor> {
        let len = bytes.len() as u64;
        read(&mut bytes, len, "from_npy_bytes")
    }

    /// numpy's `np.save`: a `.npy` file (format 1.0, or 2.0 for a header over 64 KiB) that
    /// numpy reads back bit for bit. Realizes the tensor.
    #[track_caller]
    pub fn save_npy(&self, path: impl AsRef<Path>) {
        ok(self.try_save_npy(path))
    }

    /// [`Tensor::save_npy`]; a `dtype` error for bfloat16 (numpy has no such dtype), an `io`
    /// error when the file cannot be written.
    pub fn try_save_npy(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let context = format!("save_npy: {}", path.display());
        header_descr(self.dtype(), &context)?;
        let file = std::fs::File::create(path).map_err(|e| os_error(&context, e))?;
        let mut w = BufWriter::new(file);
        write(&mut w, self, &context)?;
        w.flush().map_err(|e| os_error(&context, e))
    }

    /// The bytes of the `.npy` file [`Tensor::save_npy`] writes.
    #[track_caller]
    pub fn to_npy_bytes(&self) -> Vec<u8> {
        ok(self.try_to_npy_bytes())
    }

    /// [`Tensor::to_npy_bytes`]; a `dtype` error for bfloat16.
    pub fn try_to_npy_bytes(&self) -> Result<Vec<u8>> {
        let mut out = vec![];
        write(&mut out, self, "to_npy_bytes")?;
        Ok(out)
    }
}

/// Reads one `.npy` array of `available` bytes from `r`; `context` starts every message
/// (`load_npy: path`, `load_npz: path: member 'a.npy'`).
#[track_caller]
pub(super) fn read(r: &mut impl Read, available: u64, context: &str) -> Result<Tensor> {
    let truncated = |what: &str| {
        io_error(format!(
            "{context}: the file is truncated: {available} bytes end inside the {what}"
        ))
    };
    let mut preamble = [0u8; 8];
    read_exact(r, &mut preamble, context)
        .map_err(|e| e.unwrap_or_else(|| truncated("preamble")))?;
    if &preamble[..6] != MAGIC {
        return Err(io_error(format!(
            "{context}: not an npy file: it starts with {:?}, not the magic string \"\\x93NUMPY\"",
            String::from_utf8_lossy(&preamble[..6])
        )));
    }
    let (major, minor) = (preamble[6], preamble[7]);
    let header_len = match major {
        1 => {
            let mut n = [0u8; 2];
            read_exact(r, &mut n, context)
                .map_err(|e| e.unwrap_or_else(|| truncated("preamble")))?;
            u16::from_le_bytes(n) as u64
        }
        2 | 3 => {
            let mut n = [0u8; 4];
            read_exact(r, &mut n, context)
                .map_err(|e| e.unwrap_or_else(|| truncated("preamble")))?;
            u32::from_le_bytes(n) as u64
        }
        _ => {
            return Err(io_error(format!(
                "{context}: npy format version {major}.{minor} is not one smelt reads (1.0, 2.0, 3.0)"
            )));
        }
    };
    let preamble_len = if major == 1 { 10 } else { 12 };
    if preamble_len + header_len > available {
        return Err(truncated("header"));
    }
    let mut raw = vec![0u8; header_len as usize];
    read_exact(r, &mut raw, context).map_err(|e| e.unwrap_or_else(|| truncated("header")))?;
    // Versions 1 and 2 encode the header in latin-1, version 3 in UTF-8.
    let text: String = if major == 3 {
        String::from_utf8(raw)
            .map_err(|_| io_error(format!("{context}: the version 3.0 header is not UTF-8")))?
    } else {
        raw.iter().map(|&b| b as char).collect()
    };
    let header = parse_header(&text).map_err(|why| {
        let shown: String = text.trim_end().chars().take(200).collect();
        io_error(format!("{context}: malformed header {shown:?}: {why}"))
    })?;
    let header = header.resolve(context)?;
    let size = header.dtype.size();
    let numel = header
        .shape
        .iter()
        .try_fold(1usize, |n, &s| n.checked_mul(s));
    let nbytes = numel.and_then(|n| n.checked_mul(size)).ok_or_else(|| {
        io_error(format!(
            "{context}: shape {} of {} overflows the address space",
            fmt_shape(&header.shape),
            header.dtype
        ))
    })?;
    let data = available - preamble_len - header_len;
    if data != nbytes as u64 {
        return Err(io_error(format!(
            "{context}: the data is {data} bytes, but shape {} of {} needs {nbytes} \
             (numel × {size} bytes)",
            fmt_shape(&header.shape),
            header.dtype
        )));
    }
    let numel = nbytes / size;
    let buffer = match header.dtype {
        DType::Bool => {
            let bytes: Vec<u8> = read_elements(r, numel, false, context)?;
            // numpy's bools are bytes 0 and 1; like numpy, read any other byte as true.
            bool::wrap(Memory::adopt(bytes.into_iter().map(|b| b != 0).collect()))
        }
        DType::U8 => u8::wrap(Memory::adopt(read_elements(r, numel, false, context)?)),
        DType::I8 => i8::wrap(Memory::adopt(read_elements(r, numel, false, context)?)),
        DType::I16 => i16::wrap(Memory::adopt(read_elements(
            r,
            numel,
            header.swap,
            context,
        )?)),
        DType::I32 => i32::wrap(Memory::adopt(read_elements(
            r,
            numel,
            header.swap,
            context,
        )?)),
        DType::I64 => i64::wrap(Memory::adopt(read_elements(
            r,
            numel,
            header.swap,
            context,
        )?)),
        DType::F16 => half::f16::wrap(Memory::adopt(read_elements(
            r,
            numel,
            header.swap,
            context,
        )?)),
        DType::F32 => f32::wrap(Memory::adopt(read_elements(
            r,
            numel,
            header.swap,
            context,
        )?)),
        DType::F64 => f64::wrap(Memory::adopt(read_elements(
            r,
            numel,
            header.swap,
            context,
        )?)),
        DType::BF16 => unreachable!("invariant: no npy descr resolves to bfloat16"),
    };
    let view = if header.fortran {
        let mut strides = vec![0isize; header.shape.len()];
        let mut step = 1isize;
        for (s, &n) in strides.iter_mut().zip(&header.shape) {
            *s = step;
            step *= n.max(1) as isize;
        }
        View::new(header.shape.as_slice(), strides, 0)
    } else {
        View::contiguous(&header.shape)
    };
    Tensor::try_from_buffer(buffer, view)
}

/// Fills `buf` from `r`: `Err(None)` when the input ends first, `Err(Some(e))` for another
/// failure of the reader.
fn read_exact(r: &mut impl Read, buf: &mut [u8], context: &str) -> Result<(), Option<Error>> {
    r.read_exact(buf)
        .map_err(|e| (e.kind() != std::io::ErrorKind::UnexpectedEof).then(|| os_error(context, e)))
}

/// `numel` elements of `T` read from `r` into a vector of their own, byte-swapped when `swap`.
/// `T` is any element type but bool, for which every byte pattern is a valid value.
fn read_elements<T: HostElement + Default>(
    r: &mut impl Read,
    numel: usize,
    swap: bool,
    context: &str,
) -> Result<Vec<T>> {
    assert!(
        T::DTYPE != DType::Bool,
        "invariant: bools are read as bytes"
    );
    let mut v: Vec<T> = vec![];
    v.try_reserve_exact(numel)
        .map_err(|e| io_error(format!("{context}: cannot allocate {numel} elements: {e}")))?;
    v.resize(numel, T::default());
    let size = size_of::<T>();
    // SAFETY: the vector holds `numel` initialised elements of a plain-old-data type for which
    // every bit pattern is valid (not bool, asserted above), so its memory may be written as
    // bytes.
    let bytes =
        unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), numel * size) };
    read_exact(r, bytes, context).map_err(|e| {
        e.unwrap_or_else(|| io_error(format!("{context}: the file is truncated inside the data")))
    })?;
    if swap {
        bytes.chunks_exact_mut(size).for_each(<[u8]>::reverse);
    }
    Ok(v)
}

/// Writes `t` as one `.npy` array: the header, then the elements from the realized buffer.
pub(super) fn write(w: &mut impl Write, t: &Tensor, context: &str) -> Result<()> {
    let descr = header_descr(t.dtype(), context)?;
    let dense = dense_bytes(t, true)?;
    let header = header_bytes(&descr, dense.fortran, t.shape());
    w.write_all(&header).map_err(|e| os_error(context, e))?;
    w.write_all(dense.bytes()).map_err(|e| os_error(context, e))
}

/// Bytes of a whole `.npy` file for an array of `dtype` and `shape` (the bytes the header
/// takes plus the data).
pub(super) fn file_len(dtype: DType, shape: &[usize]) -> usize {
    let descr = header_descr(dtype, "").unwrap_or_default();
    let numel: usize = shape.iter().product();
    header_bytes(&descr, false, shape).len() + numel * dtype.size()
}

/// numpy's descr of `dtype` in the host's byte order; bfloat16 has none.
pub(super) fn header_descr(dtype: DType, context: &str) -> Result<String> {
    let order = if cfg!(target_endian = "little") {
        '<'
    } else {
        '>'
    };
    Ok(match dtype {
        DType::Bool => "|b1".into(),
        DType::U8 => "|u1".into(),
        DType::I8 => "|i1".into(),
        DType::I16 => format!("{order}i2"),
        DType::I32 => format!("{order}i4"),
        DType::I64 => format!("{order}i8"),
        DType::F16 => format!("{order}f2"),
        DType::F32 => format!("{order}f4"),
        DType::F64 => format!("{order}f8"),
        DType::BF16 => {
            return Err(Error::dtype(format!(
                "{context}: bfloat16 has no numpy dtype; convert the tensor first \
                 (to_dtype(DType::F32) keeps every value)"
            )));
        }
    })
}

/// The preamble and header numpy writes: version 1.0 (2.0 when the header is over 64 KiB),
/// padded with spaces and a newline so that the data starts at a multiple of 64 bytes.
fn header_bytes(descr: &str, fortran: bool, shape: &[usize]) -> Vec<u8> {
    let shape = fmt_shape(shape);
    let fortran = if fortran { "True" } else { "False" };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}");
    // The dict, a newline, padded so that the data starts at a multiple of 64 bytes.
    let total_after = |preamble: usize| (preamble + dict.len() + 1).next_multiple_of(64);
    let v1 = total_after(10) - 10 <= u16::MAX as usize;
    let preamble = if v1 { 10 } else { 12 };
    let total = total_after(preamble);
    let header_len = total - preamble;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(MAGIC);
    if v1 {
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(header_len as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&[2, 0]);
        out.extend_from_slice(&(header_len as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.resize(total - 1, b' ');
    out.push(b'\n');
    out
}

/// A shape as a Python tuple: `(2, 3)`, `(4,)`, `()`.
fn fmt_shape(shape: &[usize]) -> String {
    let items: Vec<String> = shape.iter().map(|n| n.to_string()).collect();
    match items.len() {
        1 => format!("({},)", items[0]),
        _ => format!("({})", items.join(", ")),
    }
}

/// A header's values before its descr is resolved to a dtype.
struct RawHeader {
    descr: String,
    fortran: bool,
    shape: Vec<usize>,
}

impl RawHeader {
    fn resolve(self, context: &str) -> Result<Header> {
        let (dtype, swap) = parse_descr(&self.descr).ok_or_else(|| {
            Error::dtype(format!(
                "{context}: dtype '{}' is not one smelt reads ({READABLE}, or their big-endian \
                 forms); numpy's unsigned 16-64 bit, complex, string, object and structured \
                 arrays have no smelt dtype",
                self.descr
            ))
        })?;
        Ok(Header {
            dtype,
            swap,
            fortran: self.fortran,
            shape: self.shape,
        })
    }
}

/// The dtype of a descr such as `<f4`, and whether its byte order is not the host's.
fn parse_descr(descr: &str) -> Option<(DType, bool)> {
    let (order, code) = match descr.as_bytes().first()? {
        b'<' | b'>' | b'|' | b'=' => (descr.as_bytes()[0], &descr[1..]),
        _ => (b'=', descr),
    };
    let dtype = match code {
        "b1" | "?" => DType::Bool,
        "u1" | "B" => DType::U8,
        "i1" | "b" => DType::I8,
        "i2" => DType::I16,
        "i4" => DType::I32,
        "i8" => DType::I64,
        "f2" | "e" => DType::F16,
        "f4" => DType::F32,
        "f8" => DType::F64,
        _ => return None,
    };
    let little = cfg!(target_endian = "little");
    let swap = match order {
        _ if dtype.size() == 1 => false,
        b'<' => !little,
        b'>' => little,
        b'=' => false,
        // `|` (not applicable) is only numpy's for one-byte types.
        _ => return None,
    };
    Some((dtype, swap))
}

/// Parses the header dict: exactly the keys `descr` (a string), `fortran_order` (a bool) and
/// `shape` (a tuple of ints), as numpy requires.
fn parse_header(text: &str) -> Result<RawHeader, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
    };
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    p.expect(b'{')?;
    loop {
        if p.eat(b'}') {
            break;
        }
        let key = p.string()?;
        if !matches!(key.as_str(), "descr" | "fortran_order" | "shape") {
            return Err(format!("unexpected key '{key}'"));
        }
        p.expect(b':')?;
        let value = p.value()?;
        let slot_taken = match (key.as_str(), value) {
            ("descr", Value::Str(s)) => descr.replace(s).is_some(),
            ("fortran_order", Value::Bool(b)) => fortran.replace(b).is_some(),
            ("shape", Value::Tuple(t)) => shape.replace(t).is_some(),
            (_, v) => {
                return Err(format!(
                    "'{key}' has the wrong kind of value ({})",
                    v.kind()
                ));
            }
        };
        if slot_taken {
            return Err(format!("key '{key}' appears twice"));
        }
        if !p.eat(b',') {
            p.expect(b'}')?;
            break;
        }
    }
    p.skip_ws();
    if p.i != p.s.len() {
        return Err(format!("text after the dict at byte {}", p.i));
    }
    let missing = |k: &str| format!("key '{k}' is missing");
    Ok(RawHeader {
        descr: descr.ok_or_else(|| missing("descr"))?,
        fortran: fortran.ok_or_else(|| missing("fortran_order"))?,
        shape: shape.ok_or_else(|| missing("shape"))?,
    })
}

/// A value of the header dict.
enum Value {
    Str(String),
    Bool(bool),
    Tuple(Vec<usize>),
}

impl Value {
    fn kind(&self) -> &'static str {
        match self {
            Value::Str(_) => "a string",
            Value::Bool(_) => "a bool",
            Value::Tuple(_) => "a tuple",
        }
    }
}

/// A cursor over the header's text.
struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    /// Consumes `c` (after whitespace) if it is next.
    fn eat(&mut self, c: u8) -> bool {
        self.skip_ws();
        let hit = self.s.get(self.i) == Some(&c);
        self.i += usize::from(hit);
        hit
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.eat(c) {
            return Ok(());
        }
        Err(match self.s.get(self.i) {
            Some(&got) => format!(
                "expected '{}' at byte {}, found '{}'",
                c as char, self.i, got as char
            ),
            None => format!("expected '{}' at byte {}, found the end", c as char, self.i),
        })
    }

    fn string(&mut self) -> Result<String, String> {
        self.skip_ws();
        let quote = match self.s.get(self.i) {
            Some(&q @ (b'\'' | b'"')) => q,
            _ => return Err(format!("expected a quoted string at byte {}", self.i)),
        };
        let start = self.i + 1;
        let len = self.s[start..]
            .iter()
            .position(|&c| c == quote)
            .ok_or_else(|| format!("unterminated string at byte {}", self.i))?;
        self.i = start + len + 1;
        Ok(String::from_utf8_lossy(&self.s[start..start + len]).into_owned())
    }

    fn value(&mut self) -> Result<Value, String> {
        self.skip_ws();
        let rest = &self.s[self.i..];
        if rest.starts_with(b"True") {
            self.i += 4;
            return Ok(Value::Bool(true));
        }
        if rest.starts_with(b"False") {
            self.i += 5;
            return Ok(Value::Bool(false));
        }
        match rest.first() {
            Some(b'\'' | b'"') => self.string().map(Value::Str),
            Some(b'(') => self.tuple().map(Value::Tuple),
            Some(b'[') => Err("a structured dtype (a list of fields) has no smelt dtype".into()),
            _ => Err(format!(
                "expected a string, True, False or a tuple at byte {}",
                self.i
            )),
        }
    }

    /// A tuple of non-negative ints (Python 2's `3L` suffix allowed).
    fn tuple(&mut self) -> Result<Vec<usize>, String> {
        self.expect(b'(')?;
        let mut items = vec![];
        loop {
            if self.eat(b')') {
                return Ok(items);
            }
            self.skip_ws();
            let start = self.i;
            while self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
                self.i += 1;
            }
            let digits = std::str::from_utf8(&self.s[start..self.i]).unwrap_or_default();
            let n = digits
                .parse::<usize>()
                .map_err(|_| format!("expected a dimension (an int ≥ 0) at byte {start}"))?;
            if self.s.get(self.i) == Some(&b'L') {
                self.i += 1;
            }
            items.push(n);
            if !self.eat(b',') {
                self.expect(b')')?;
                return Ok(items);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_parse_as_numpy_writes_them() {
        let h = parse_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }   \n")
            .unwrap()
            .resolve("")
            .unwrap();
        assert_eq!(
            h,
            Header {
                dtype: DType::F32,
                swap: false,
                fortran: false,
                shape: vec![2, 3]
            }
        );
        let h = parse_header("{\"shape\": (3L,), \"fortran_order\": True, \"descr\": \">i2\"}")
            .unwrap()
            .resolve("")
            .unwrap();
        assert_eq!(
            (h.dtype, h.swap, h.fortran, h.shape),
            (DType::I16, true, true, vec![3])
        );
        let scalar = parse_header("{'descr':'|b1','fortran_order':False,'shape':()}").unwrap();
        assert!(scalar.shape.is_empty());
    }

    #[test]
    fn malformed_headers_say_what_is_wrong() {
        let cases = [
            (
                "{'descr': '<f4', 'shape': (2,), }",
                "key 'fortran_order' is missing",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}",
                "unexpected key 'x'",
            ),
            (
                "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}",
                "expected a string, True",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}",
                "expected a dimension",
            ),
            (
                "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': ()}",
                "structured",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)",
                "found the end",
            ),
            ("{'descr': '<f4', 'descr': '<f4'", "appears twice"),
            ("{'descr' '<f4'}", "expected ':'"),
            ("", "expected '{'"),
        ];
        for (text, why) in cases {
            let e = parse_header(text)
                .err()
                .unwrap_or_else(|| panic!("{text} parsed"));
            assert!(e.contains(why), "{text}: {e}");
        }
        let e = parse_header("{'descr': '<u4', 'fortran_order': False, 'shape': ()}")
            .unwrap()
            .resolve("load_npy: x.npy")
            .unwrap_err();
        assert_eq!(e.kind, smelt_ir::ErrorKind::DType);
        assert!(e.message.contains("dtype '<u4'"), "{e}");
    }

    #[test]
    fn written_headers_align_the_data_to_64_bytes() {
        for shape in [&[][..], &[5], &[2, 3, 4]] {
            let h = header_bytes("<f4", false, shape);
            assert_eq!(h.len() % 64, 0);
            assert_eq!(h.last(), Some(&b'\n'));
            let text = std::str::from_utf8(&h[10..]).unwrap();
            assert_eq!(parse_header(text).unwrap().shape, shape);
        }
        let wide = vec![1usize; 30_000];
        let h = header_bytes("<f4", false, &wide);
        assert_eq!(
            (h[6], h.len() % 64),
            (2, 0),
            "a header over 64 KiB needs version 2.0"
        );
    }
}
