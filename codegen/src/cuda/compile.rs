//! Compile: CUDA C → PTX or CUBIN through NVRTC (cudarc), with an in-memory cache and an
//! on-disk cache keyed by a hash of the source, the target architecture and the NVRTC version.
//!
//! cudarc panics when a library it loads is missing, so every entry point first finds and loads
//! libnvrtc of CUDA 13 or 12 (`libraries.rs`: toolkits, NVIDIA's wheels, `$SMELT_CUDA_TOOLS`,
//! the loader's path), then checks that cudarc's own search reaches it. Without the `cuda`
//! feature or without libnvrtc,
//! compiling returns an `ErrorKind::Device` error naming what is missing; a source NVRTC
//! rejects returns `ErrorKind::Compile` with the full NVRTC log.

use super::libraries::Found;
#[cfg(feature = "cuda")]
use super::libraries::MAJORS;
#[cfg_attr(not(feature = "cuda"), allow(unused_imports))]
use smelt_ir::{Error, ErrorKind, Result};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

/// The architecture compiled for when no device says otherwise.
pub const DEFAULT_ARCH: &str = "sm_90";

/// The environment variable naming a folder with NVIDIA's wheels installed (`--target`).
pub const TOOLS_ENV: &str = "SMELT_CUDA_TOOLS";

/// ptxas inside a `$SMELT_CUDA_TOOLS` folder.
pub fn tools_ptxas(tools: &std::path::Path) -> PathBuf {
    // CUDA 13's wheel (`nvidia-cuda-nvcc`) first, then CUDA 12's (`nvidia-cuda-nvcc-cu12`).
    let cu13 = tools.join("nvidia/cu13/bin/ptxas");
    if cu13.is_file() {
        return cu13;
    }
    tools.join("nvidia/cuda_nvcc/bin/ptxas")
}

/// 64-bit FNV-1a: stable across runs and Rust versions (it names files on disk).
pub fn source_hash(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.bytes().chain([0u8]) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// Is NVRTC usable? `Ok(version)` (major, minor) or the reason it is not.
pub fn nvrtc_status() -> Result<(i32, i32)> {
    static STATUS: OnceLock<Result<(i32, i32)>> = OnceLock::new();
    STATUS.get_or_init(probe_nvrtc).clone()
}

/// The NVRTC library loaded (its CUDA major and file), or why there is none.
pub fn nvrtc_library() -> Result<Found> {
    static FOUND: OnceLock<Result<Found>> = OnceLock::new();
    FOUND.get_or_init(find_nvrtc).clone()
}

#[cfg(not(feature = "cuda"))]
fn find_nvrtc() -> Result<Found> {
    Err(Error::device(
        "NVRTC is unavailable: smelt was built without the `cuda` feature",
    ))
}

/// NVRTC of the newest major the driver can run the PTX of (CUDA 13's PTX needs a CUDA 13
/// driver); any major when there is no driver (compiling only).
#[cfg(feature = "cuda")]
fn find_nvrtc() -> Result<Found> {
    let majors: Vec<u32> = match super::libraries::driver_version() {
        Some((major, _)) => MAJORS.into_iter().filter(|&m| m <= major).collect(),
        None => MAJORS.to_vec(),
    };
    super::libraries::load("nvrtc", &majors, &["nvrtc-builtins"]).map_err(|why| {
        Error::device(format!(
            "NVRTC is unavailable: {why}; install the CUDA toolkit, or run \
             scripts/install-cuda-tools.sh and set {TOOLS_ENV}=.tools/cuda"
        ))
    })
}

#[cfg(not(feature = "cuda"))]
fn probe_nvrtc() -> Result<(i32, i32)> {
    nvrtc_library().map(|_| (0, 0))
}

#[cfg(feature = "cuda")]
fn probe_nvrtc() -> Result<(i32, i32)> {
    nvrtc_library()?;
    // SAFETY: probing only dlopens cudarc's candidate names and closes them again.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(Error::device(
            "NVRTC is unavailable: the library loaded but cudarc's search did not find it",
        ));
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: the library is present (checked above); the pointers are valid for writes.
    let result = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    if result != cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(Error::device(format!(
            "NVRTC is unavailable: nvrtcVersion failed with {result:?}"
        )));
    }
    Ok((major, minor))
}

/// The file cudarc's NVRTC calls go to (it may differ from [`nvrtc_library`]'s when cudarc's
/// own search reaches another copy first).
#[cfg(feature = "cuda")]
pub fn nvrtc_in_use() -> Option<PathBuf> {
    nvrtc_status().ok()?;
    // SAFETY: NVRTC is loaded (`nvrtc_status`); looking a symbol up has no other effect.
    let lib = unsafe { cudarc::nvrtc::sys::culib() };
    // SAFETY: the symbol is only used as an address for `dladdr`, never called.
    let symbol = unsafe { lib.get::<*const std::ffi::c_void>(b"nvrtcVersion\0") }.ok()?;
    super::libraries::loaded_from(*symbol as usize)
}

/// Without the `cuda` feature nothing is loaded.
#[cfg(not(feature = "cuda"))]
pub fn nvrtc_in_use() -> Option<PathBuf> {
    None
}

/// What NVRTC produces: PTX (text, for ptxas and the compile tests) or a CUBIN (the machine
/// code of one architecture, what the runtime loads: the driver need not JIT it, so a kernel
/// compiled by an NVRTC newer than the driver, within one CUDA major, still loads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Image {
    Ptx,
    Cubin,
}

impl Image {
    fn extension(self) -> &'static str {
        match self {
            Image::Ptx => "ptx",
            Image::Cubin => "cubin",
        }
    }
}

/// Compiles a complete CUDA C translation unit to PTX for `arch` (`sm_90` …).
pub fn compile_ptx(source: &str, arch: &str) -> Result<String> {
    nvrtc_status()?;
    let image = nvrtc_compile(source, arch, Image::Ptx)?;
    Ok(String::from_utf8_lossy(&image).into_owned())
}

/// Compiles a complete CUDA C translation unit to a CUBIN for `arch`.
pub fn compile_cubin(source: &str, arch: &str) -> Result<Vec<u8>> {
    nvrtc_status()?;
    nvrtc_compile(source, arch, Image::Cubin)
}

#[cfg(not(feature = "cuda"))]
fn nvrtc_compile(_source: &str, _arch: &str, _image: Image) -> Result<Vec<u8>> {
    unreachable!("nvrtc_status fails without the cuda feature")
}

#[cfg(feature = "cuda")]
fn nvrtc_compile(source: &str, arch: &str, image: Image) -> Result<Vec<u8>> {
    use cudarc::nvrtc::{result, sys};
    let nul = || Error::new(ErrorKind::Compile, "CUDA source contains a NUL byte");
    let source = std::ffi::CString::new(source).map_err(|_| nul())?;
    let name = std::ffi::CString::new("smelt.cu").map_err(|_| nul())?;
    let options = [
        format!("--gpu-architecture={arch}"),
        "--std=c++17".to_string(),
        "--fmad=false".to_string(),
    ];
    let failed = |what: &str, e: &dyn std::fmt::Debug| {
        Error::new(ErrorKind::Compile, format!("NVRTC {what} failed: {e:?}"))
    };
    let program = result::create_program(&source, Some(&name)).map_err(|e| failed("create", &e))?;
    // SAFETY: `program` was just created and is destroyed below, after its last use; the
    // options are plain ASCII strings; the output buffers are as long as NVRTC says.
    unsafe {
        let compiled = result::compile_program(program, &options);
        let out = match compiled {
            Err(e) => {
                let log = result::get_program_log(program)
                    .map(|l| {
                        let bytes: Vec<u8> = l.iter().map(|&c| c as u8).collect();
                        String::from_utf8_lossy(&bytes)
                            .trim_end_matches('\0')
                            .to_string()
                    })
                    .unwrap_or_default();
                Err(Error::new(
                    ErrorKind::Compile,
                    format!("NVRTC failed ({e:?}) with options {options:?}:\n{log}"),
                ))
            }
            Ok(()) => match image {
                Image::Ptx => result::get_ptx(program)
                    .map(|p| p.iter().map(|&c| c as u8).take_while(|&b| b != 0).collect())
                    .map_err(|e| failed("get PTX", &e)),
                Image::Cubin => {
                    let mut size = 0usize;
                    let r = sys::nvrtcGetCUBINSize(program, &mut size);
                    if r != sys::nvrtcResult::NVRTC_SUCCESS {
                        Err(failed("get CUBIN size", &r))
                    } else {
                        let mut bytes = vec![0u8; size];
                        let r = sys::nvrtcGetCUBIN(program, bytes.as_mut_ptr().cast());
                        if r == sys::nvrtcResult::NVRTC_SUCCESS {
                            Ok(bytes)
                        } else {
                            Err(failed("get CUBIN", &r))
                        }
                    }
                }
            },
        };
        let _ = result::destroy_program(program);
        out
    }
}

/// Compiled kernels by source: memory first, then `dir` on disk (when set), then NVRTC.
#[derive(Debug)]
pub struct KernelCache {
    memory: Mutex<HashMap<u64, Arc<Vec<u8>>>>,
    dir: Option<PathBuf>,
}

impl KernelCache {
    /// A cache keeping files in `dir` (`None`: memory only).
    pub fn new(dir: Option<PathBuf>) -> KernelCache {
        KernelCache {
            memory: Mutex::new(HashMap::new()),
            dir,
        }
    }

    /// The default on-disk folder: `$SMELT_CACHE_DIR`, else `$XDG_CACHE_HOME/smelt`, else
    /// `~/.cache/smelt`, with `cuda/` appended.
    pub fn default_dir() -> Option<PathBuf> {
        let base = std::env::var_os("SMELT_CACHE_DIR")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("smelt")))
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/smelt")))?;
        Some(base.join("cuda"))
    }

    /// The process-wide cache.
    pub fn global() -> &'static KernelCache {
        static CACHE: OnceLock<KernelCache> = OnceLock::new();
        CACHE.get_or_init(|| KernelCache::new(KernelCache::default_dir()))
    }

    /// `source` compiled to `image` for `arch`, compiling at most once per process and per
    /// disk cache.
    pub fn get(&self, source: &str, arch: &str, image: Image) -> Result<Arc<Vec<u8>>> {
        let (major, minor) = nvrtc_status()?;
        let version = format!("nvrtc {major}.{minor}");
        let key = source_hash(&[source, arch, &version, image.extension()]);
        if let Some(bytes) = self.lock().get(&key) {
            return Ok(bytes.clone());
        }
        let files = self.dir.as_ref().map(|d| {
            let stem = format!("{key:016x}-{arch}");
            (
                d.join(format!("{stem}.cu")),
                d.join(format!("{stem}.{}", image.extension())),
            )
        });
        // A disk hit counts only when the stored source is this source (no hash collisions).
        if let Some((cu, bin)) = &files
            && std::fs::read_to_string(cu).is_ok_and(|s| s == source)
            && let Ok(bytes) = std::fs::read(bin)
        {
            let bytes = Arc::new(bytes);
            self.lock().insert(key, bytes.clone());
            return Ok(bytes);
        }
        let bytes = Arc::new(nvrtc_compile(source, arch, image)?);
        if let (Some((cu, bin)), Some(dir)) = (&files, &self.dir) {
            // Written whole under a temporary name, then renamed (another process reading
            // the cache sees a complete file or none); the source last, since it marks the
            // entry as present. A cache that cannot be written is only slower.
            // The temporary name is this write's own: threads of one process may write the
            // same entry at once.
            let put = |path: &PathBuf, data: &[u8]| {
                static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
                let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let tmp = path.with_extension(format!("tmp{}-{n}", std::process::id()));
                std::fs::write(&tmp, data).and_then(|_| std::fs::rename(&tmp, path))
            };
            let _ = std::fs::create_dir_all(dir)
                .and_then(|_| put(bin, &bytes))
                .and_then(|_| put(cu, source.as_bytes()));
        }
        self.lock().insert(key, bytes.clone());
        Ok(bytes)
    }

    /// Compiles each of `sources` that is not cached yet, on as many threads as the host has,
    /// up to 16 (NVRTC compiles separate programs concurrently), so that a plan's first run waits for
    /// about its slowest kernel rather than for the sum of them. A source that fails is left
    /// for [`KernelCache::get`] to report when it is asked for.
    pub fn warm(&self, sources: &[String], arch: &str, image: Image) {
        // Distinct by hash: sources share a prelude of some kilobytes, so comparing them
        // whole would cost more than hashing.
        let mut seen = std::collections::HashSet::new();
        let distinct: Vec<&String> = sources
            .iter()
            .filter(|s| seen.insert(source_hash(&[s])))
            .collect();
        // At most 16 compiles at once: each NVRTC program holds its own front end's memory.
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 16)
            .min(distinct.len());
        let next = std::sync::atomic::AtomicUsize::new(0);
        let work = || {
            while let Some(source) =
                distinct.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
            {
                let _ = self.get(source, arch, image);
            }
        };
        std::thread::scope(|scope| {
            // Helpers where the system gives threads; this thread works too, and finishes
            // alone what no helper takes.
            for _ in 1..threads {
                if std::thread::Builder::new()
                    .spawn_scoped(scope, work)
                    .is_err()
                {
                    break;
                }
            }
            work();
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Vec<u8>>>> {
        self.memory.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_stable() {
        assert_eq!(source_hash(&[]), 0xcbf2_9ce4_8422_2325);
        assert_ne!(source_hash(&["a", "b"]), source_hash(&["ab"]));
    }

    #[test]
    fn missing_nvrtc_is_a_device_error_or_compiles() {
        match compile_ptx(
            "extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }",
            DEFAULT_ARCH,
        ) {
            Ok(ptx) => assert!(ptx.contains(".entry k"), "{ptx}"),
            Err(e) => assert_eq!(e.kind, ErrorKind::Device, "{e}"),
        }
        // The runtime loads CUBINs: an ELF image of the architecture's machine code.
        match compile_cubin(
            "extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }",
            DEFAULT_ARCH,
        ) {
            Ok(cubin) => assert_eq!(&cubin[..4], b"\x7fELF"),
            Err(e) => assert_eq!(e.kind, ErrorKind::Device, "{e}"),
        }
    }

    /// Warming compiles each distinct source once (on several threads), `get` then finds it in
    /// memory, and a source NVRTC rejects is not cached: `get` reports it.
    #[test]
    fn warming_compiles_each_source_once_for_get_to_find() {
        let cache = KernelCache::new(None);
        let kernel =
            |i: usize| format!("extern \"C\" __global__ void k{i}(float* x) {{ x[0] = {i}.0f; }}");
        let bad = "this is not CUDA".to_string();
        let sources = [kernel(1), kernel(2), kernel(1), bad.clone(), kernel(3)];
        cache.warm(&sources, DEFAULT_ARCH, Image::Ptx);
        if let Err(e) = nvrtc_status() {
            eprintln!("skipped: {e}");
            assert!(cache.lock().is_empty());
            return;
        }
        assert_eq!(cache.lock().len(), 3, "three distinct sources compile");
        for i in 1..=3 {
            let cached = cache.lock().values().cloned().collect::<Vec<_>>();
            let got = cache.get(&kernel(i), DEFAULT_ARCH, Image::Ptx).unwrap();
            assert!(
                cached.iter().any(|c| Arc::ptr_eq(c, &got)),
                "k{i} came from memory"
            );
        }
        let e = cache.get(&bad, DEFAULT_ARCH, Image::Ptx).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Compile, "{e}");
        assert_eq!(cache.lock().len(), 3);
    }

    #[test]
    fn bad_source_is_a_compile_error_with_the_log() {
        if let Err(e) = nvrtc_status() {
            eprintln!("skipped: {e}");
            return;
        }
        let e = compile_ptx("__global__ void k() { undefined_thing(); }", DEFAULT_ARCH)
            .expect_err("does not compile");
        assert_eq!(e.kind, ErrorKind::Compile);
        assert!(e.message.contains("undefined_thing"), "{e}");
    }
}
