//! Property tests for the `View` algebra (SEMANTICS.md §1–3).
//!
//! * Every view a random chain of view ops derives from `View::contiguous` addresses only its
//!   storage, and `fits_in` / `address_range` agree with the addresses actually produced.
//! * Each op addresses exactly the elements PyTorch says it does: the element at a result index
//!   is the source element at the index the op's rule maps it to ("element identity" is the
//!   storage address). `view` / `unflatten` keep the row-major address sequence.
//! * `view_strides` (computeStride) is exact: it finds strides whenever any strided layout can
//!   produce the requested row-major address sequence, and for contiguous bases they are the
//!   contiguous strides of the new shape.
//! * The layout flags agree with brute force; `preserve_format_strides` and
//!   `elementwise_out_strides` give dense layouts.
//! * Bad dims, indices and other arguments give `Err`, never a panic; `view` and `as_strided`
//!   succeed exactly when SEMANTICS.md's rules say (worked out here, by brute force for the
//!   strides), and otherwise fail with the error kind the rules name.
//! * Views may have negative strides (as `flip` makes them, for the kernels that read a
//!   flipped tensor): arbitrary views draw them, chains flip dims, and every property above
//!   holds for them too.
//!
//! The generators draw every op argument from a shrinkable list of `u32` choices, so a failing
//! case shrinks towards short chains of simple ops.

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use smelt_ir::view::{contiguous_strides, elementwise_out_strides, view_strides};
use smelt_ir::{ErrorKind, MemoryFormat, Result as IrResult, View};

type Check<T> = Result<T, TestCaseError>;

/// Whether inputs that once hit view.rs bugs (the `known_bug_*` regression tests at the end of
/// this file) are kept out of the random properties; they are fixed, so nothing is skipped.
const SKIP_KNOWN_BUGS: bool = false;

/// Chains stop growing views past this many elements (expand is the only op that can grow them
/// fast, and it skips targets beyond it).
const MAX_NUMEL: usize = 2048;

fn config() -> ProptestConfig {
    let default = ProptestConfig::default();
    ProptestConfig {
        // 1000 cases (a fraction of a second) unless PROPTEST_CASES asks for a longer soak.
        cases: if std::env::var_os("PROPTEST_CASES").is_some() {
            default.cases
        } else {
            1000
        },
        // Keep failures out of the source tree: no `proptest-regressions` files.
        failure_persistence: None,
        ..default
    }
}

// ---- random choices ---------------------------------------------------------------------------

/// Deterministic source of op arguments: a proptest-generated list read front to back (zeros
/// once it runs out).
#[derive(Debug)]
struct Choices<'a> {
    vals: &'a [u32],
    pos: usize,
}

impl<'a> Choices<'a> {
    fn new(vals: &'a [u32]) -> Self {
        Choices { vals, pos: 0 }
    }

    fn draw(&mut self) -> u32 {
        let v = self.vals.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        v
    }

    /// Uniform-ish in `0..n` (0 when `n == 0`).
    fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { self.draw() as usize % n }
    }

    fn coin(&mut self) -> bool {
        self.draw() % 2 == 1
    }

    /// In `lo..=hi`.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as usize) as i64
    }

    /// Dim `d` of a rank-`n` wrap range, sometimes in its negative spelling.
    fn dim_arg(&mut self, d: usize, n: usize) -> i64 {
        if self.coin() {
            d as i64 - n as i64
        } else {
            d as i64
        }
    }

    /// A random permutation of `0..n`.
    fn perm(&mut self, n: usize) -> Vec<usize> {
        let mut p: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = self.below(i + 1);
            p.swap(i, j);
        }
        p
    }
}

/// Rank 0–4, sizes 0–5 (mostly non-zero, so that most chains have elements to check).
fn shape_s() -> impl Strategy<Value = Vec<usize>> {
    vec(prop_oneof![1 => Just(0usize), 9 => 1usize..=5], 0..=4)
}

fn choices_s() -> impl Strategy<Value = Vec<u32>> {
    vec(any::<u32>(), 0..=96)
}

// ---- brute-force reference helpers ------------------------------------------------------------

/// All multi-indices of `shape` in row-major order (`[[]]` for 0-d, none when numel is 0).
fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    if shape.contains(&0) {
        return out;
    }
    let mut idx = vec![0usize; shape.len()];
    loop {
        out.push(idx.clone());
        let mut d = shape.len();
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// Storage addresses of a view in row-major order of its indices.
fn addrs(v: &View) -> Vec<isize> {
    indices(&v.shape).iter().map(|i| v.address(i)).collect()
}

fn insert_at(idx: &[usize], d: usize, value: usize) -> Vec<usize> {
    let mut s = idx.to_vec();
    s.insert(d, value);
    s
}

/// §1.3 wrapping with the 0-d allowance: `Some(d)` in `0..max(n, 1)` or `None`.
fn wrap(dim: i64, n: usize) -> Option<usize> {
    let m = n.max(1) as i64;
    (-m <= dim && dim < m).then(|| {
        if dim < 0 {
            (dim + m) as usize
        } else {
            dim as usize
        }
    })
}

/// Python/PyTorch slice bounds (§2.1) for a positive step, written the Python way: each bound
/// wraps once and is clamped into `[0, len]`, and the end never precedes the start.
fn py_slice(len: i64, start: Option<i64>, end: Option<i64>) -> (i64, i64) {
    let clamp = |x: i64| {
        if x < 0 {
            x.saturating_add(len).max(0)
        } else {
            x.min(len)
        }
    };
    let s = start.map_or(0, clamp);
    let e = end.map_or(len, clamp);
    (s, e.max(s))
}

fn prime_factors(mut n: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut p = 2;
    while n > 1 {
        if n.is_multiple_of(p) {
            out.push(p);
            n /= p;
        } else {
            p += 1;
        }
    }
    out
}

/// A random shape of rank 0–4 with exactly `numel` elements.
fn shape_with_numel(numel: usize, ch: &mut Choices) -> Vec<usize> {
    let rank = ch.below(5);
    if numel == 0 {
        let mut s: Vec<usize> = (0..rank.max(1)).map(|_| ch.below(4)).collect();
        let z = ch.below(s.len());
        s[z] = 0;
        return s;
    }
    if rank == 0 && numel == 1 {
        return vec![];
    }
    let mut s = vec![1usize; rank.max(1)];
    for p in prime_factors(numel) {
        let i = ch.below(s.len());
        s[i] *= p;
    }
    s
}

/// The shape as `view` arguments, sometimes with one size spelled `-1` (only where it can be
/// inferred unambiguously).
fn shape_args(shape: &[usize], ch: &mut Choices) -> Vec<i64> {
    let mut args: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
    if !shape.is_empty() && !shape.contains(&0) && ch.coin() {
        let i = ch.below(args.len());
        args[i] = -1;
    }
    args
}

/// Strides that make a view of `new_shape` produce exactly the row-major address sequence of
/// `src`, found by brute force (`None` when no strided layout does). Only for numel > 0.
fn brute_view_strides(src: &View, new_shape: &[usize]) -> Option<Vec<isize>> {
    let a = addrs(src);
    let pos = contiguous_strides(new_shape);
    let strides: Vec<isize> = new_shape
        .iter()
        .zip(&pos)
        .map(|(&n, &p)| if n >= 2 { a[p as usize] - a[0] } else { 0 })
        .collect();
    let v = View::new(new_shape.to_vec(), strides.clone(), src.offset);
    (addrs(&v) == a).then_some(strides)
}

/// `is_contiguous` by definition: element k (row-major) lives at `offset + k`.
fn brute_contiguous(v: &View) -> bool {
    addrs(v)
        .iter()
        .enumerate()
        .all(|(k, &a)| a == v.offset as isize + k as isize)
}

/// NOD by definition: the elements fill a block of consecutive addresses, each exactly once,
/// and every dim of two or more elements walks forward. (PyTorch's strides are never negative;
/// a flipped layout fills a block too, but it is no layout a new tensor may take, and NOD
/// strides are copied verbatim into new tensors by `empty_like` and elementwise outputs.)
fn brute_nod(v: &View) -> bool {
    if v.numel() > 0
        && v.shape
            .iter()
            .zip(&v.strides)
            .any(|(&n, &s)| n >= 2 && s < 0)
    {
        return false;
    }
    let mut a = addrs(v);
    a.sort_unstable();
    a.iter().enumerate().all(|(k, &x)| x == a[0] + k as isize)
}

fn ok<T>(what: &str, r: IrResult<T>) -> Check<T> {
    r.map_err(|e| TestCaseError::fail(format!("{what}: unexpected error {e:?}")))
}

// ---- checks -----------------------------------------------------------------------------------

/// `res[idx]` is `src[map(idx)]` for every index of `res`, and `map(idx)` is a valid index.
fn check_map(
    what: &str,
    src: &View,
    res: &View,
    map: impl Fn(&[usize]) -> Vec<usize>,
) -> Check<()> {
    prop_assert_eq!(
        res.shape.len(),
        res.strides.len(),
        "{}: rank of shape and strides differ: {}",
        what,
        res
    );
    for idx in indices(&res.shape) {
        let s = map(&idx);
        prop_assert!(
            s.len() == src.ndim() && s.iter().zip(&src.shape).all(|(&i, &n)| i < n),
            "{what}: result index {idx:?} maps to {s:?}, outside the source {src}"
        );
        prop_assert_eq!(
            res.address(&idx),
            src.address(&s),
            "{}: result {} at {:?} vs source {} at {:?}",
            what,
            res,
            idx,
            src,
            s
        );
    }
    Ok(())
}

/// Property 1: every address lies in `[0, len)`, `fits_in(len)` holds and `address_range` is
/// the true min/max.
fn check_in_storage(v: &View, len: usize, log: &[String]) -> Check<()> {
    let a = addrs(v);
    for &x in &a {
        prop_assert!(
            x >= 0 && (x as usize) < len,
            "{v} addresses {x}, outside storage of {len}; chain {log:?}"
        );
    }
    prop_assert!(
        v.fits_in(len),
        "{v}: fits_in({len}) is false; chain {log:?}"
    );
    let range = a.iter().min().copied().zip(a.iter().max().copied());
    prop_assert_eq!(
        v.address_range(),
        range,
        "{}: address_range; chain {:?}",
        v,
        log
    );
    if let Some((_, hi)) = range {
        // The bound is tight: one element less of storage does not fit.
        prop_assert!(
            !v.fits_in(hi as usize),
            "{v}: fits_in({hi}) is true; chain {log:?}"
        );
    }
    Ok(())
}

/// A narrow/slice piece of `src` along `d`: shape and addresses of `src[.., start + i, ..]`.
fn check_piece(
    what: &str,
    src: &View,
    d: usize,
    piece: &View,
    start: usize,
    len: usize,
) -> Check<()> {
    let mut shape = src.shape.clone();
    shape[d] = len;
    prop_assert_eq!(&piece.shape, &shape, "{}: piece shape", what);
    check_map(what, src, piece, |idx| {
        let mut s = idx.to_vec();
        s[d] += start;
        s
    })
}

/// Consecutive pieces along `d` of the given lengths; continues the chain with one of them.
fn check_pieces(
    what: &str,
    src: &View,
    d: usize,
    pieces: &[View],
    lens: &[usize],
    ch: &mut Choices,
) -> Check<Option<View>> {
    prop_assert_eq!(
        pieces.len(),
        lens.len(),
        "{}: number of pieces {:?}",
        what,
        pieces
    );
    let mut start = 0;
    for (p, &len) in pieces.iter().zip(lens) {
        check_piece(what, src, d, p, start, len)?;
        start += len;
    }
    prop_assert_eq!(start, src.shape[d], "{}: pieces do not cover the dim", what);
    Ok(pieces.get(ch.below(pieces.len())).cloned())
}

/// Lengths of `split(k)` on a dim of `size` (§2.5).
fn split_lens(size: usize, k: usize) -> Vec<usize> {
    if k == 0 {
        return vec![size];
    }
    let pieces = size.div_ceil(k).max(1);
    (0..pieces)
        .map(|i| {
            if i + 1 == pieces {
                size - k * (pieces - 1)
            } else {
                k
            }
        })
        .collect()
}

// ---- one random view op, checked against its PyTorch rule ------------------------------------

type Step = Check<Option<View>>;

fn op_select(v: &View, ch: &mut Choices) -> Step {
    let n = v.ndim();
    if n == 0 {
        return Ok(None);
    }
    let d = ch.below(n);
    let size = v.shape[d];
    if size == 0 {
        return Ok(None);
    }
    let i = ch.below(size);
    let da = ch.dim_arg(d, n);
    let ia = if ch.coin() {
        i as i64 - size as i64
    } else {
        i as i64
    };
    let what = format!("select({da}, {ia}) of {v}");
    let r = ok(&what, v.select(da, ia))?;
    let mut shape = v.shape.clone();
    shape.remove(d);
    prop_assert_eq!(&r.shape, &shape, "{}", what);
    check_map(&what, v, &r, |idx| insert_at(idx, d, i))?;
    Ok(Some(r))
}

fn slice_bound(ch: &mut Choices, len: i64) -> Option<i64> {
    if ch.below(3) == 0 {
        None
    } else {
        Some(ch.range(-len - 1, len + 1))
    }
}

fn op_slice(v: &View, ch: &mut Choices) -> Step {
    let n = v.ndim();
    if n == 0 {
        return Ok(None);
    }
    let d = ch.below(n);
    let da = ch.dim_arg(d, n);
    let len = v.shape[d] as i64;
    let (start, end) = (slice_bound(ch, len), slice_bound(ch, len));
    let step = ch.range(1, 4);
    let what = format!("slice({da}, {start:?}, {end:?}, {step}) of {v}");
    let r = ok(&what, v.slice(da, start, end, step))?;
    let (s, e) = py_slice(len, start, end);
    let picked: Vec<usize> = (s..e).step_by(step as usize).map(|x| x as usize).collect();
    let mut shape = v.shape.clone();
    shape[d] = picked.len();
    prop_assert_eq!(&r.shape, &shape, "{}", what);
    // §2.1: the offset moves by start·stride even when the result is empty.
    prop_assert_eq!(
        r.offset as isize,
        v.offset as isize + s as isize * v.strides[d],
        "{}: offset",
        what
    );
    check_map(&what, v, &r, |idx| {
        let mut src = idx.to_vec();
        src[d] = picked[idx[d]];
        src
    })?;
    Ok(Some(r))
}

fn op_narrow(v: &View, ch: &mut Choices) -> Step {
    let n = v.ndim();
    if n == 0 {
        return Ok(None);
    }
    let d = ch.below(n);
    let da = ch.dim_arg(d, n);
    let size = v.shape[d];
    let start = ch.below(size + 1);
    let length = ch.below(size - start + 1);
    let sa = if start < size && ch.coin() {
        start as i64 - size as i64
    } else {
        start as i64
    };
    let what = format!("narrow({da}, {sa}, {length}) of {v}");
    let r = ok(&what, v.narrow(da, sa, length as i64))?;
    check_piece(&what, v, d, &r, start, length)?;
    Ok(Some(r))
}

fn op_permute(v: &View, ch: &mut Choices) -> Step {
    let n = v.ndim();
    let p = ch.perm(n);
    let args: Vec<i64> = p.iter().map(|&d| ch.dim_arg(d, n)).collect();
    let what = format!("permute({args:?}) of {v}");
    let r = ok(&what, v.permute(&args))?;
    let shape: Vec<usize> = p.iter().map(|&d| v.shape[d]).collect();
    prop_assert_eq!(&r.shape, &shape, "{}", what);
    check_map(&what, v, &r, |idx| {
        let mut src = vec![0; n];
        for (i, &d) in p.iter().enumerate() {
            src[d] = idx[i];
        }
        src
    })?;
    Ok(Some(r))
}

/// Checks `r` is `v` with dims `a` and `b` swapped.
fn check_swapped(what: &str, v: &View, r: &View, a: usize, b: usize) -> Check<()> {
    let mut shape = v.shape.clone();
    shape.swap(a, b);
    prop_assert_eq!(&r.shape, &shape, "{}", what);
    check_map(what, v, r, |idx| {
        let mut src = idx.to_vec();
        src.swap(a, b);
        src
    })
}

fn op_transpose(v: &View, ch: &mut Choices) -> Step {
    let n = v.ndim();
    let m = n.max(1);
    let (a, b) = (ch.below(m), ch.below(m));
    let (aa, ba) = (ch.dim_arg(a, m), ch.dim_arg(b, m));
    let what = format!("transpose({aa}, {ba}) of {v}");
    let r = ok(&what, v.transpose(aa, ba))?;
    if n == 0 {
        prop_assert_eq!(&r, v, "{}", what);
    } else {
        check_swapped(&what, v, &r, a, b)?;
    }
    Ok(Some(r))
}

fn op_t_or_mt(v: &View, ch: &mut Choices) -> Step {
    let n = v.ndim();
    if ch.coin() {
        let what = format!("t() of {v}");
        let r = v.t();
        if n > 2 {
            prop_assert!(r.is_err(), "{what}: expected an error");
            return Ok(None);
        }
        let r = ok(&what, r)?;
        if n < 2 {
            prop_assert_eq!(&r, v, "{}", what);
        } else {
            check_swapped(&what, v, &r, 0, 1)?;
        }
        Ok(Some(r))
    } else {
        let what = format!("mT of {v}");
        let r = v.mt();
        if n == 1 {
            prop_assert!(r.is_err(), "{what}: expected an error");
            return Ok(None);
        }
        let r = ok(&what, r)?;
        if n == 0 {
            prop_assert_eq!(&r, v, "{}", what);
        } else {
            check_swapped(&what, v, &r, n - 2, n - 1)?;
        }
        Ok(Some(r))
    }
}

fn op_unsqueeze(v: &View, ch: &mut Choices) -> Step {
    let n = v.ndim();
    let d = ch.below(n + 1);
    let da = ch.dim_arg(d, n + 1);
    let what = format!("unsqueeze({da}) of {v}");
    let r = ok(&what, v.unsqueeze(da))?;
    prop_assert_eq!(&r.shape, &insert_at(&v.shape, d, 1), "{}", what);
    let stride = if d < n {
        v.shape[d] as isize * v.strides[d]
    } else {
        1
    };
    prop_assert_eq!(r.strides[d], stride, "{}: stride of the new dim (§2)", what);
    check_map(&what, v, &r, |idx| {
        let mut src = idx.to_vec();
        src.remove(d);
        src
    })?;
    Ok(Some(r))
}

fn op_squeeze(v: &View, ch: &mut Choices) -> Step {
    let n = v.ndim();
    let (listed, args): (Vec<usize>, Option<Vec<i64>>) = if ch.coin() {
        ((0..n).collect(), None)
    } else {
        let m = n.max(1);
        let listed: Vec<usize> = ch.perm(m).into_iter().filter(|_| ch.coin()).collect();
        let args = listed.iter().map(|&d| ch.dim_arg(d, m)).collect();
        (listed, Some(args))
    };
    let what = format!("squeeze({args:?}) of {v}");
    let r = ok(&what, v.squeeze(args.as_deref()))?;
    let keep: Vec<bool> = (0..n)
        .map(|d| !(listed.contains(&d) && v.shape[d] == 1))
        .collect();
    let shape: Vec<usize> = (0..n).filter(|&d| keep[d]).map(|d| v.shape[d]).collect();
    prop_assert_eq!(&r.shape, &shape, "{}", what);
    check_map(&what, v, &r, |idx| {
        let mut it = idx.iter();
        keep.iter()
            .map(|&k| {
                if k {
                    *it.next().unwrap_or(&usize::MAX)
                } else {
                    0
                }
            })
            .collect()
    })?;
    Ok(Some(r))
}

fn op_expand(v: &View, ch: &mut Choices) -> Step {
    let n = v.ndim();
    let lead = ch.below(3);
    let mut sizes: Vec<i64> = (0..lead).map(|_| ch.range(0, 3)).collect();
    let mut shape: Vec<usize> = sizes.iter().map(|&s| s as usize).collect();
    for &s in &v.shape {
        let t = if s == 1 {
            [-1, 0, 1, 2, 3][ch.below(5)]
        } else if ch.coin() {
            -1
        } else {
            s as i64
        };
        sizes.push(t);
        shape.push(if t == -1 { s } else { t as usize });
    }
    if shape.iter().product::<usize>() > MAX_NUMEL {
        return Ok(None);
    }
    let what = format!("expand({sizes:?}) of {v}");
    let r = ok(&what, v.expand(&sizes))?;
    prop_assert_eq!(&r.shape, &shape, "{}", what);
    for (i, &t) in sizes.iter().enumerate() {
        // §2.2: broadcast dims and new leading dims get stride 0, except that a new leading
        // dim of size 1 gets `S'[i+1]·T'[i+1]` (1 when last); a 0-d input gets 0 everywhere.
        let want = if n == 0 {
            Some(0)
        } else if i < lead && t == 1 {
            Some(r.shape[i + 1] as isize * r.strides[i + 1])
        } else if i < lead || (v.shape[i - lead] == 1 && t != 1 && t != -1) {
            Some(0)
        } else {
            None
        };
        if let Some(want) = want {
            prop_assert_eq!(r.strides[i], want, "{}: stride of dim {}", what, i);
        }
    }
    check_map(&what, v, &r, |idx| {
        (0..n)
            .map(|d| if v.shape[d] == 1 { 0 } else { idx[lead + d] })
            .collect()
    })?;
    Ok(Some(r))
}

fn op_diagonal(v: &View, ch: &mut Choices) -> Step {
    let n = v.ndim();
    if n < 2 {
        return Ok(None);
    }
    let d1 = ch.below(n);
    let mut d2 = ch.below(n - 1);
    if d2 >= d1 {
        d2 += 1;
    }
    let off = ch.range(-3, 3);
    let (a1, a2) = (ch.dim_arg(d1, n), ch.dim_arg(d2, n));
    let what = format!("diagonal({off}, {a1}, {a2}) of {v}");
    let r = ok(&what, v.diagonal(off, a1, a2))?;
    // Element k of the diagonal is (k + shift1, k + shift2) in (d1, d2).
    let (shift1, shift2) = ((-off).max(0) as usize, off.max(0) as usize);
    let len = v.shape[d1]
        .saturating_sub(shift1)
        .min(v.shape[d2].saturating_sub(shift2));
    let rest: Vec<usize> = (0..n).filter(|&d| d != d1 && d != d2).collect();
    let mut shape: Vec<usize> = rest.iter().map(|&d| v.shape[d]).collect();
    shape.push(len);
    prop_assert_eq!(&r.shape, &shape, "{}", what);
    if len == 0 {
        prop_assert_eq!(
            r.offset,
            v.offset,
            "{}: an empty diagonal keeps the offset (§2.3)",
            what
        );
    }
    check_map(&what, v, &r, |idx| {
        let mut src = vec![0; n];
        for (i, &d) in rest.iter().enumerate() {
            src[d] = idx[i];
        }
        let k = idx[n - 2];
        src[d1] = k + shift1;
        src[d2] = k + shift2;
        src
    })?;
    Ok(Some(r))
}

fn op_unfold(v: &View, ch: &mut Choices) -> Step {
    let n = v.ndim();
    let m = n.max(1);
    let d = ch.below(m);
    let da = ch.dim_arg(d, m);
    let dim_size = if n == 0 { 1 } else { v.shape[d] };
    let size = ch.below(dim_size + 1);
    let step = ch.range(1, 3) as usize;
    let what = format!("unfold({da}, {size}, {step}) of {v}");
    let r = ok(&what, v.unfold(da, size as i64, step as i64))?;
    let mut shape = v.shape.clone();
    if n > 0 {
        shape[d] = (dim_size - size) / step + 1;
    }
    shape.push(size);
    prop_assert_eq!(&r.shape, &shape, "{}", what);
    check_map(&what, v, &r, |idx| {
        let mut src = idx[..n].to_vec();
        if n > 0 {
            src[d] = idx[d] * step + idx[n];
        }
        src
    })?;
    Ok(Some(r))
}

fn op_view(v: &View, ch: &mut Choices) -> Step {
    let numel = v.numel();
    let new = shape_with_numel(numel, ch);
    let args = shape_args(&new, ch);
    let what = format!("view({args:?}) of {v}");
    let r = v.view(&args);
    if numel == 0 {
        // §3.1 step 2: same shape keeps the strides, anything else gets contiguous strides.
        let r = ok(&what, r)?;
        prop_assert_eq!(&r.shape, &new, "{}", what);
        let strides = if new == v.shape {
            v.strides.clone()
        } else {
            contiguous_strides(&new)
        };
        prop_assert_eq!(&r.strides, &strides, "{}", what);
        return Ok(Some(r));
    }
    let brute = brute_view_strides(v, &new);
    match r {
        Ok(r) => {
            prop_assert_eq!(&r.shape, &new, "{}", what);
            prop_assert_eq!(r.offset, v.offset, "{}: offset", what);
            prop_assert_eq!(
                addrs(&r),
                addrs(v),
                "{}: row-major addresses differ, result {}",
                what,
                r
            );
            Ok(Some(r))
        }
        Err(e) => {
            prop_assert_eq!(e.kind, ErrorKind::Stride, "{}: {:?}", what, e);
            prop_assert!(
                !v.is_contiguous(),
                "{what}: a contiguous view must always be viewable"
            );
            prop_assert!(
                brute.is_none(),
                "{what}: refused, but strides {brute:?} produce the same addresses"
            );
            Ok(None)
        }
    }
}

fn op_unflatten(v: &View, ch: &mut Choices) -> Step {
    let n = v.ndim();
    if n == 0 {
        return Ok(None);
    }
    let d = ch.below(n);
    let da = ch.dim_arg(d, n);
    let mut inner = shape_with_numel(v.shape[d], ch);
    if inner.is_empty() {
        inner.push(1);
    }
    let args = shape_args(&inner, ch);
    let what = format!("unflatten({da}, {args:?}) of {v}");
    // §3.1: splitting one dim is always viewable.
    let r = ok(&what, v.unflatten(da, &args))?;
    let mut shape = v.shape.to_vec();
    shape.splice(d..=d, inner);
    prop_assert_eq!(&r.shape, &shape, "{}", what);
    prop_assert_eq!(
        addrs(&r),
        addrs(v),
        "{}: row-major addresses differ, result {}",
        what,
        r
    );
    Ok(Some(r))
}

fn op_split(v: &View, ch: &mut Choices) -> Step {
    let n = v.ndim();
    if n == 0 {
        return Ok(None);
    }
    let d = ch.below(n);
    let da = ch.dim_arg(d, n);
    let size = v.shape[d];
    let k = if size == 0 {
        ch.below(3)
    } else {
        1 + ch.below(size + 1)
    };
    let what = format!("split({k}, {da}) of {v}");
    let pieces = ok(&what, v.split(k as i64, da))?;
    check_pieces(&what, v, d, &pieces, &split_lens(size, k), ch)
}

fn op_chunk(v: &View, ch: &mut Choices) -> Step {
    let n = v.ndim();
    if n == 0 {
        return Ok(None);
    }
    let d = ch.below(n);
    let da = ch.dim_arg(d, n);
    let size = v.shape[d];
    let chunks = 1 + ch.below(6);
    let what = format!("chunk({chunks}, {da}) of {v}");
    let pieces = ok(&what, v.chunk(chunks as i64, da))?;
    let lens = if size == 0 {
        vec![0; chunks]
    } else {
        split_lens(size, size.div_ceil(chunks))
    };
    check_pieces(&what, v, d, &pieces, &lens, ch)
}

fn op_split_with_sizes(v: &View, ch: &mut Choices) -> Step {
    let n = v.ndim();
    if n == 0 {
        return Ok(None);
    }
    let d = ch.below(n);
    let da = ch.dim_arg(d, n);
    let size = v.shape[d];
    let mut cuts: Vec<usize> = (0..ch.below(4)).map(|_| ch.below(size + 1)).collect();
    cuts.push(0);
    cuts.push(size);
    cuts.sort_unstable();
    let lens: Vec<usize> = cuts.windows(2).map(|w| w[1] - w[0]).collect();
    let args: Vec<i64> = lens.iter().map(|&l| l as i64).collect();
    let what = format!("split_with_sizes({args:?}, {da}) of {v}");
    let pieces = ok(&what, v.split_with_sizes(&args, da))?;
    check_pieces(&what, v, d, &pieces, &lens, ch)
}

fn op_tensor_split_sections(v: &View, ch: &mut Choices) -> Step {
    let n = v.ndim();
    if n == 0 {
        return Ok(None);
    }
    let d = ch.below(n);
    let da = ch.dim_arg(d, n);
    let size = v.shape[d];
    let sections = 1 + ch.below(5);
    let what = format!("tensor_split({sections}, {da}) of {v}");
    let pieces = ok(&what, v.tensor_split_sections(sections as i64, da))?;
    let lens: Vec<usize> = (0..sections)
        .map(|i| size / sections + usize::from(i < size % sections))
        .collect();
    check_pieces(&what, v, d, &pieces, &lens, ch)
}

fn op_tensor_split_indices(v: &View, ch: &mut Choices) -> Step {
    let n = v.ndim();
    if n == 0 {
        return Ok(None);
    }
    let d = ch.below(n);
    let da = ch.dim_arg(d, n);
    let size = v.shape[d] as i64;
    let idx: Vec<i64> = (0..ch.below(4))
        .map(|_| ch.range(-size - 2, size + 2))
        .collect();
    let what = format!("tensor_split({idx:?}, {da}) of {v}");
    let pieces = ok(&what, v.tensor_split_indices(&idx, da))?;
    prop_assert_eq!(pieces.len(), idx.len() + 1, "{}", what);
    let mut prev = 0;
    for (i, p) in pieces.iter().enumerate() {
        let end = idx.get(i).copied();
        let (s, e) = py_slice(size, Some(prev), end);
        check_piece(&what, v, d, p, s as usize, (e - s) as usize)?;
        prev = end.unwrap_or(0);
    }
    Ok(pieces.get(ch.below(pieces.len())).cloned())
}

fn op_unbind(v: &View, ch: &mut Choices) -> Step {
    let n = v.ndim();
    if n == 0 {
        return Ok(None);
    }
    let d = ch.below(n);
    let da = ch.dim_arg(d, n);
    let what = format!("unbind({da}) of {v}");
    let pieces = ok(&what, v.unbind(da))?;
    prop_assert_eq!(pieces.len(), v.shape[d], "{}", what);
    let mut shape = v.shape.clone();
    shape.remove(d);
    for (i, p) in pieces.iter().enumerate() {
        prop_assert_eq!(&p.shape, &shape, "{}", what);
        check_map(&what, v, p, |idx| insert_at(idx, d, i))?;
    }
    Ok(pieces.get(ch.below(pieces.len())).cloned())
}

fn op_movedim(v: &View, ch: &mut Choices) -> Step {
    let n = v.ndim();
    let k = ch.below(n + 1);
    let src: Vec<usize> = ch.perm(n)[..k].to_vec();
    let dst: Vec<usize> = ch.perm(n)[..k].to_vec();
    let sa: Vec<i64> = src.iter().map(|&d| ch.dim_arg(d, n)).collect();
    let dsta: Vec<i64> = dst.iter().map(|&d| ch.dim_arg(d, n)).collect();
    let what = format!("movedim({sa:?}, {dsta:?}) of {v}");
    let r = ok(&what, v.movedim(&sa, &dsta))?;
    // Destination slots get the source dims; the other dims fill the other slots in order.
    let mut perm: Vec<Option<usize>> = vec![None; n];
    for (&s, &t) in src.iter().zip(&dst) {
        perm[t] = Some(s);
    }
    let mut rest = (0..n).filter(|d| !src.contains(d));
    let perm: Vec<usize> = perm
        .into_iter()
        .map(|p| p.or_else(|| rest.next()).unwrap_or(usize::MAX))
        .collect();
    let shape: Vec<usize> = perm.iter().map(|&d| v.shape[d]).collect();
    prop_assert_eq!(&r.shape, &shape, "{}", what);
    check_map(&what, v, &r, |idx| {
        let mut s = vec![0; n];
        for (i, &d) in perm.iter().enumerate() {
            s[d] = idx[i];
        }
        s
    })?;
    Ok(Some(r))
}

/// `flip(dims)` as the frontend makes it (`shape_ops.rs`: the offset moves to the last element
/// of each flipped dim, whose stride changes sign): not a `View` op, but the way negative
/// strides enter the view algebra (a copy of a flipped tensor composes its view with its
/// readers'), so that the ops after it see them.
fn op_flip(v: &View, ch: &mut Choices) -> Step {
    let n = v.ndim();
    if n == 0 {
        return Ok(None);
    }
    let d = ch.below(n);
    let mut r = v.clone();
    if v.shape[d] > 0 {
        r.offset = (v.offset as isize + (v.shape[d] as isize - 1) * v.strides[d]) as usize;
        r.strides[d] = -v.strides[d];
    }
    let what = format!("flip([{d}]) of {v}");
    check_map(&what, v, &r, |idx| {
        let mut src = idx.to_vec();
        src[d] = v.shape[d] - 1 - idx[d];
        src
    })?;
    Ok(Some(r))
}

fn random_op(v: &View, ch: &mut Choices) -> Step {
    match ch.below(21) {
        20 => op_flip(v, ch),
        0 => op_select(v, ch),
        1 => op_slice(v, ch),
        2 => op_narrow(v, ch),
        3 => op_permute(v, ch),
        4 => op_transpose(v, ch),
        5 => op_unsqueeze(v, ch),
        6 => op_squeeze(v, ch),
        7 => op_expand(v, ch),
        8 => op_diagonal(v, ch),
        9 => op_unfold(v, ch),
        10 => op_view(v, ch),
        11 => op_unflatten(v, ch),
        12 => op_split(v, ch),
        13 => op_chunk(v, ch),
        14 => op_split_with_sizes(v, ch),
        15 => op_tensor_split_sections(v, ch),
        16 => op_tensor_split_indices(v, ch),
        17 => op_unbind(v, ch),
        18 => op_movedim(v, ch),
        _ => op_t_or_mt(v, ch),
    }
}

/// Applies `steps` random view ops to `View::contiguous(shape)`, checking each op (property 2)
/// and that every view stays inside the storage (property 1). Returns the last view and the
/// storage length.
fn build_chain(shape: &[usize], steps: usize, vals: &[u32]) -> Check<(View, usize)> {
    let mut v = View::contiguous(shape);
    let len = v.numel();
    let mut ch = Choices::new(vals);
    let mut log = vec![v.to_string()];
    check_in_storage(&v, len, &log)?;
    for _ in 0..steps {
        if let Some(r) = random_op(&v, &mut ch)? {
            log.push(r.to_string());
            check_in_storage(&r, len, &log)?;
            v = r;
        }
        if v.numel() > MAX_NUMEL {
            break;
        }
    }
    Ok((v, len))
}

// ---- layout flags (property 4) ----------------------------------------------------------------

/// Views with arbitrary small strides (often overlapping or gappy, negative as `flip` makes
/// them), permuted-contiguous strides, or permuted-contiguous strides with odd strides on
/// size-1 dims; the latter two with some dims flipped. The offset leaves room for the
/// negative strides (every address is at least 0).
fn any_view() -> impl Strategy<Value = View> {
    (
        shape_s(),
        vec(-13isize..=13, 4),
        vec(any::<u32>(), 8),
        0usize..=3,
        0u8..3,
        any::<u8>(),
    )
        .prop_map(|(shape, raw, vals, offset, kind, flips)| {
            let n = shape.len();
            let mut strides = if kind == 0 {
                raw[..n].to_vec()
            } else {
                let p = Choices::new(&vals).perm(n);
                let phys: Vec<usize> = p.iter().map(|&d| shape[d]).collect();
                let phys_strides = contiguous_strides(&phys);
                let mut st = vec![0isize; n];
                for (i, &d) in p.iter().enumerate() {
                    st[d] = phys_strides[i];
                }
                if kind == 2 {
                    for d in 0..n {
                        if shape[d] == 1 {
                            st[d] = raw[d];
                        }
                    }
                }
                st
            };
            if kind != 0 {
                for (d, s) in strides.iter_mut().enumerate() {
                    if flips >> d & 1 == 1 {
                        *s = -*s;
                    }
                }
            }
            let room: isize = shape
                .iter()
                .zip(&strides)
                .filter(|&(_, &s)| s < 0)
                .map(|(&n, &s)| (n.max(1) as isize - 1) * -s)
                .sum();
            View::new(shape, strides, offset + room as usize)
        })
}

/// For dims `a`, `b` of size ≥ 2 with distinct non-zero input strides, the output orders them
/// the same way (the layout's permutation is kept).
fn check_keeps_order(what: &str, v: &View, out: &[isize]) -> Check<()> {
    if v.numel() == 0 {
        return Ok(());
    }
    let n = v.ndim();
    for a in 0..n {
        for b in 0..n {
            let (sa, sb) = (v.strides[a], v.strides[b]);
            if v.shape[a] >= 2 && v.shape[b] >= 2 && sa != 0 && sb != 0 && sa < sb {
                prop_assert!(
                    out[a] < out[b],
                    "{what} of {v}: {out:?} reorders dims {a} and {b}"
                );
            }
        }
    }
    Ok(())
}

fn check_layout(v: &View) -> Check<()> {
    let contiguous = v.is_contiguous();
    let nod = v.is_non_overlapping_and_dense();
    prop_assert_eq!(contiguous, brute_contiguous(v), "is_contiguous of {}", v);
    prop_assert_eq!(nod, brute_nod(v), "is_non_overlapping_and_dense of {}", v);
    prop_assert!(!contiguous || nod, "{v} is contiguous but not NOD");
    let cl = v.is_contiguous_as(MemoryFormat::ChannelsLast)
        || v.is_contiguous_as(MemoryFormat::ChannelsLast3d);
    prop_assert!(!cl || nod, "{v} is channels-last contiguous but not NOD");

    // §3.3: empty_like(preserve_format) is dense, keeps NOD strides verbatim and otherwise keeps
    // the order of the dims.
    let p = v.preserve_format_strides();
    let pv = View::new(v.shape.clone(), p.clone(), 0);
    prop_assert_eq!(pv.shape.len(), pv.strides.len());
    prop_assert!(
        pv.is_non_overlapping_and_dense() && brute_nod(&pv),
        "preserve_format of {v} gives {pv}, not NOD"
    );
    if nod {
        prop_assert_eq!(&p, &v.strides, "preserve_format of NOD {}", v);
    }
    check_keeps_order("preserve_format_strides", v, &p)?;

    // §4.1 with one input: dense output, contiguous for a contiguous input, NOD strides verbatim.
    let e = elementwise_out_strides(&v.shape, &[v]);
    let ev = View::new(v.shape.clone(), e.clone(), 0);
    prop_assert!(
        ev.is_non_overlapping_and_dense() && brute_nod(&ev),
        "elementwise of {v} gives {ev}, not NOD"
    );
    if contiguous {
        prop_assert_eq!(
            &e,
            &contiguous_strides(&v.shape),
            "elementwise of contiguous {}",
            v
        );
        prop_assert!(ev.is_contiguous());
    } else if nod && !cl {
        prop_assert_eq!(&e, &v.strides, "elementwise of NOD {}", v);
    }
    check_keeps_order("elementwise_out_strides", v, &e)
}

// ---- errors (property 5) ----------------------------------------------------------------------

/// Small values mostly (in and just out of range), sometimes large ones.
fn wild() -> impl Strategy<Value = i64> {
    prop_oneof![6 => -7i64..=7, 1 => -(1i64 << 31)..(1i64 << 31)]
}

/// Like `wild`, plus values near `i64::MIN` / `i64::MAX` (steps, lengths, split sizes …).
fn extreme() -> impl Strategy<Value = i64> {
    prop_oneof![
        6 => -7i64..=7,
        1 => Just(i64::MIN),
        1 => Just(i64::MAX),
        1 => Just(1i64 << 62),
        1 => any::<i64>(),
    ]
}

fn expect_view(
    what: &str,
    r: IrResult<View>,
    expect_ok: bool,
    err_kind: Option<ErrorKind>,
    len: usize,
) -> Check<()> {
    match r {
        Ok(r) => {
            prop_assert!(expect_ok, "{what}: expected an error, got {r}");
            prop_assert_eq!(r.shape.len(), r.strides.len(), "{}: {}", what, r);
            prop_assert!(r.fits_in(len), "{what}: {r} leaves a storage of {len}");
        }
        Err(e) => {
            prop_assert!(!expect_ok, "{what}: unexpected error {e:?}");
            if let Some(k) = err_kind {
                prop_assert_eq!(e.kind, k, "{}: {:?}", what, e);
            }
        }
    }
    Ok(())
}

fn expect_pieces(what: &str, r: IrResult<Vec<View>>, dim_bad: bool, len: usize) -> Check<()> {
    match r {
        Ok(ps) => {
            prop_assert!(!dim_bad, "{what}: expected an error for the dim");
            for p in ps {
                prop_assert!(
                    p.fits_in(len),
                    "{what}: piece {p} leaves a storage of {len}"
                );
            }
        }
        Err(e) => {
            if dim_bad {
                prop_assert_eq!(e.kind, ErrorKind::Index, "{}: {:?}", what, e);
            }
        }
    }
    Ok(())
}

/// Calls every view op with arguments drawn from `w` on `v` (a view of a storage of `len`):
/// results are `Ok` exactly when the arguments are valid, out-of-range dims and indices give
/// `ErrorKind::Index`, and nothing panics.
fn check_bad_args(v: &View, len: usize, w: &[i64], skip_known_bugs: bool) -> Check<()> {
    let n = v.ndim();
    let a = |i: usize| w[i % w.len()];
    let size_of = |d: usize| if n == 0 { 1 } else { v.shape[d] as i64 };
    let idx_kind = Some(ErrorKind::Index);

    // select(dim, index)
    let (d, i) = (a(0), a(1));
    let r = v.select(d, i);
    let what = format!("select({d}, {i}) of {v}");
    match wrap(d, n) {
        _ if n == 0 => expect_view(&what, r, false, idx_kind, len)?,
        None => expect_view(&what, r, false, idx_kind, len)?,
        Some(w) => {
            let s = size_of(w);
            expect_view(&what, r, -s <= i && i < s, idx_kind, len)?;
        }
    }

    // slice(dim, start, end, step)
    let (d, s, e, step) = (a(2), a(3), a(4), a(5));
    let (s, e) = (
        if a(6) % 3 == 0 { None } else { Some(s) },
        if a(7) % 3 == 0 { None } else { Some(e) },
    );
    let what = format!("slice({d}, {s:?}, {e:?}, {step}) of {v}");
    let r = v.slice(d, s, e, step);
    let wd = wrap(d, n).filter(|_| n > 0);
    if let (Ok(r), Some(wd)) = (&r, wd) {
        let (ps, pe) = py_slice(size_of(wd), s, e);
        let count = if pe > ps { (pe - ps - 1) / step + 1 } else { 0 };
        prop_assert_eq!(r.shape[wd] as i64, count, "{}: {}", what, r);
    }
    let kind = if n > 0 && step > 0 { idx_kind } else { None };
    expect_view(&what, r, wd.is_some() && step > 0, kind, len)?;

    // narrow(dim, start, length)
    let (d, s, l) = (a(6), a(7), a(8));
    let what = format!("narrow({d}, {s}, {l}) of {v}");
    let r = v.narrow(d, s, l);
    let valid = wrap(d, n).filter(|_| n > 0).is_some_and(|wd| {
        let size = size_of(wd) as i128;
        let (s, l) = (s as i128, l as i128);
        let start = if s < 0 { s + size } else { s };
        -size <= s && s <= size && l >= 0 && start + l <= size
    });
    let kind = if n > 0 && wrap(d, n).is_none() && l >= 0 {
        idx_kind
    } else {
        None
    };
    expect_view(&what, r, valid, kind, len)?;

    // unsqueeze(dim): range [-(n+1), n]
    let d = a(9);
    let what = format!("unsqueeze({d}) of {v}");
    expect_view(
        &what,
        v.unsqueeze(d),
        wrap(d, n + 1).is_some(),
        idx_kind,
        len,
    )?;

    // squeeze(dims)
    let dims = [a(10), a(11)];
    let what = format!("squeeze({dims:?}) of {v}");
    let (w0, w1) = (wrap(dims[0], n), wrap(dims[1], n));
    let valid = w0.is_some() && w1.is_some() && w0 != w1;
    let kind = if w0.is_none() || w1.is_none() {
        idx_kind
    } else {
        None
    };
    expect_view(&what, v.squeeze(Some(&dims)), valid, kind, len)?;

    // transpose(dim0, dim1)
    let (d0, d1) = (a(12), a(13));
    let what = format!("transpose({d0}, {d1}) of {v}");
    let valid = wrap(d0, n).is_some() && wrap(d1, n).is_some();
    expect_view(&what, v.transpose(d0, d1), valid, idx_kind, len)?;

    // permute(dims), with the right or a wrong number of dims
    let k = match a(14).rem_euclid(4) {
        0 => n + 1,
        1 => n.saturating_sub(1),
        _ => n,
    };
    let dims: Vec<i64> = (0..k).map(|i| a(15 + i)).collect();
    let what = format!("permute({dims:?}) of {v}");
    let wrapped: Vec<Option<usize>> = dims.iter().map(|&d| wrap(d, n).filter(|_| n > 0)).collect();
    let valid = k == n
        && wrapped.iter().all(Option::is_some)
        && (0..k).all(|i| (0..i).all(|j| wrapped[i] != wrapped[j]));
    expect_view(&what, v.permute(&dims), valid, None, len)?;

    // diagonal(offset, dim1, dim2): any offset is fine
    let (off, d1, d2) = (a(20), a(21), a(22));
    let what = format!("diagonal({off}, {d1}, {d2}) of {v}");
    let (w1, w2) = (wrap(d1, n), wrap(d2, n));
    let kind = if w1.is_none() || w2.is_none() {
        idx_kind
    } else {
        None
    };
    let r = v.diagonal(off, d1, d2);
    expect_view(
        &what,
        r,
        w1.is_some() && w2.is_some() && w1 != w2,
        kind,
        len,
    )?;

    // unfold(dim, size, step)
    let (d, size, step) = (a(23), a(24), a(25));
    let what = format!("unfold({d}, {size}, {step}) of {v}");
    let valid = wrap(d, n).is_some_and(|wd| (0..=size_of(wd)).contains(&size) && step > 0);
    let kind = if wrap(d, n).is_none() { idx_kind } else { None };
    expect_view(&what, v.unfold(d, size, step), valid, kind, len)?;

    // expand(sizes) with small targets
    let m = n + (a(26).rem_euclid(3) as usize);
    let m = if a(27) % 5 == 0 {
        m.saturating_sub(1)
    } else {
        m
    };
    let sizes: Vec<i64> = (0..m).map(|i| a(28 + i).clamp(-3, 5)).collect();
    let what = format!("expand({sizes:?}) of {v}");
    let valid = m >= n
        && sizes.iter().enumerate().all(|(i, &t)| {
            if i < m - n {
                t >= 0
            } else {
                let s = v.shape[i - (m - n)] as i64;
                t == -1 || t == s || (s == 1 && t >= 0)
            }
        });
    expect_view(&what, v.expand(&sizes), valid, None, len)?;

    // view(shape) with small sizes: the outcome the rules give (`expected_view`)
    let shape: Vec<i64> = (0..a(34).rem_euclid(5) as usize)
        .map(|i| a(35 + i).clamp(-2, 6))
        .collect();
    let what = format!("view({shape:?}) of {v}");
    match (expected_view(v, &shape), v.view(&shape)) {
        (Ok(new), Ok(r)) => {
            prop_assert_eq!(&r.shape, &new, "{}: {}", what, r);
            prop_assert_eq!(addrs(&r), addrs(v), "{}: row-major addresses, {}", what, r);
            prop_assert!(r.fits_in(len), "{what}: {r} leaves a storage of {len}");
        }
        (Err(kind), Err(e)) => prop_assert_eq!(e.kind, kind, "{}: {:?}", what, e),
        (want, got) => prop_assert!(false, "{what}: expected {want:?}, got {got:?}"),
    }

    // unflatten(dim, sizes)
    let (d, sizes) = (a(40), [a(41).clamp(-2, 6), a(42).clamp(-2, 6)]);
    let what = format!("unflatten({d}, {sizes:?}) of {v}");
    let r = v.unflatten(d, &sizes);
    if wrap(d, n).is_none() {
        prop_assert!(
            r.as_ref().is_err_and(|e| e.kind == ErrorKind::Index),
            "{what}: {r:?}"
        );
    } else if let Ok(r) = &r {
        prop_assert!(r.fits_in(len), "{what}: {r}");
    }

    // splitting ops: an out-of-range dim (with otherwise valid arguments) is an index error
    let d = a(43);
    let dim_bad = n > 0 && wrap(d, n).is_none();
    let k = a(44);
    expect_pieces(
        &format!("split({k}, {d}) of {v}"),
        v.split(k, d),
        dim_bad && k >= 0,
        len,
    )?;
    let c = a(45).clamp(-3, 8);
    expect_pieces(
        &format!("chunk({c}, {d}) of {v}"),
        v.chunk(c, d),
        dim_bad && c > 0,
        len,
    )?;
    let ss = [a(46), a(47)];
    expect_pieces(
        &format!("split_with_sizes({ss:?}, {d}) of {v}"),
        v.split_with_sizes(&ss, d),
        dim_bad,
        len,
    )?;
    let sec = a(48).clamp(-3, 8);
    let r = v.tensor_split_sections(sec, d);
    expect_pieces(
        &format!("tensor_split({sec}, {d}) of {v}"),
        r,
        dim_bad && sec > 0,
        len,
    )?;
    let ix = [a(49), a(50)];
    expect_pieces(
        &format!("tensor_split({ix:?}, {d}) of {v}"),
        v.tensor_split_indices(&ix, d),
        dim_bad,
        len,
    )?;
    expect_pieces(&format!("unbind({d}) of {v}"), v.unbind(d), dim_bad, len)?;
    if n == 0 {
        prop_assert!(v.split(k, d).is_err() && v.chunk(c, d).is_err() && v.unbind(d).is_err());
    }

    // movedim(source, destination)
    let (src, dst) = ([a(51), a(52)], [a(53)]);
    let what = format!("movedim({src:?}, {dst:?}) of {v}");
    expect_view(&what, v.movedim(&src, &dst), false, None, len)?;
    let (src, dst) = ([a(51)], [a(53)]);
    let what = format!("movedim({src:?}, {dst:?}) of {v}");
    let valid = wrap(src[0], n).is_some() && wrap(dst[0], n).is_some();
    // known_bug_movedim_of_0d_panics
    if !(skip_known_bugs && n == 0 && valid) {
        expect_view(&what, v.movedim(&src, &dst), valid, None, len)?;
    }

    // as_strided on the same storage
    let rank = a(54).rem_euclid(4) as usize;
    let shape: Vec<i64> = (0..rank).map(|i| a(55 + i).clamp(-1, 1 << 12)).collect();
    let strides: Vec<i64> = (0..rank).map(|i| a(59 + i).clamp(-1, 1 << 12)).collect();
    let off = a(63).clamp(-1, 1 << 12);
    let what = format!("as_strided({shape:?}, {strides:?}, {off}) in a storage of {len}");
    match (
        expected_as_strided(&shape, &strides, off, len),
        View::as_strided(&shape, &strides, off, len, 4),
    ) {
        (Ok(()), Ok(r)) => {
            let args = |r: &View| -> (Vec<i64>, Vec<i64>, i64) {
                (
                    r.shape.iter().map(|&n| n as i64).collect(),
                    r.strides.iter().map(|&s| s as i64).collect(),
                    r.offset as i64,
                )
            };
            prop_assert_eq!(args(&r), (shape.clone(), strides.clone(), off), "{}", what);
            prop_assert!(r.fits_in(len), "{what}: {r} leaves a storage of {len}");
        }
        (Err(kind), Err(e)) => prop_assert_eq!(e.kind, kind, "{}: {:?}", what, e),
        (want, got) => prop_assert!(false, "{what}: expected {want:?}, got {got:?}"),
    }
    Ok(())
}

/// What `view(shape)` of `v` gives by SEMANTICS.md §3.1, worked out from the rules rather
/// than from the result: the shape (`infer_size`), or the kind of the error: `value` for a
/// second `-1` or a size below −1, `shape` for a size that does not match (or an ambiguous
/// `-1`), `stride` when no strides reproduce `v`'s row-major addresses (brute force; a view
/// of no elements always succeeds).
fn expected_view(v: &View, shape: &[i64]) -> Result<Vec<usize>, ErrorKind> {
    let numel = v.numel();
    if shape.iter().filter(|&&s| s == -1).count() > 1 || shape.iter().any(|&s| s < -1) {
        return Err(ErrorKind::Value);
    }
    let known: usize = shape
        .iter()
        .filter(|&&s| s >= 0)
        .map(|&s| s as usize)
        .product();
    let new: Vec<usize> = match shape.iter().position(|&s| s == -1) {
        Some(_) if known == 0 || !numel.is_multiple_of(known) => return Err(ErrorKind::Shape),
        Some(_) => shape
            .iter()
            .map(|&s| if s == -1 { numel / known } else { s as usize })
            .collect(),
        None if known != numel => return Err(ErrorKind::Shape),
        None => shape.iter().map(|&s| s as usize).collect(),
    };
    if numel > 0 && brute_view_strides(v, &new).is_none() {
        return Err(ErrorKind::Stride);
    }
    Ok(new)
}

/// What `as_strided(shape, strides, offset)` on a storage of `len` gives by SEMANTICS.md §1.1:
/// `value` errors for a negative stride, offset or size, an `index` error when an element lies
/// past the storage (nothing is checked for no elements).
fn expected_as_strided(
    shape: &[i64],
    strides: &[i64],
    offset: i64,
    len: usize,
) -> Result<(), ErrorKind> {
    if strides.iter().any(|&s| s < 0) || offset < 0 || shape.iter().any(|&n| n < 0) {
        return Err(ErrorKind::Value);
    }
    let last: i64 = offset
        + shape
            .iter()
            .zip(strides)
            .map(|(&n, &s)| (n - 1).max(0) * s)
            .sum::<i64>();
    if shape.iter().all(|&n| n > 0) && last >= len as i64 {
        return Err(ErrorKind::Index);
    }
    Ok(())
}

// ---- the properties ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(config())]

    /// Properties 1 and 2: random chains of view ops stay inside the storage, and every op
    /// addresses the elements its PyTorch rule names.
    #[test]
    fn view_chains_stay_in_storage_and_address_the_right_elements(
        shape in shape_s(),
        steps in 0usize..=8,
        vals in choices_s(),
    ) {
        build_chain(&shape, steps, &vals)?;
    }

    /// Property 3: for a contiguous base (size-1 dims may have any stride), `view_strides`
    /// always succeeds and gives the contiguous strides of the new shape (modulo size-1 dims);
    /// for numel 0 exactly §3.1 step 2.
    #[test]
    fn view_strides_of_contiguous_bases_are_contiguous(
        shape in shape_s(),
        odd in vec(0isize..=9, 4),
        vals in choices_s(),
    ) {
        let mut strides = contiguous_strides(&shape);
        for (d, s) in strides.iter_mut().enumerate() {
            if shape[d] == 1 && odd[d] % 2 == 1 {
                *s = odd[d];
            }
        }
        let base = View::new(shape.clone(), strides.clone(), 0);
        prop_assert!(base.is_contiguous());
        let new = shape_with_numel(base.numel(), &mut Choices::new(&vals));
        let got = view_strides(&shape, &strides, &new);
        prop_assert!(got.is_some(), "view of contiguous {} as {:?} refused", base, new);
        let got = got.unwrap_or_default();
        let want = contiguous_strides(&new);
        if base.numel() == 0 {
            prop_assert_eq!(&got, if new == shape { &strides } else { &want });
        } else {
            for d in 0..new.len() {
                if new[d] != 1 {
                    prop_assert_eq!(got[d], want[d], "view of {} as {:?}: {:?}", base, new, got);
                }
            }
            let r = View::new(new.clone(), got, 0);
            prop_assert!(r.is_contiguous(), "view of {} as {:?}: {}", base, new, r);
        }
    }

    /// Property 3 (general bases): `view_strides` on arbitrary (overlapping, gappy, expanded)
    /// strides succeeds exactly when some strided layout reproduces the row-major addresses,
    /// and then its strides do.
    #[test]
    fn view_strides_is_exact_on_arbitrary_strides(v in any_view(), vals in choices_s()) {
        let new = shape_with_numel(v.numel(), &mut Choices::new(&vals));
        let got = view_strides(&v.shape, &v.strides, &new);
        if v.numel() == 0 {
            prop_assert!(got.is_some());
        } else {
            match got {
                Some(s) => {
                    let r = View::new(new.clone(), s, v.offset);
                    prop_assert_eq!(addrs(&r), addrs(&v), "view of {} as {}", v, r);
                }
                None => {
                    let brute = brute_view_strides(&v, &new);
                    prop_assert!(
                        brute.is_none(),
                        "view of {v} as {new:?} refused, but strides {brute:?} work"
                    );
                }
            }
        }
    }

    /// Property 4 on views with arbitrary strides.
    #[test]
    fn layout_flags_and_dense_strides_on_arbitrary_views(v in any_view()) {
        check_layout(&v)?;
    }

    /// Property 4 on views reached by chains of view ops.
    #[test]
    fn layout_flags_and_dense_strides_on_derived_views(
        shape in shape_s(),
        steps in 0usize..=8,
        vals in choices_s(),
    ) {
        let (v, _) = build_chain(&shape, steps, &vals)?;
        check_layout(&v)?;
        let c = View::contiguous(&v.shape);
        prop_assert_eq!(elementwise_out_strides(&c.shape, &[&c]), contiguous_strides(&c.shape));
    }

    /// Property 5: random (often out-of-range) dims, indices, sizes and steps give `Ok` exactly
    /// when valid, `Err` otherwise (index errors for bad dims and indices), and never panic.
    #[test]
    fn bad_arguments_are_errors_not_panics(
        shape in shape_s(),
        steps in 0usize..=6,
        vals in choices_s(),
        w in vec(wild(), 64),
    ) {
        let (v, len) = build_chain(&shape, steps, &vals)?;
        check_bad_args(&v, len, &w, SKIP_KNOWN_BUGS)?;
    }

    /// Property 5 with arguments near `i64::MIN` / `i64::MAX`.
    #[test]
    fn extreme_arguments_are_errors_not_panics(
        shape in shape_s(),
        steps in 0usize..=6,
        vals in choices_s(),
        w in vec(extreme(), 64),
    ) {
        let (v, len) = build_chain(&shape, steps, &vals)?;
        check_bad_args(&v, len, &w, false)?;
    }
}

// ---- known bugs in view.rs: minimal reproductions ---------------------------------------------
//
// Each test states what SEMANTICS.md asks for; today each one panics (debug builds, where
// integer overflow is checked, or an index out of bounds). `cargo test -- --ignored` runs them.

/// §1.3/§2: a 0-d tensor accepts dims 0 and -1; `movedim` of a 0-d tensor is a no-op alias
/// (PyTorch returns `self.alias()` for 0-d after the dim checks). Today: index out of bounds.
#[test]
fn known_bug_movedim_of_0d_panics() {
    let v = View::contiguous(&[]);
    assert_eq!(v.movedim(&[0], &[0]), Ok(v.clone()));
    assert_eq!(v.movedim(&[-1], &[0]), Ok(v.clone()));
}

/// §2.1: `S'[d] = ceil((end-start)/step)`; a huge step selects one element. Today
/// `(e - s + step - 1)` and `strides[d] * step` overflow.
#[test]
fn known_bug_slice_with_huge_step_overflows() {
    let v = View::contiguous(&[3, 4]);
    assert_eq!(
        v.slice(0, None, None, i64::MAX).map(|r| r.shape.to_vec()),
        Ok(vec![1, 4])
    );
    assert_eq!(
        v.slice(0, Some(0), Some(1), 1 << 62)
            .map(|r| r.shape.to_vec()),
        Ok(vec![1, 4])
    );
}

/// §2.4: dim d gets `(S[d]-size)/step + 1` windows; a huge step gives one window. Today
/// `step * stride` overflows.
#[test]
fn known_bug_unfold_with_huge_step_overflows() {
    let v = View::contiguous(&[3, 4]);
    assert_eq!(
        v.unfold(0, 1, i64::MAX).map(|r| r.shape.to_vec()),
        Ok(vec![1, 4, 1])
    );
}

/// §2: `start + len > S[d]` is an error (PyTorch checks `start <= S - len`). Today `s + length`
/// overflows.
#[test]
fn known_bug_narrow_with_huge_length_overflows() {
    let v = View::contiguous(&[3, 4]);
    assert!(v.narrow(0, 1, i64::MAX).is_err());
}

/// §2.5: `k > S[d]` gives one piece; `chunk(c)` uses `k = ceil(S/c)` (here 1: three pieces);
/// a size list that does not sum to `S[d]` is an error. Today `S + k - 1`, `S + c - 1` and the
/// sum of the sizes overflow.
#[test]
fn known_bug_splits_with_huge_sizes_overflow() {
    let v = View::contiguous(&[3, 4]);
    assert_eq!(v.split(i64::MAX, 0).map(|p| p.len()), Ok(1));
    assert_eq!(v.chunk(i64::MAX, 0).map(|p| p.len()), Ok(3));
    assert!(v.split_with_sizes(&[1, i64::MAX], 0).is_err());
}

/// §1.1: out-of-bounds or overflowing geometry is an error (PyTorch: `setStorage: … out of
/// bounds …` / `Storage size calculation overflowed …`). Today `address_range` and the error
/// message (`needed * itemsize`) overflow.
#[test]
fn known_bug_as_strided_with_huge_geometry_overflows() {
    assert!(View::as_strided(&[i64::MAX], &[1], 0, 12, 4).is_err());
    assert!(View::as_strided(&[2], &[i64::MAX], 0, 12, 4).is_err());
    assert!(View::as_strided(&[2], &[1], i64::MAX, 12, 4).is_err());
    assert!(View::as_strided(&[1 << 62, 1 << 62], &[0, 0], 0, 12, 4).is_err());
}
