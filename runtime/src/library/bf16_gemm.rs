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
//! depends on its own row of `a` alone. Only the tile's real rows and columns reach the output,
//! rounded to bf16 as they leave the tile: a `K` of one block needs no f32 buffer at all (a
//! separate rounding pass over an f32 product wrote and read it whole, 3–8 % of a GPT block's
//! bf16 matmuls), a longer one keeps its f32 sums between blocks and rounds on the last.
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
/// K-pairs per block: a panel of `b` is `KC × NR` words (192 KiB, in an L2, read at 128 bytes
/// per 16 dot products), a strip of `a` `KC × MR` (48 KiB). A GPT block's K of 3072 is one
/// block: a K split in blocks adds a pass over the f32 partial sums per block, and 512 pairs
/// (three blocks there) took 23.8 ms against 21.8 (2048×3072×768, Zen 4, 2 threads); the
/// products of K = 768 moved within noise (16.6–16.8 ms at 2048×768×2304 for 512–1536).
const KC: usize = 1536;
/// Rows of `a` a thread multiplies at a time (and packs, when they are not read in place).
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

/// `out = a·b` for one `m×k` by `k×n` product of bf16 operands, its f32 sums rounded once (and
/// with a `bias` row of `n` values, `out = bf16(bf16(a·b) + bias)`: PyTorch's `a @ b + bias`), with
/// `matmul::gemm_one`'s operand convention (first element, row stride, column stride) and its
/// contract; `parallelism` other than `None` spreads row blocks over rayon's threads.
///
/// # Safety
/// [`available`] is true; every address `first + i·row_stride + j·col_stride` (i below the
/// operand's rows, j below its columns) is inside its operand's allocation; the output's are
/// distinct and no other thread touches them during the call.
pub(crate) unsafe fn gemm(
    (m, n, k): (usize, usize, usize),
    (o, o_rs, o_cs): (*mut bf16, isize, isize),
    (a, a_rs, a_cs): (*const bf16, isize, isize),
    (b, b_rs, b_cs): (*const bf16, isize, isize),
    parallelism: gemm::Parallelism,
    bias: Option<&[f32]>,
) {
    assert!(
        bias.is_none_or(|row| row.len() == n),
        "invariant: a bias row holds one value per column"
    );
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
        // An empty sum: every output element is 0, plus its column's bias (a bf16 value).
        for i in 0..m {
            for j in 0..n {
                let x = bias.map_or(zero, |row| round(row[j]));
                // SAFETY: the caller's contract bounds the output's addresses.
                unsafe { *out.get().offset(i as isize * o_rs + j as isize * o_cs) = x };
            }
        }
        return;
    }
    // The tile goes straight to the output, rounded, when K is one block and the output's
    // rows are contiguous. Otherwise the sums stay in f32, `m×n` row-major, until the last
    // block rounds them into the output (or, for strided output rows, a pass at the end does).
    let direct_out = o_cs == 1;
    let kept = pairs > KC || !direct_out;
    let mut partial_block = Memory::<f32>::for_overwrite(if kept { m * n } else { 0 });
    let partial = super::matmul::Shared(partial_block.as_mut_ptr());
    // `a`'s rows read in place, a pair a word, when they are contiguous and every pair is
    // whole (K even); else packed per row block.
    let direct_a = a_cs == 1 && k.is_multiple_of(2);
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
        let (first, last) = (p0 == 0, p0 + kc == pairs);
        let packed_b = &packed_b[..panels * kc * NR];
        let row_block = |i0: usize| {
            let mc = MC.min(m - i0);
            let strips = mc.div_ceil(MR);
            // Pack these rows of a (unless read in place): strip s, pair p, row r at
            // ((s·kc + p)·MR + r). Every word of a row below m is written below; a strip's rows
            // past m keep what the block held: they only reach tile rows that never leave it.
            let mut packed_a_block = words(if direct_a { 0 } else { strips * kc * MR });
            let packed_a = as_words(&mut packed_a_block);
            for s in (0..strips).filter(|_| !direct_a) {
                for r in 0..MR {
                    let i = i0 + s * MR + r;
                    for p in (0..kc).filter(|_| i < m) {
                        let k0 = 2 * (p0 + p);
                        let lo = at_a(i, k0);
                        let hi = if k0 + 1 < k { at_a(i, k0 + 1) } else { zero };
                        packed_a[(s * kc + p) * MR + r] = pair(lo, hi);
                    }
                }
            }
            for q in 0..panels {
                let j0 = q * NR;
                let bq = &packed_b[q * kc * NR..(q + 1) * kc * NR];
                for s in 0..strips {
                    let (i, rows) = (i0 + s * MR, MR.min(mc - s * MR));
                    let (a_rows, a_step) = if direct_a {
                        // Row i + r's pairs from p0 on, in place (inside a: rows below m,
                        // the caller's contract); rows past m repeat the last real row.
                        let at = |r: usize| {
                            let row = (i + r.min(rows - 1)) as isize;
                            a.get().wrapping_offset(row * a_rs) as *const u32
                        };
                        (std::array::from_fn(|r| at(r).wrapping_add(p0)), 1)
                    } else {
                        let strip = packed_a[s * kc * MR..].as_ptr();
                        (std::array::from_fn(|r| strip.wrapping_add(r)), MR)
                    };
                    let tile = Tile {
                        cols: NR.min(n - j0),
                        rows,
                        out: out.get().wrapping_offset(i as isize * o_rs + j0 as isize),
                        out_rs: o_rs,
                        partial: partial.get().wrapping_add(i * n + j0),
                        partial_rs: n,
                        bias: bias.map(|row| row[j0..].as_ptr()),
                        first,
                        last: last && direct_out,
                    };
                    // SAFETY: `available()` (the caller's contract) says the host has the
                    // instructions; `a_rows` hold `kc` pairs `a_step` words apart (packed, or
                    // row i + r of a from pair p0: p0 + kc ≤ k / 2 pairs, K even), `bq` `kc`
                    // pairs of NR lanes; the tile's real rows (below m) and columns (below n)
                    // are inside the output, and inside `partial` when it is kept, and no
                    // other thread touches them: row blocks on different threads are different
                    // rows.
                    unsafe { micro(kc, &a_rows, a_step, bq, &tile) };
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
    if !direct_out {
        for (i, sums) in partial_block.chunks_exact(n).enumerate() {
            for (j, &x) in sums.iter().enumerate() {
                let x = match bias {
                    Some(row) => round(round(x).to_f32() + row[j]),
                    None => round(x),
                };
                // SAFETY: i < m and j < n: inside the output (the caller's contract).
                unsafe { *out.get().offset(i as isize * o_rs + j as isize * o_cs) = x };
            }
        }
    }
}

/// Where a micro-kernel call's tile goes: its real rows and columns (the rest are never
/// written), and the first element of its first row in the output and in the f32 partial sums,
/// with their row strides.
struct Tile {
    rows: usize,
    cols: usize,
    out: *mut bf16,
    out_rs: isize,
    partial: *mut f32,
    partial_rs: usize,
    /// The bias of the tile's first column, where the rounded product gets one added (and is
    /// rounded again).
    bias: Option<*const f32>,
    /// The first K block: no partial sums yet.
    first: bool,
    /// The last K block, rounding into the output; else the sums go to `partial`.
    last: bool,
}

/// The `MR × NR` tile of sums over `kc` pairs, `Σ_p a_pair(r, p) · b_pair(p, l)`, added to
/// the tile's partial sums (unless `first`) and written out: rounded to bf16 into `out` when
/// `last` (then, with a bias, widened, added to the column's bias and rounded again), else
/// into `partial`.
///
/// # Safety
/// The host has AVX-512F and AVX-512 BF16; each `a[r]` points at `kc` words `a_step` apart
/// and `b` holds `kc · NR` words; for each row r below `tile.rows`, row r of `tile.out` (when
/// `last`) and of `tile.partial` (unless `first && last`) holds `tile.cols ≤ NR` elements that
/// no one else reads or writes during the call, and `tile.bias` points at `tile.cols` values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn micro(kc: usize, a: &[*const u32; MR], a_step: usize, b: &[u32], tile: &Tile) {
    use std::arch::x86_64::*;
    assert!(b.len() >= kc * NR && tile.rows <= MR && tile.cols <= NR);
    let mut c = [[_mm512_setzero_ps(); 2]; MR];
    for p in 0..kc {
        // SAFETY: p < kc, so the 32 words at p·NR are inside `b` (asserted above); unaligned.
        let (b0, b1) = unsafe {
            let bp = b.as_ptr().add(p * NR);
            (
                as_bh(_mm512_loadu_si512(bp.cast())),
                as_bh(_mm512_loadu_si512(bp.add(16).cast())),
            )
        };
        for (r, sums) in c.iter_mut().enumerate() {
            // SAFETY: p < kc: word p of row r (the caller's contract); unaligned read.
            let word = unsafe { a[r].add(p * a_step).read_unaligned() };
            let x = as_bh(_mm512_set1_epi32(word as i32));
            sums[0] = _mm512_dpbf16_ps(sums[0], x, b0);
            sums[1] = _mm512_dpbf16_ps(sums[1], x, b1);
        }
    }
    // Lanes of each half of a row that are real columns.
    let lanes = |from: usize| -> __mmask16 {
        let n = tile.cols.saturating_sub(from).min(16);
        ((1u32 << n) - 1) as __mmask16
    };
    let masks = [lanes(0), lanes(16)];
    for (r, sums) in c.iter().enumerate().take(tile.rows) {
        for (h, (&v, &mask)) in sums.iter().zip(&masks).enumerate() {
            // SAFETY: row r < rows, lanes below cols (masked: the rest are neither read nor
            // written): the caller's contract.
            unsafe {
                let kept = tile.partial.wrapping_add(r * tile.partial_rs + 16 * h);
                let v = if tile.first {
                    v
                } else {
                    _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, kept))
                };
                if tile.last {
                    let mut bits = round16(v);
                    if let Some(bias) = tile.bias {
                        let rounded = _mm512_castsi512_ps(_mm512_slli_epi32::<16>(bits));
                        let b = _mm512_maskz_loadu_ps(mask, bias.add(16 * h));
                        bits = round16(_mm512_add_ps(rounded, b));
                    }
                    let to = tile.out.offset(r as isize * tile.out_rs + 16 * h as isize);
                    _mm512_mask_cvtepi32_storeu_epi16(to.cast(), mask, bits);
                } else {
                    _mm512_mask_storeu_ps(kept, mask, v);
                }
            }
        }
    }
}

/// [`round`] on 16 lanes: each f32 rounded to the nearest bf16 (ties to even, a NaN quiet), its
/// bits in the low half of the lane. Not `vcvtneps2bf16`, which flushes subnormals.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn round16(x: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512i {
    use std::arch::x86_64::*;
    let bits = _mm512_castps_si512(x);
    let top = _mm512_srli_epi32::<16>(bits);
    let lsb = _mm512_and_si512(top, _mm512_set1_epi32(1));
    let up = _mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7fff)), lsb);
    let rounded = _mm512_srli_epi32::<16>(up);
    let quiet = _mm512_or_si512(top, _mm512_set1_epi32(0x40));
    let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x);
    _mm512_mask_blend_epi32(nan, rounded, quiet)
}

/// `x` rounded to the nearest bf16, ties to even (a NaN quiet): `bf16::from_f32`'s result.
#[inline(always)]
fn round(x: f32) -> bf16 {
    let bits = x.to_bits();
    let top = if bits & 0x7fff_ffff > 0x7f80_0000 {
        bits >> 16 | 0x40
    } else {
        // No carry out of 32 bits: the largest non-NaN pattern is -inf, 0xff80_0000.
        (bits + 0x7fff + (bits >> 16 & 1)) >> 16
    };
    bf16::from_bits(top as u16)
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
unsafe fn micro(_: usize, _: &[*const u32; MR], _: usize, _: &[u32], _: &Tile) {
    unreachable!("bf16 dot products run only where `available` says so")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both roundings against `half`'s `bf16::from_f32`, bit for bit: ties either way, values
    /// one bit off a tie, subnormals, the largest finite values (which round to infinity),
    /// infinities and NaNs (quiet and signalling, either sign).
    #[test]
    fn rounding_matches_half_bit_for_bit() {
        let mut patterns: Vec<u32> = vec![0x7f7f_ffff, 0x7f80_0000, 0x7fa0_0001, 0x7fc0_1234];
        for top in [
            0x0000u32, 0x0001, 0x3f80, 0x3f81, 0x4049, 0x7f7f, 0x7f80, 0x7fbf,
        ] {
            for low in [0x0000u32, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff] {
                patterns.push(top << 16 | low);
            }
        }
        let patterns: Vec<u32> = patterns
            .iter()
            .flat_map(|&p| [p, p | 0x8000_0000])
            .collect();
        for &p in &patterns {
            let x = f32::from_bits(p);
            assert_eq!(round(x).to_bits(), bf16::from_f32(x).to_bits(), "{p:#010x}");
        }
        #[cfg(target_arch = "x86_64")]
        if available() {
            use std::arch::x86_64::*;
            for chunk in patterns.chunks(16) {
                let mut lanes = [0f32; 16];
                for (l, &p) in lanes.iter_mut().zip(chunk) {
                    *l = f32::from_bits(p);
                }
                let mut got = [0u32; 16];
                // SAFETY: `available()`: the host has AVX-512F; both arrays hold 16 lanes.
                unsafe {
                    let v = round16(_mm512_loadu_ps(lanes.as_ptr()));
                    _mm512_storeu_si512(got.as_mut_ptr().cast(), v);
                }
                for (&x, &g) in lanes.iter().zip(&got) {
                    let want = half::bf16::from_f32(x).to_bits();
                    assert_eq!(g, u32::from(want), "{:#010x}", x.to_bits());
                }
            }
        }
    }
}
