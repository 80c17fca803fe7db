//! numpy's `.npz` archives: a zip file with one `.npy` member per array, named after its key
//! (`weights` is `weights.npy`). `Tensor::load_npz` reads what `np.savez` (members stored) and
//! `np.savez_compressed` (deflated) write; `save_npz` and `save_npz_compressed` write the same.
//! Each member is read and written with `npy.rs`.

use super::npy;
use super::{io_error, os_error};
use crate::tensor::{Tensor, ok};
use smelt_ir::Result;
use std::collections::BTreeMap;
use std::io::{BufReader, BufWriter, Write};
use std::path::Path;
use zip::CompressionMethod;
use zip::write::SimpleFileOptions;

impl Tensor {
    /// numpy's `np.load` of a `.npz` archive: each array by its key (the member's name without
    /// `.npy`), read as [`Tensor::load_npy`] reads a file.
    #[track_caller]
    pub fn load_npz(path: impl AsRef<Path>) -> BTreeMap<String, Tensor> {
        ok(Tensor::try_load_npz(path))
    }

    /// [`Tensor::load_npz`]; an `io` error naming the archive and the member for a file that
    /// is not a zip archive, a member that breaks the npy format or cannot be decompressed, or
    /// two members with one key; a `dtype` error for a member of a dtype smelt lacks.
    #[track_caller]
    pub fn try_load_npz(path: impl AsRef<Path>) -> Result<BTreeMap<String, Tensor>> {
        let path = path.as_ref();
        let context = format!("load_npz: {}", path.display());
        let file = std::fs::File::open(path).map_err(|e| os_error(&context, e))?;
        let mut archive = zip::ZipArchive::new(BufReader::new(file))
            .map_err(|e| io_error(format!("{context}: not a readable zip archive: {e}")))?;
        let mut out = BTreeMap::new();
        for i in 0..archive.len() {
            let mut member = archive
                .by_index(i)
                .map_err(|e| io_error(format!("{context}: member {i}: {e}")))?;
            if member.is_dir() {
                continue;
            }
            let name = member
                .name()
                .map_err(|e| io_error(format!("{context}: member {i}: {e}")))?
                .into_owned();
            let key = name.strip_suffix(".npy").unwrap_or(&name).to_owned();
            let at = format!("{context}: member '{name}'");
            let (size, packed) = (member.size(), member.compressed_size());
            // Deflate expands at most 1032-fold: a larger declared size is a lie that must not
            // become an allocation.
            let most = if member.compression() == CompressionMethod::Stored {
                packed
            } else {
                packed.saturating_mul(1032).saturating_add(64)
            };
            if size > most {
                return Err(io_error(format!(
                    "{at}: declares {size} bytes, more than its {packed} compressed bytes can hold"
                )));
            }
            let tensor = npy::read(&mut member, size, &at)?;
            if out.insert(key.clone(), tensor).is_some() {
                return Err(io_error(format!(
                    "{context}: two members hold the key '{key}'"
                )));
            }
        }
        Ok(out)
    }

    /// numpy's `np.savez`: an archive with each tensor stored (not compressed) as the member
    /// `{key}.npy`. Accepts a map (`&BTreeMap<String, Tensor>`, `&HashMap`) or pairs
    /// (`[("w", &w), ("b", &b)]`).
    #[track_caller]
    pub fn save_npz<'a, K: AsRef<str>>(
        path: impl AsRef<Path>,
        tensors: impl IntoIterator<Item = (K, &'a Tensor)>,
    ) {
        ok(Tensor::try_save_npz(path, tensors))
    }

    /// [`Tensor::save_npz`]; a `dtype` error for a bfloat16 tensor, an `io` error when the
    /// file cannot be written.
    pub fn try_save_npz<'a, K: AsRef<str>>(
        path: impl AsRef<Path>,
        tensors: impl IntoIterator<Item = (K, &'a Tensor)>,
    ) -> Result<()> {
        save(
            path.as_ref(),
            tensors,
            CompressionMethod::Stored,
            "save_npz",
        )
    }

    /// numpy's `np.savez_compressed`: [`Tensor::save_npz`] with each member deflated.
    #[track_caller]
    pub fn save_npz_compressed<'a, K: AsRef<str>>(
        path: impl AsRef<Path>,
        tensors: impl IntoIterator<Item = (K, &'a Tensor)>,
    ) {
        ok(Tensor::try_save_npz_compressed(path, tensors))
    }

    /// [`Tensor::save_npz_compressed`], with [`Tensor::try_save_npz`]'s errors.
    pub fn try_save_npz_compressed<'a, K: AsRef<str>>(
        path: impl AsRef<Path>,
        tensors: impl IntoIterator<Item = (K, &'a Tensor)>,
    ) -> Result<()> {
        let method = CompressionMethod::Deflated;
        save(path.as_ref(), tensors, method, "save_npz_compressed")
    }
}

fn save<'a, K: AsRef<str>>(
    path: &Path,
    tensors: impl IntoIterator<Item = (K, &'a Tensor)>,
    method: CompressionMethod,
    op: &str,
) -> Result<()> {
    let context = format!("{op}: {}", path.display());
    let tensors: Vec<(K, &Tensor)> = tensors.into_iter().collect();
    // Refuse what cannot be written before the file is made.
    for (key, t) in &tensors {
        npy::header_descr(t.dtype(), &format!("{context}: key '{}'", key.as_ref()))?;
    }
    let file = std::fs::File::create(path).map_err(|e| os_error(&context, e))?;
    let mut zip = zip::ZipWriter::new(BufWriter::new(file));
    let zip_error = |e: zip::result::ZipError| io_error(format!("{context}: {e}"));
    for (key, t) in &tensors {
        let key = key.as_ref();
        let at = format!("{context}: key '{key}'");
        let options = SimpleFileOptions::default()
            .compression_method(method)
            .large_file(npy::file_len(t.dtype(), t.shape()) as u64 >= u32::MAX as u64);
        zip.start_file(format!("{key}.npy"), options)
            .map_err(zip_error)?;
        npy::write(&mut zip, t, &at)?;
    }
    let mut file = zip.finish().map_err(zip_error)?;
    file.flush().map_err(|e| os_error(&context, e))
}
