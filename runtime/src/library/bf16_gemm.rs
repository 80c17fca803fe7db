//! A bfloat16 GEMM on the AVX-512 BF16 dot-product instruction (`vdpbf16ps`: each f32 lane
//! adds the products of a pair of bf16 values), where the host has it; `matmul` widens to the
//! f32 `gemm` elsewhere. The `gemm` crate has no bf16 kernels, and widening both operands
//! costs a pass over each and f32 arithmetic at half the bf16 instruction's rate.
//!
//! The layout is the classic one (Goto's): `K` in blocks of [`KC`] pairs; per block, `b` packed
//! once into panels of [`NR`] columns, each k-pair of a panel one 512-bit row of 16 lanes × 2
//! bf16 (the pair `b[2p, j], b[2p + 1, j]` in lane `j`); `a` packed per block of [`MC`] rows
//! (each thread its own) into panels of [`MR`] rows, the pair `a[i, 2p], a[i, 2p + 1]` as one
//! 32-bit word that the kernel broadcasts. The micro-kernel keeps an `MR × NR` tile of f32
//! sums in 16 registers. Columns and a `K` beyond a multiple of the blocks are packed as zeros,
//! which add nothing; rows beyond one keep whatever the pooled block held, since a tile row
//! depends on its own row of `a` alone. Only the tile's real rows and columns reach the output.
//!
//! Numerics: every product of two bf16 values is exact in f32, and each lane adds its two
//! products to the sum one after the other, rounding to nearest even (as an f32 FMA chain
//! would, in another order). The instruction treats subnormal bf16 inputs as zero and flushes
//! subnormal results, whatever MXCSR says: oneDNN's bf16 matmul, which PyTorch runs on such a
//! host, computes with the same instruction.

use crate::memory::Memory;
use half::bf16;

/// `len` packed words in a pooled block (`crate::memory`), its old contents left as they are:
/// fresh zeroed vectors cost a memset (or page faults) per row block, 5 % of a
/// 2048 × 768 × 3072 product.
fn words(len: usize) -> Memory<i32> {
    Memory::for_overwrite(len)
}

/// The words of a pooled block as the `u32` pairs the kernel reads.
fn as_words(block: &mut Memory<i32>) -> &mut [u32] {
    let words: &mut [i32] = block;
    // SAFETY: i32 and u32 have one size and alignment and every bit pattern is valid for
    // both; the slice is borrowed from `block` for as long as it lives.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u32>(), words.len()) }
}

/// Rows of the micro-kernel's tile.
const MR: usize = 8;
/// Columns of the micro-kernel's tile: two 512-bit vectors of f32.
const NR: usize = 32;
/// K-pairs per block: a packed strip of `a` is `KC × MR` words (16 KiB, in an L1), a panel of
/// `b` `KC × NR` (64 KiB, in an L2, read at 128 bytes per 16 dot products).
const KC: usize = 512;
/// Rows of `a` a thread packs and multiplies at a time (`MC × KC` words, 256 KiB, in an L2).
const MC: usize = 128;

/// Whether this host has the instructions ([`gemm`] must not run otherwise).
pub(crate) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::OnceLock;
        static HAS: OnceLock<bool> = OnceLock::new();
        *HAS.get_or_init(|| {
            std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bf16")
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A bf16 word pair: `lo` in the low half (the lower k), `hi` in the high half.
fn pair(lo: bf16, hi: bf16) -> u32 {
    u32::from(lo.to_bits()) | u32::from(hi.to_bits()) << 16
}

/// `out = a·b` for one `m×k` by `k×n` product of bf16 operands into f32 sums, with
/// `matmul::gemm_one`'s operand convention (first element, row stride, column stride) and its
/// contract; `parallelism` other than `None` spreads row blocks over rayon's threads.
///
/// # Safety
/// [`available`] is true; every address `first + i·row_stride + j·col_stride` (i below the
/// operand's rows, j below its columns) is inside its operand's allocation; the output's are
/// distinct and no other thread touches them during the call.
pub(crate) unsafe fn gemm(
    (m, n, k): (usize, usize, usize),
    (o, o_rs, o_cs): (*mut f32, isize, isize),
    (a, a_rs, a_cs): (*const bf16, isize, isize),
    (b, b_rs, b_cs): (*const bf16, isize, isize),
    parallelism: gemm::Parallelism,
) {
    if m == 0 || n == 0 {
        return;
    }
    let out = super::matmul::Shared(o);
    let (a, b) = (
        super::matmul::Shared(a.cast_mut()),
        super::matmul::Shared(b.cast_mut()),
    );
    // SAFETY (for the reads below): the caller's contract bounds each operand's addresses.
    let at_a =
        |i: usize, kk: usize| unsafe { *a.get().offset(i as isize * a_rs + kk as isize * a_cs) };
    let at_b =
        |kk: usize, j: usize| unsafe { *b.get().offset(kk as isize * b_rs + j as isize * b_cs) };
    let zero = bf16::ZERO;
    let pairs = k.div_ceil(2);
    let panels = n.div_ceil(NR);
    // Each K block's panels are written whole (lanes past n as zeros) before they are read.
    let mut packed_b_block = words(panels * KC.min(pairs.max(1)) * NR);
    let packed_b = as_words(&mut packed_b_block);
    if pairs == 0 {
        // An empty sum: every output element is 0.
        for i in 0..m {
            for j in 0..n {
                // SAFETY: the caller's contract bounds the output's addresses.
                unsafe { *out.get().offset(i as isize * o_rs + j as isize * o_cs) = 0.0 };
            }
        }
        return;
    }
    let threads = !matches!(parallelism, gemm::Parallelism::None);
    for p0 in (0..pairs).step_by(KC) {
        let kc = KC.min(pairs - p0);
        // Pack this block of b: panel q, pair p, lane l at ((q·kc + p)·NR + l), panels on
        // every thread when the product is.
        let pack_panel = |(q, panel): (usize, &mut [u32])| {
            let cols = NR.min(n.saturating_sub(q * NR));
            for (p, lanes) in panel.chunks_exact_mut(NR).enumerate() {
                let k0 = 2 * (p0 + p);
                if b_cs == 1 && k0 + 1 < k {
                    // Rows k0 and k0 + 1 of the panel's columns, contiguous: zipped into
                    // pairs (the compiler vectorizes it).
                    // SAFETY: rows k0, k0 + 1 < k and columns q·NR .. q·NR + cols ≤ n, each
                    // row's run contiguous (b_cs = 1): inside b (caller's contract); b is
                    // only read.
                    let (r0, r1) = unsafe {
                        let at = |kk: usize| b.get().offset(kk as isize * b_rs + (q * NR) as isize);
                        (
                            std::slice::from_raw_parts(at(k0), cols),
                            std::slice::from_raw_parts(at(k0 + 1), cols),
                        )
                    };
                    for ((word, &lo), &hi) in lanes.iter_mut().zip(r0).zip(r1) {
                        *word = pair(lo, hi);
                    }
                    lanes[cols..].fill(0);
                    continue;
                }
                if b_rs == 1 && k0 + 1 < k {
                    // A column-major b (`kᵀ`): each pair is one little-endian word of a column.
                    for (l, word) in lanes.iter_mut().enumerate().take(cols) {
                        let j = (q * NR + l) as isize;
                        // SAFETY: rows k0, k0 + 1 < k of column j < n, adjacent (b_rs = 1):
                        // inside b (caller's contract), only read; unaligned read.
                        *word = unsafe {
                            b.get()
                                .offset(k0 as isize + j * b_cs)
                                .cast::<u32>()
                                .read_unaligned()
                        };
                    }
                    lanes[cols..].fill(0);
                    continue;
                }
                for (l, word) in lanes.iter_mut().enumerate() {
                    let j = q * NR + l;
                    *word = if j < n {
                        let lo = at_b(k0, j);
                        let hi = if k0 + 1 < k { at_b(k0 + 1, j) } else { zero };
                        pair(lo, hi)
                    } else {
                        0
                    };
                }
            }
        };
        let panels_of = &mut packed_b[..panels * kc * NR];
        if threads && panels > 1 {
            use rayon::prelude::*;
            panels_of
                .par_chunks_mut(kc * NR)
                .enumerate()
                .for_each(pack_panel);
        } else {
            panels_of
                .chunks_mut(kc * NR)
                .enumerate()
                .for_each(pack_panel);
        }
        let first = p0 == 0;
        let packed_b = &packed_b[..panels * kc * NR];
        let row_block = |i0: usize| {
            let mc = MC.min(m - i0);
            let strips = mc.div_ceil(MR);
            // Pack these rows of a: strip s, pair p, row r at ((s·kc + p)·MR + r).
            // Every word of a row below m is written below; a strip's rows past m keep what the
            // block held: they only reach tile rows that never leave the tile.
            let mut packed_a_block = words(strips * kc * MR);
            let packed_a = as_words(&mut packed_a_block);
            // Pairs of this block whose both halves lie inside K: read as one word each when
            // a's rows are contiguous (a little-endian word of two bf16 is their pair).
            let whole = if a_cs == 1 {
                (k / 2).saturating_sub(p0).min(kc)
            } else {
                0
            };
            for s in 0..strips {
                for r in 0..MR {
                    let i = i0 + s * MR + r;
                    if i >= m {
                        continue;
                    }
                    // SAFETY: row i < m, elements 2·p0 .. 2·(p0 + whole) ≤ k of it, contiguous
                    // (a_cs = 1): inside a (caller's contract), only read.
                    let words = unsafe {
                        a.get()
                            .offset(i as isize * a_rs + 2 * p0 as isize)
                            .cast::<u32>()
                    };
                    for p in 0..whole {
                        // SAFETY: p < whole (above); unaligned read.
                        let w = unsafe { words.add(p).read_unaligned() };
                        packed_a[(s * kc + p) * MR + r] = w;
                    }
                    for p in whole..kc {
                        let k0 = 2 * (p0 + p);
                        let lo = at_a(i, k0);
                        let hi = if k0 + 1 < k { at_a(i, k0 + 1) } else { zero };
                        packed_a[(s * kc + p) * MR + r] = pair(lo, hi);
                    }
                }
            }
            let mut tile = [[0f32; NR]; MR];
            for q in 0..panels {
                let bq = &packed_b[q * kc * NR..(q + 1) * kc * NR];
                for s in 0..strips {
                    let as_ = &packed_a[s * kc * MR..(s + 1) * kc * MR];
                    // SAFETY: `available()` (the caller's contract) says the host has the
                    // instructions; both panels hold `kc` pairs of their width.
                    unsafe { micro(kc, as_, bq, &mut tile) };
                    let rows = MR.min(mc - s * MR);
                    let cols = NR.min(n - q * NR);
                    for (r, sums) in tile.iter().enumerate().take(rows) {
                        let i = (i0 + s * MR + r) as isize;
                        let j0 = (q * NR) as isize;
                        if o_cs == 1 {
                            // SAFETY: row i < m, columns j0 .. j0 + cols ≤ n, contiguous: inside
                            // the output (caller's contract); row blocks on different threads
                            // write different rows, so no one else holds this row.
                            let row = unsafe {
                                std::slice::from_raw_parts_mut(
                                    out.get().offset(i * o_rs + j0),
                                    cols,
                                )
                            };
                            if first {
                                row.copy_from_slice(&sums[..cols]);
                            } else {
                                row.iter_mut().zip(sums).for_each(|(c, &x)| *c += x);
                            }
                            continue;
                        }
                        for (l, &x) in sums.iter().enumerate().take(cols) {
                            let j = j0 + l as isize;
                            // SAFETY: i < m and j < n: inside the output (caller's contract);
                            // row blocks on different threads write different rows.
                            unsafe {
                                let c = out.get().offset(i * o_rs + j * o_cs);
                                *c = if first { x } else { *c + x };
                            }
                        }
                    }
                }
            }
        };
        let blocks: Vec<usize> = (0..m).step_by(MC).collect();
        if threads && blocks.len() > 1 {
            use rayon::prelude::*;
            blocks.par_iter().for_each(|&i0| row_block(i0));
        } else {
            blocks.iter().for_each(|&i0| row_block(i0));
        }
    }
}

/// The `MR × NR` tile of sums over `kc` pairs: `tile[r][l] = Σ_p a_pair(r, p) · b_pair(p, l)`.
///
/// # Safety
/// The host has AVX-512F and AVX-512 BF16; `a` holds `kc · MR` words and `b` `kc · NR`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn micro(kc: usize, a: &[u32], b: &[u32], tile: &mut [[f32; NR]; MR]) {
    use std::arch::x86_64::*;
    assert!(a.len() >= kc * MR && b.len() >= kc * NR);
    let mut c = [[_mm512_setzero_ps(); 2]; MR];
    for p in 0..kc {
        // SAFETY: p < kc, so the 32 words at p·NR and the 8 at p·MR are inside the slices
        // (asserted above); unaligned loads.
        let (b0, b1, ap) = unsafe {
            let bp = b.as_ptr().add(p * NR);
            (
                _mm512_loadu_si512(bp.cast()),
                _mm512_loadu_si512(bp.add(16).cast()),
                a.as_ptr().add(p * MR),
            )
        };
        let (b0, b1) = (as_bh(b0), as_bh(b1));
        for (r, sums) in c.iter_mut().enumerate() {
            // SAFETY: r < MR, inside the pair row (see above).
            let x = as_bh(_mm512_set1_epi32(unsafe { *ap.add(r) } as i32));
            sums[0] = _mm512_dpbf16_ps(sums[0], x, b0);
            sums[1] = _mm512_dpbf16_ps(sums[1], x, b1);
        }
    }
    for (row, sums) in tile.iter_mut().zip(&c) {
        // SAFETY: each row holds NR = 32 f32, two vectors.
        unsafe {
            _mm512_storeu_ps(row.as_mut_ptr(), sums[0]);
            _mm512_storeu_ps(row.as_mut_ptr().add(16), sums[1]);
        }
    }
}

/// 32 bf16 values, from the 512 bits that hold them.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn as_bh(v: std::arch::x86_64::__m512i) -> std::arch::x86_64::__m512bh {
    // SAFETY: both are 512 bits of plain data with no invalid bit patterns.
    unsafe { std::mem::transmute(v) }
}

/// Never called: [`available`] is false off x86_64.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn micro(_: usize, _: &[u32], _: &[u32], _: &mut [[f32; NR]; MR]) {
    unreachable!("bf16 dot products run only where `available` says so")
}
