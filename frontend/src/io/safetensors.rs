//! safetensors files through the `safetensors` crate: `Tensor::load_safetensors` maps the
//! file and makes every tensor a view of its bytes, read lazily; `save_safetensors` writes one.
//!
//! Lazily: loading reads the header only (the crate checks every offset against the file).
//! Each tensor's buffer points into the read-only mapping, so its pages are read from disk when
//! a kernel (or `to_vec`, printing …) first touches them, and a tensor nobody reads costs no
//! I/O. Bytes that are not valid elements where they lie (bool bytes, which must be 0 or 1
//! for Rust; an offset misaligned for the dtype; any file on a big-endian host) are copied
//! into a buffer of their own when first read instead. A write (an in-place op) copies the
//! tensor's elements first, so the file is never written. The mapping lives as long as any
//! tensor from it; as with every memory map, the file must not be changed or truncated
//! meanwhile (safetensors' own writer replaces a file by renaming a new one, which is safe).

use super::{DenseBytes, dense_bytes, io_error, os_error};
use crate::tensor::{Tensor, ok};
use ::safetensors::tensor::{Dtype, SafeTensors, View as SafeView};
use smelt_ir::{DType, Error, Result, View};
use smelt_runtime::HostBuffer;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::Arc;

impl Tensor {
    /// safetensors' `load_file`: every tensor of the file by name, over a read-only memory map
    /// of it, each read when its value is first needed (module docs of `io/safetensors.rs`).
    #[track_caller]
    pub fn load_safetensors(path: impl AsRef<Path>) -> BTreeMap<String, Tensor> {
        ok(Tensor::try_load_safetensors(path))
    }

    /// [`Tensor::load_safetensors`]; an `io` error naming the file for one that cannot be
    /// mapped or breaks the format (header length, JSON, offsets, data length), a `dtype`
    /// error naming the key for a dtype smelt lacks (unsigned 16-64 bit, 8-bit floats,
    /// complex).
    #[track_caller]
    pub fn try_load_safetensors(path: impl AsRef<Path>) -> Result<BTreeMap<String, Tensor>> {
        let path = path.as_ref();
        let context = format!("load_safetensors: {}", path.display());
        let file = std::fs::File::open(path).map_err(|e| os_error(&context, e))?;
        let len = file.metadata().map_err(|e| os_error(&context, e))?.len();
        if len < 8 {
            return Err(io_error(format!(
                "{context}: the file is truncated: {len} bytes, less than the 8 of the header's length"
            )));
        }
        // SAFETY: a read-only private mapping. What the map's contract leaves to the caller, that
        // the file is not changed or truncated while it is mapped, is the documented condition
        // of this function (module docs).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| os_error(&context, e))?;
        let base = map.as_ptr() as usize;
        // (name, dtype, shape, byte offset in the file) of every tensor.
        let mut entries = vec![];
        {
            let st = SafeTensors::deserialize(&map)
                .map_err(|e| io_error(format!("{context}: not a valid safetensors file: {e}")))?;
            for (name, view) in st.iter() {
                let dtype = dtype_of(view.dtype()).ok_or_else(|| {
                    Error::dtype(format!(
                        "{context}: tensor '{name}' has dtype {:?}, which smelt lacks (it reads \
                         BOOL, U8, I8, I16, I32, I64, F16, BF16, F32, F64)",
                        view.dtype()
                    ))
                })?;
                let at = view.data().as_ptr() as usize - base;
                entries.push((name.to_owned(), dtype, view.shape().to_vec(), at));
            }
        }
        let owner: Arc<dyn Send + Sync> = Arc::new(map);
        let mut out = BTreeMap::new();
        for (name, dtype, shape, at) in entries {
            let numel: usize = shape.iter().product();
            let at =
                NonNull::new((base + at) as *mut u8).expect("invariant: a mapping is not at 0");
            // SAFETY: the crate checked that the tensor's `numel * size` bytes lie inside the
            // mapping, which `owner` keeps alive; the file is not changed meanwhile (above).
            let buffer = unsafe { HostBuffer::from_le_bytes(dtype, owner.clone(), at, numel) };
            out.insert(
                name,
                Tensor::try_from_buffer(buffer, View::contiguous(&shape))?,
            );
        }
        Ok(out)
    }

    /// safetensors' `save_file`: the tensors by name, each contiguous (a view is made
    /// contiguous first), in one file that PyTorch and the `safetensors` crate read. Accepts a
    /// map or pairs, as [`Tensor::save_npz`] does. Realizes the tensors.
    #[track_caller]
    pub fn save_safetensors<'a, K: AsRef<str>>(
        path: impl AsRef<Path>,
        tensors: impl IntoIterator<Item = (K, &'a Tensor)>,
    ) {
        ok(Tensor::try_save_safetensors(path, tensors))
    }

    /// [`Tensor::save_safetensors`]; an `io` error when the file cannot be written or two
    /// tensors have one name.
    pub fn try_save_safetensors<'a, K: AsRef<str>>(
        path: impl AsRef<Path>,
        tensors: impl IntoIterator<Item = (K, &'a Tensor)>,
    ) -> Result<()> {
        let path = path.as_ref();
        let context = format!("save_safetensors: {}", path.display());
        let mut seen = std::collections::HashSet::new();
        let mut views = vec![];
        for (name, t) in tensors {
            let name = name.as_ref().to_owned();
            if !seen.insert(name.clone()) {
                return Err(io_error(format!(
                    "{context}: two tensors are named '{name}'"
                )));
            }
            let shape = t.shape().to_vec();
            views.push((
                name,
                Dense {
                    dtype: t.dtype(),
                    shape,
                    bytes: dense_bytes(t, false)?,
                },
            ));
        }
        ::safetensors::serialize_to_file(views, None, path)
            .map_err(|e| io_error(format!("{context}: {e}")))
    }
}

/// smelt's dtype of a safetensors dtype, if it has one.
fn dtype_of(d: Dtype) -> Option<DType> {
    Some(match d {
        Dtype::BOOL => DType::Bool,
        Dtype::U8 => DType::U8,
        Dtype::I8 => DType::I8,
        Dtype::I16 => DType::I16,
        Dtype::I32 => DType::I32,
        Dtype::I64 => DType::I64,
        Dtype::F16 => DType::F16,
        Dtype::BF16 => DType::BF16,
        Dtype::F32 => DType::F32,
        Dtype::F64 => DType::F64,
        Dtype::F4
        | Dtype::F6_E2M3
        | Dtype::F6_E3M2
        | Dtype::F8_E5M2
        | Dtype::F8_E4M3
        | Dtype::F8_E8M0
        | Dtype::F8_E4M3FNUZ
        | Dtype::F8_E5M2FNUZ
        | Dtype::U16
        | Dtype::U32
        | Dtype::C64
        | Dtype::U64 => return None,
        // `Dtype` is non-exhaustive: what a later version adds, smelt lacks too.
        _ => return None,
    })
}

/// A realized tensor's elements, row-major on the host, as the `safetensors` crate writes them.
struct Dense {
    dtype: DType,
    shape: Vec<usize>,
    bytes: DenseBytes,
}

impl SafeView for Dense {
    fn dtype(&self) -> Dtype {
        match self.dtype {
            DType::Bool => Dtype::BOOL,
            DType::U8 => Dtype::U8,
            DType::I8 => Dtype::I8,
            DType::I16 => Dtype::I16,
            DType::I32 => Dtype::I32,
            DType::I64 => Dtype::I64,
            DType::F16 => Dtype::F16,
            DType::BF16 => Dtype::BF16,
            DType::F32 => Dtype::F32,
            DType::F64 => Dtype::F64,
        }
    }

    fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The bytes in little-endian order, as the format stores them.
    fn data(&self) -> Cow<'_, [u8]> {
        let bytes = self.bytes.bytes();
        let size = self.dtype.size();
        if cfg!(target_endian = "little") || size == 1 {
            return Cow::Borrowed(bytes);
        }
        let mut swapped = bytes.to_vec();
        swapped.chunks_exact_mut(size).for_each(<[u8]>::reverse);
        Cow::Owned(swapped)
    }

    fn data_len(&self) -> usize {
        self.bytes.len
    }
}
