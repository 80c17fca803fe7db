//! Finding NVIDIA's libraries (NVRTC, cuBLAS) of CUDA 13 or CUDA 12 wherever they are
//! installed: a toolkit (`$CUDA_PATH`, `$CUDA_HOME`, `/usr/local/cuda*/lib64`), NVIDIA's PyPI
//! wheels (`nvidia-cuda-nvrtc`/`nvidia-cublas` ship `nvidia/cu13/lib`, the `-cu12` wheels
//! `nvidia/cuda_nvrtc/lib` and `nvidia/cublas/lib`) under `$SMELT_CUDA_TOOLS`, a virtual
//! environment or a system Python, or the dynamic loader's own path.
//!
//! The file found is loaded with `RTLD_GLOBAL` and kept: cudarc, built for CUDA 13's API (which
//! CUDA 12's libraries share for every call smelt makes), then opens its candidate names
//! (`libnvrtc.so.13`, `libnvrtc.so.12`, …) through the loader, which hands back the object
//! already loaded under that soname. Where cudarc's own search would reach another copy first
//! (an unversioned `libnvrtc.so` on the loader path), [`loaded_from`] tells which file a symbol
//! really came from, and `smelt info` shows that.

use std::path::{Path, PathBuf};

/// A library found and loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// The CUDA major version of its soname (12 or 13).
    pub major: u32,
    /// The file loaded, or the bare soname when the loader found it on its own path.
    pub path: PathBuf,
}

/// The CUDA majors smelt can load, newest first.
pub const MAJORS: [u32; 2] = [13, 12];

/// The folders a wheel of `stem` (`nvrtc`, `cublas`) for CUDA `major` installs its library in,
/// relative to a site-packages folder (or `$SMELT_CUDA_TOOLS`).
pub fn wheel_dirs(stem: &str, major: u32) -> Vec<PathBuf> {
    let old_layout = match stem {
        "nvrtc" => "nvidia/cuda_nvrtc/lib",
        "cublas" | "cublasLt" => "nvidia/cublas/lib",
        other => return vec![PathBuf::from(format!("nvidia/{other}/lib"))],
    };
    match major {
        13 => vec![PathBuf::from("nvidia/cu13/lib"), PathBuf::from(old_layout)],
        _ => vec![PathBuf::from(old_layout)],
    }
}

/// Subfolders of `dir` whose names start with `prefix`, newest name first.
fn children(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| e.path())
        .collect();
    out.sort();
    out.reverse();
    out
}

/// Python package folders that may hold NVIDIA's wheels.
fn site_packages() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = vec![];
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(v) = std::env::var_os(var) {
            roots.push(PathBuf::from(v));
        }
    }
    if let Some(home) = std::env::var_os("HOME") {
        roots.push(PathBuf::from(home).join(".local"));
    }
    roots.extend(["/usr/local", "/usr"].map(PathBuf::from));
    roots.extend(children(Path::new("/opt"), "").into_iter().flat_map(|d| {
        let venv = d.join(".venv");
        [d, venv]
    }));
    let mut out = vec![];
    for root in roots {
        for lib in ["lib", "lib64"] {
            for py in children(&root.join(lib), "python3") {
                out.push(py.join("site-packages"));
                out.push(py.join("dist-packages"));
            }
        }
    }
    out.push(PathBuf::from("/usr/lib/python3/dist-packages"));
    out
}

/// Every folder searched for the library `stem` of CUDA `major`, in order.
pub fn search_dirs(stem: &str, major: u32) -> Vec<PathBuf> {
    let mut dirs = vec![];
    if let Some(tools) = std::env::var_os(crate::cuda::compile::TOOLS_ENV) {
        let tools = PathBuf::from(tools);
        dirs.extend(wheel_dirs(stem, major).into_iter().map(|w| tools.join(w)));
    }
    for var in ["CUDA_PATH", "CUDA_HOME", "CUDA_ROOT"] {
        if let Some(v) = std::env::var_os(var) {
            dirs.push(PathBuf::from(v).join("lib64"));
        }
    }
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    dirs.extend(
        children(Path::new("/usr/local"), "cuda-")
            .into_iter()
            .map(|d| d.join("lib64")),
    );
    for site in site_packages() {
        dirs.extend(wheel_dirs(stem, major).into_iter().map(|w| site.join(w)));
    }
    dirs
}

/// The soname of `stem` for CUDA `major`: `libnvrtc.so.13`.
pub fn soname(stem: &str, major: u32) -> String {
    format!("lib{stem}.so.{major}")
}

/// Finds and loads `stem` of the first major in `majors` that some folder (or the loader's
/// path) holds, preloading from the same folder the `companions` it opens itself (cuBLAS
/// needs cuBLASLt, NVRTC its builtins). `Err`
/// lists what was looked for.
#[cfg(feature = "cuda")]
pub fn load(stem: &str, majors: &[u32], companions: &[&str]) -> Result<Found, String> {
    use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
    let open = |path: &Path| {
        // SAFETY: loading one of NVIDIA's libraries runs its initialisers, which have no
        // preconditions; the handle is kept for the life of the process (forgotten below).
        unsafe { Library::open(Some(path), RTLD_NOW | RTLD_GLOBAL) }
    };
    let mut tried = vec![];
    for &major in majors {
        let name = soname(stem, major);
        for dir in search_dirs(stem, major) {
            let path = dir.join(&name);
            if !path.is_file() {
                continue;
            }
            // Libraries it opens by soname at run time (cuBLASLt; NVRTC's builtins, named
            // `libnvrtc-builtins.so.13.0`), which the loader would not find in this folder.
            for c in companions {
                let prefix = soname(c, major);
                let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
                    .into_iter()
                    .flatten()
                    .filter_map(|e| e.ok())
                    .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                    .map(|e| e.path())
                    .collect();
                found.sort();
                for companion in found {
                    if let Ok(lib) = open(&companion) {
                        std::mem::forget(lib);
                    }
                }
            }
            match open(&path) {
                Ok(lib) => {
                    std::mem::forget(lib);
                    return Ok(Found { major, path });
                }
                Err(e) => tried.push(format!("{}: {e}", path.display())),
            }
        }
        // The loader's own path (LD_LIBRARY_PATH, ldconfig).
        if let Ok(lib) = open(Path::new(&name)) {
            std::mem::forget(lib);
            return Ok(Found {
                major,
                path: PathBuf::from(name),
            });
        }
    }
    let names: Vec<String> = majors.iter().map(|&m| soname(stem, m)).collect();
    let mut why = format!(
        "{} not found in $SMELT_CUDA_TOOLS, $CUDA_PATH, /usr/local/cuda*/lib64, NVIDIA's Python \
         wheels or the loader's path",
        names.join(" or ")
    );
    if !tried.is_empty() {
        why.push_str(&format!(
            " (found but failed to load: {})",
            tried.join("; ")
        ));
    }
    Err(why)
}

/// The CUDA version the installed driver supports, `(13, 0)` for driver 580; `None` without a
/// driver (libcuda).
#[cfg(feature = "cuda")]
pub fn driver_version() -> Option<(u32, u32)> {
    static VERSION: std::sync::OnceLock<Option<(u32, u32)>> = std::sync::OnceLock::new();
    *VERSION.get_or_init(|| {
        // SAFETY: probing dlopens cudarc's candidate names for libcuda and closes them.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return None;
        }
        let mut version = 0;
        // SAFETY: libcuda is present (checked above); `version` is a valid out-pointer, and
        // cuDriverGetVersion needs no cuInit.
        let r = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut version) };
        (r == cudarc::driver::sys::CUresult::CUDA_SUCCESS && version > 0)
            .then_some((version as u32 / 1000, version as u32 % 1000 / 10))
    })
}

/// The file the loaded symbol at `address` comes from (`dladdr`).
#[cfg(feature = "cuda")]
pub fn loaded_from(address: usize) -> Option<PathBuf> {
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: `dladdr` only looks the address up in the loader's tables (it never reads
    // through it); `info` is a valid out-pointer.
    if unsafe { libc::dladdr(address as *const std::ffi::c_void, &mut info) } == 0
        || info.dli_fname.is_null()
    {
        return None;
    }
    // SAFETY: a nonzero `dladdr` result sets `dli_fname` to a NUL-terminated path the loader
    // owns for as long as the object stays loaded (NVIDIA's libraries are never unloaded).
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    Some(PathBuf::from(name.to_string_lossy().into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wheels_of_both_majors_are_searched() {
        assert_eq!(
            wheel_dirs("nvrtc", 13),
            ["nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib"].map(PathBuf::from)
        );
        assert_eq!(
            wheel_dirs("cublas", 12),
            [PathBuf::from("nvidia/cublas/lib")]
        );
        assert_eq!(soname("cublas", 13), "libcublas.so.13");
        let dirs = search_dirs("nvrtc", 12);
        assert!(dirs.contains(&PathBuf::from("/usr/local/cuda/lib64")));
        assert!(
            dirs.iter()
                .any(|d| d.ends_with("nvidia/cuda_nvrtc/lib") || d.ends_with("lib64"))
        );
    }

    #[cfg(feature = "cuda")]
    #[test]
    fn a_missing_library_says_what_was_looked_for() {
        let e = load("smelt_no_such_library", &MAJORS, &[]).expect_err("no such library");
        assert!(e.contains("libsmelt_no_such_library.so.13"), "{e}");
        assert!(e.contains("libsmelt_no_such_library.so.12"), "{e}");
    }
}
