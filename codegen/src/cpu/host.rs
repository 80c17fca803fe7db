//! What the host reports about itself — cache sizes, cache line, cores, vector width — and the
//! tuning the cpu backend derives from it, once per process ([`host`], [`tuning`]).
//!
//! The cache sizes come from Linux's `/sys/devices/system/cpu/cpu0/cache/index*/` (level, type,
//! size, line); where that is missing (another OS, a container hiding it), from the defaults
//! below, which are the smallest caches of the machines measured. `smelt info` prints both the
//! host and what was chosen. Nothing here changes what a kernel computes, only how it walks and
//! writes memory, so every choice keeps the results bit for bit.

use std::sync::OnceLock;

/// The host as it reports itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    /// Level-1 data cache of one core, in bytes.
    pub l1d: usize,
    /// Level-2 cache of one core, in bytes.
    pub l2: usize,
    /// The last-level cache (the largest cache level; shared), in bytes.
    pub llc: usize,
    /// Cache line, in bytes.
    pub line: usize,
    /// Threads the process may run on.
    pub cores: usize,
    /// The widest vector registers, in bits (what the host has; cranelift emits 128 at most).
    pub vector_bits: u32,
    /// Who made the CPU, from `cpuid`.
    pub vendor: Vendor,
    /// Where the cache sizes came from: `sysfs` or `defaults`.
    pub source: &'static str,
}

/// A CPU's maker, as `cpuid` names it: the prefetchers differ between them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vendor {
    /// `AuthenticAMD`.
    Amd,
    /// `GenuineIntel`.
    Intel,
    /// Anything else, or not an x86-64 CPU.
    Other,
}

impl Vendor {
    /// This CPU's maker (vendor string of `cpuid` leaf 0).
    fn detect() -> Vendor {
        #[cfg(target_arch = "x86_64")]
        {
            // Every x86-64 CPU has `cpuid`, and leaf 0 on all of them.
            let r = std::arch::x86_64::__cpuid(0);
            let mut name = [0u8; 12];
            for (chunk, word) in name.chunks_mut(4).zip([r.ebx, r.edx, r.ecx]) {
                chunk.copy_from_slice(&word.to_le_bytes());
            }
            match &name {
                b"AuthenticAMD" => Vendor::Amd,
                b"GenuineIntel" => Vendor::Intel,
                _ => Vendor::Other,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Vendor::Other
        }
    }

    /// How `smelt info` names it.
    pub fn name(self) -> &'static str {
        match self {
            Vendor::Amd => "AMD",
            Vendor::Intel => "Intel",
            Vendor::Other => "other",
        }
    }
}

/// The choices derived from [`Host`] (see [`Tuning::for_host`] for the rules).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tuning {
    /// Rows × columns of a tiled walk's block with f32 transposing loads
    /// (`translate/tiles.rs`), columns a multiple of 16.
    pub transpose_tile: (i64, i64),
    /// Output bytes from which a kernel writes with streaming stores.
    pub stream_min: usize,
    /// The bytes of the last-level cache this process can count on keeping: a launch whose
    /// buffers were touched within that many bytes of kernel traffic, and whose own bytes
    /// fit in it, keeps its plain stores (the runtime's `residency` model).
    pub cache_share: usize,
    /// Bytes a SIMD loop prefetches ahead of its contiguous loads; 0 for none.
    pub prefetch_ahead: i32,
}

/// Cache sizes used when the host does not report them: 32 KiB, 1 MiB, 32 MiB, 64-byte lines
/// (the smallest of the machines measured, an AMD EPYC guest).
const DEFAULTS: (usize, usize, usize, usize) = (32 << 10, 1 << 20, 32 << 20, 64);

impl Host {
    /// Reads the host's description (sysfs, else [`DEFAULTS`]).
    fn detect() -> Host {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let vector_bits = vector_bits();
        let ((l1d, l2, llc, line), source) = match sysfs_caches() {
            Some(caches) => (caches, "sysfs"),
            None => (DEFAULTS, "defaults"),
        };
        Host {
            l1d,
            l2,
            llc,
            line,
            cores,
            vector_bits,
            vendor: Vendor::detect(),
            source,
        }
    }
}

impl Tuning {
    /// The rules, each tied to the measurement behind it (`docs/benchmarks.md`, "Figures
    /// behind the code's constants"):
    ///
    /// - `transpose_tile`: 128 columns (eight lines of each output row, written whole by a
    ///   streaming store); rows so that one tile's transposing input (rows × columns × 4
    ///   bytes) fills at most the L1 data cache, between 16 and 64: 64 × 128 (32 KiB) on the
    ///   Xeons (48 KiB L1) and the EPYC (32 KiB), where it was measured best, and smaller
    ///   tiles where the L1 is smaller.
    /// - `stream_min`: half the last-level cache, between 4 and 16 MiB. An output that large
    ///   leaves the caches before it is read again, so an ordinary store's read of the line
    ///   first is wasted; 16 MiB was measured on 32 and 480 MiB caches (a guest's share of a
    ///   shared L3 is far smaller than the whole), and a smaller L3 streams sooner.
    /// - `cache_share`: a fifth of the last-level cache. On the Xeon guest with a 260 MiB L3
    ///   (52 MiB), `permute_scale` launched back to back on its 49 MiB of buffers ran 1.17×
    ///   faster with plain stores than streamed, while `layernorm` (64 MiB) still gained from
    ///   streaming (1.06×) and `softmax_rows` (128 MiB) was level: what stays cached there is
    ///   about a fifth of what the guest is told. On a 32 MiB L3 it is below `stream_min`, so
    ///   nothing changes there.
    /// - `prefetch_ahead`: 32 cache lines (2 KiB with 64-byte lines), scaled with the line
    ///   size, where it was measured to gain (the Xeon guests: a row sum of `(a − b)²` 7.3 →
    ///   5.4 ms in C); none on AMD CPUs, whose own prefetchers keep enough lines in flight:
    ///   on the Zen 4 EPYC the same C loop gained nothing (faster in 10 and 8 of 30
    ///   alternations), and smelt's `sum_sq_diff` ran 4–6 % faster without (`smelt bench
    ///   --serve` alternated, 31 of 40 and 55 of 60 rounds), every other workload within 2 %.
    ///   A row's later passes still prefetch the next row (`translate/rows.rs`).
    pub fn for_host(h: &Host) -> Tuning {
        let rows = (h.l1d / (128 * 4)).clamp(16, 64) as i64 / 16 * 16;
        let prefetch_ahead = match h.vendor {
            Vendor::Amd => 0,
            Vendor::Intel | Vendor::Other => (32 * h.line.clamp(32, 256)) as i32,
        };
        Tuning {
            transpose_tile: (rows, 128),
            stream_min: (h.llc / 2).clamp(4 << 20, 16 << 20),
            cache_share: h.llc / 5,
            prefetch_ahead,
        }
    }
}

/// Parses a sysfs cache size (`32K`, `1024K`, `32M`) into bytes.
fn parse_size(text: &str) -> Option<usize> {
    let t = text.trim();
    let (digits, scale) = match t.as_bytes().last()? {
        b'K' | b'k' => (&t[..t.len() - 1], 1 << 10),
        b'M' | b'm' => (&t[..t.len() - 1], 1 << 20),
        b'G' | b'g' => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    digits.parse::<usize>().ok().map(|n| n * scale)
}

/// L1 data, L2 and last-level cache bytes and the line size of cpu0, from sysfs.
fn sysfs_caches() -> Option<(usize, usize, usize, usize)> {
    let root = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    let (mut l1d, mut l2, mut llc, mut line) = (None, None, None, None);
    let mut deepest = 0;
    for entry in std::fs::read_dir(root).ok()?.flatten() {
        let read = |name: &str| std::fs::read_to_string(entry.path().join(name)).ok();
        let (Some(level), Some(kind), Some(size)) = (read("level"), read("type"), read("size"))
        else {
            continue;
        };
        let (Ok(level), Some(size)) = (level.trim().parse::<u32>(), parse_size(&size)) else {
            continue;
        };
        if kind.trim() == "Instruction" {
            continue;
        }
        if let Some(l) = read("coherency_line_size").and_then(|s| s.trim().parse().ok()) {
            line.get_or_insert(l);
        }
        match level {
            1 => l1d = Some(size),
            2 => l2 = Some(size),
            _ => {}
        }
        if level >= 2 && level >= deepest {
            deepest = level;
            llc = Some(size);
        }
    }
    let l1d = l1d?;
    let l2 = l2.unwrap_or(DEFAULTS.1);
    Some((l1d, l2, llc.unwrap_or(l2), line.unwrap_or(64)))
}

/// The widest vector registers this CPU has, in bits.
fn vector_bits() -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return 512;
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return 256;
        }
        128
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        128
    }
}

/// This process's host, read once.
pub fn host() -> &'static Host {
    static HOST: OnceLock<Host> = OnceLock::new();
    HOST.get_or_init(Host::detect)
}

/// This process's tuning, derived once from [`host`]; `SMELT_PREFETCH_AHEAD=BYTES` (0 for
/// none) overrides the prefetch distance, to measure another machine kind.
pub fn tuning() -> &'static Tuning {
    static TUNING: OnceLock<Tuning> = OnceLock::new();
    TUNING.get_or_init(|| {
        let mut t = Tuning::for_host(host());
        let ahead = std::env::var("SMELT_PREFETCH_AHEAD").ok();
        if let Some(bytes) = ahead.and_then(|v| v.trim().parse::<i32>().ok()) {
            t.prefetch_ahead = bytes.max(0);
        }
        t
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(l1d: usize, l2: usize, llc: usize) -> Host {
        Host {
            l1d,
            l2,
            llc,
            line: 64,
            cores: 2,
            vector_bits: 512,
            vendor: Vendor::Intel,
            source: "test",
        }
    }

    #[test]
    fn sizes_parse_as_sysfs_writes_them() {
        assert_eq!(parse_size("32K\n"), Some(32 << 10));
        assert_eq!(parse_size("1024K"), Some(1 << 20));
        assert_eq!(parse_size("32M"), Some(32 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("lots"), None);
    }

    #[test]
    fn the_measured_machines_keep_their_measured_choices() {
        // The Xeon guests (48 KiB L1, 2 MiB L2, 480 MiB L3) and the EPYC (32 KiB, 1 MiB,
        // 32 MiB): the tile and the threshold measured there.
        for h in [
            host(48 << 10, 2 << 20, 480 << 20),
            host(32 << 10, 1 << 20, 32 << 20),
        ] {
            let t = Tuning::for_host(&h);
            assert_eq!(t.transpose_tile, (64, 128));
            assert_eq!(t.stream_min, 16 << 20);
            assert_eq!(t.prefetch_ahead, 2048);
            assert_eq!(t.cache_share, h.llc / 5);
        }
        // The EPYC is an AMD CPU: no prefetches ahead of streamed loads there.
        let epyc = Host {
            vendor: Vendor::Amd,
            ..host(32 << 10, 1 << 20, 32 << 20)
        };
        assert_eq!(Tuning::for_host(&epyc).prefetch_ahead, 0);
    }

    #[test]
    fn smaller_caches_give_smaller_tiles_and_stream_sooner() {
        let t = Tuning::for_host(&host(16 << 10, 256 << 10, 6 << 20));
        assert_eq!(t.transpose_tile, (32, 128));
        assert_eq!(t.stream_min, 4 << 20);
        let t = Tuning::for_host(&host(8 << 10, 256 << 10, 1 << 20));
        assert_eq!(t.transpose_tile, (16, 128));
        assert_eq!(t.stream_min, 4 << 20);
    }

    #[test]
    fn this_host_reports_usable_sizes() {
        let h = super::host();
        assert!(h.l1d >= 1 << 10 && h.l2 >= h.l1d && h.llc >= h.l2, "{h:?}");
        assert!(h.line.is_power_of_two() && h.cores >= 1, "{h:?}");
    }
}
