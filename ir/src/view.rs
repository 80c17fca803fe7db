//! `View`: (shape, strides, storage offset) over a flat storage, in elements, and the algebra of
//! every PyTorch view op (SEMANTICS.md §2–3). A view op never copies: it returns a new `View`.

use crate::dims::Dims;
use crate::error::{Error, Result};
use crate::reading::Reading;
use std::fmt;

/// How two views of one storage overlap ([`View::overlap_with`], PyTorch's `MemOverlapStatus`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overlap {
    /// No element in common.
    No,
    /// The same elements in the same order.
    Full,
    /// Some elements in common, or the same ones in another order.
    Partial,
    /// Not decided: one of them is not non-overlapping and dense.
    TooHard,
}

/// A strided window onto a storage. Strides are ≥ 0 for every view PyTorch can create; the
/// type allows negative strides so the compiler can express reversed loads. Shape, strides and
/// offset count elements of the dtype the view reads, which its [`Reading`] relates to the
/// storage's (a complex storage read as its real parts, a conjugate view); every view op keeps
/// the reading.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct View {
    pub shape: Dims<usize>,
    pub strides: Dims<isize>,
    pub offset: usize,
    pub read: Reading,
}

/// An empty list with room for the `count` pieces of a split, or a `memory` error when the
/// list itself cannot be allocated: `tensor_split(sections)` and `chunk` of an empty dim return
/// as many pieces as asked, however many that is, as PyTorch does.
pub fn piece_list<T>(op: &str, count: i64) -> Result<Vec<T>> {
    let mut out = Vec::new();
    usize::try_from(count)
        .ok()
        .and_then(|n| out.try_reserve_exact(n).ok())
        .ok_or_else(|| {
            Error::memory(format!(
                "{op}: can't allocate memory for a list of {count} tensors"
            ))
        })?;
    Ok(out)
}

/// Checks that a tensor of `shape` with elements of `itemsize` bytes can exist: its element
/// count and its size in bytes fit in an int64, as PyTorch's storage size computation requires.
/// Errors: a `value` error naming the sizes (PyTorch's "Storage size calculation overflowed").
pub fn check_sizes(shape: &[usize], itemsize: usize) -> Result<()> {
    if shape.contains(&0) {
        return Ok(());
    }
    let bytes = shape
        .iter()
        .try_fold(itemsize.max(1), |n, &d| n.checked_mul(d))
        .filter(|&b| b <= i64::MAX as usize);
    match bytes {
        Some(_) => Ok(()),
        None => Err(Error::value(format!(
            "Storage size calculation overflowed with sizes={}",
            fmt_list(shape)
        ))),
    }
}

/// `[2, 3]` style formatting of a size list, as PyTorch prints it in messages.
pub fn fmt_list<T: fmt::Display>(xs: &[T]) -> String {
    let parts: Vec<String> = xs.iter().map(|x| x.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// Row-major strides with PyTorch's `max(size, 1)` rule.
pub fn contiguous_strides(shape: &[usize]) -> Dims<isize> {
    let mut strides = Dims::filled(0isize, shape.len());
    let mut acc = 1isize;
    for d in (0..shape.len()).rev() {
        strides[d] = acc;
        acc = acc.saturating_mul(shape[d].max(1) as isize);
    }
    strides
}

/// Wraps a possibly negative dim into `0..n` (a 0-d tensor accepts 0 and -1).
pub fn wrap_dim(dim: i64, n: usize) -> Result<usize> {
    let m = n.max(1) as i64;
    if dim < -m || dim >= m {
        return Err(Error::index(format!(
            "Dimension out of range (expected to be in range of [{}, {}], but got {dim})",
            -m,
            m - 1
        )));
    }
    Ok(if dim < 0 {
        (dim + m) as usize
    } else {
        dim as usize
    })
}

/// Wraps a list of dims, rejecting repeats with PyTorch's message.
pub fn wrap_dims(dims: &[i64], n: usize) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(dims.len());
    for &d in dims {
        let w = wrap_dim(d, n)?;
        if out.contains(&w) {
            return Err(Error::value(format!(
                "dim {w} appears multiple times in the list of dims"
            )));
        }
        out.push(w);
    }
    Ok(out)
}

/// `infer_size`: resolves one `-1` in a requested shape against `numel`.
pub fn infer_size(shape: &[i64], numel: usize) -> Result<Vec<usize>> {
    let mut infer = None;
    let mut prod = 1usize;
    for (i, &s) in shape.iter().enumerate() {
        if s == -1 {
            if infer.is_some() {
                return Err(Error::value("only one dimension can be inferred"));
            }
            infer = Some(i);
        } else if s < 0 {
            return Err(Error::value(format!(
                "invalid shape dimension {s} at index {i} of shape {}",
                fmt_list(shape)
            )));
        } else {
            prod = prod.saturating_mul(s as usize);
        }
    }
    let mut out: Vec<usize> = shape.iter().map(|&s| s.max(0) as usize).collect();
    match infer {
        Some(i) => {
            if prod == 0 {
                if numel == 0 {
                    return Err(Error::shape(format!(
                        "cannot reshape tensor of 0 elements into shape {} because the unspecified dimension size -1 can be any value and is ambiguous",
                        fmt_list(shape)
                    )));
                }
            } else if numel.is_multiple_of(prod) {
                out[i] = numel / prod;
                return Ok(out);
            }
            Err(Error::shape(format!(
                "shape '{}' is invalid for input of size {numel}",
                fmt_list(shape)
            )))
        }
        None if prod == numel => Ok(out),
        None => Err(Error::shape(format!(
            "shape '{}' is invalid for input of size {numel}",
            fmt_list(shape)
        ))),
    }
}

/// `computeStride` (SEMANTICS.md §3.1): strides for viewing `(old_shape, old_strides)` as
/// `new_shape` without a copy, or `None` when the dims to merge are not contiguous together.
pub fn view_strides(
    old_shape: &[usize],
    old_strides: &[isize],
    new_shape: &[usize],
) -> Option<Dims<isize>> {
    if old_shape.is_empty() {
        return Some(Dims::filled(1, new_shape.len()));
    }
    let numel: usize = old_shape.iter().product();
    if numel == 0 {
        return Some(if old_shape == new_shape {
            old_strides.into()
        } else {
            contiguous_strides(new_shape)
        });
    }
    let mut out = Dims::filled(0isize, new_shape.len());
    let mut view_d = new_shape.len() as isize - 1;
    let mut chunk_base = *old_strides.last()?;
    let mut tensor_numel = 1isize;
    let mut view_numel = 1isize;
    for d in (0..old_shape.len()).rev() {
        tensor_numel *= old_shape[d] as isize;
        let chunk_ends =
            d == 0 || (old_shape[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_base);
        if chunk_ends {
            while view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d as usize] == 1) {
                out[view_d as usize] = view_numel * chunk_base;
                view_numel *= new_shape[view_d as usize] as isize;
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return None;
            }
            if d > 0 {
                chunk_base = old_strides[d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    if view_d != -1 {
        return None;
    }
    Some(out)
}

/// Memory formats of `empty`, `contiguous`, `clone` and the `*_like` factories.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryFormat {
    /// `torch.contiguous_format`: row-major.
    Contiguous,
    /// `torch.channels_last`: a 4-D `NCHW` tensor stored as `NHWC`.
    ChannelsLast,
    /// `torch.channels_last_3d`: a 5-D `NCDHW` tensor stored as `NDHWC`.
    ChannelsLast3d,
    /// `torch.preserve_format`: the input's strides when it is dense, else row-major.
    Preserve,
}

impl MemoryFormat {
    /// Parses PyTorch's names (`contiguous_format`, `channels_last` …).
    pub fn parse(s: &str) -> Option<MemoryFormat> {
        Some(match s {
            "contiguous_format" => MemoryFormat::Contiguous,
            "channels_last" => MemoryFormat::ChannelsLast,
            "channels_last_3d" => MemoryFormat::ChannelsLast3d,
            "preserve_format" => MemoryFormat::Preserve,
            _ => return None,
        })
    }
}

/// Canonical strides of a memory format (no `max(size, 1)` for channels-last, as in c10).
pub fn format_strides(shape: &[usize], format: MemoryFormat) -> Result<Dims<isize>> {
    let order: &[usize] = match format {
        MemoryFormat::Contiguous | MemoryFormat::Preserve => return Ok(contiguous_strides(shape)),
        MemoryFormat::ChannelsLast => {
            if shape.len() != 4 {
                return Err(Error::value(
                    "required rank 4 tensor to use channels_last format",
                ));
            }
            &[1, 3, 2, 0]
        }
        MemoryFormat::ChannelsLast3d => {
            if shape.len() != 5 {
                return Err(Error::value(
                    "required rank 5 tensor to use channels_last_3d format",
                ));
            }
            &[1, 4, 3, 2, 0]
        }
    };
    let mut strides = Dims::filled(0isize, shape.len());
    let mut acc = 1isize;
    for &d in order {
        strides[d] = acc;
        acc *= shape[d] as isize;
    }
    Ok(strides)
}

/// Strides of `empty_permuted(shape, physical_layout)`.
pub fn permuted_strides(shape: &[usize], layout: &[i64]) -> Result<Vec<isize>> {
    let n = shape.len();
    if layout.len() != n {
        return Err(Error::shape(format!(
            "Number of dimensions in size does not match the length of the physical_layout; i.e. len(size) = {n} is not equal to len(physical_layout) = {}",
            layout.len()
        )));
    }
    let mut seen = vec![false; n];
    for (i, &d) in layout.iter().enumerate() {
        if d < 0 || d as usize >= n {
            return Err(Error::index(format!(
                "Dimension out of range (expected to be between 0 and {}, but got {d} at index {i}).  NB: negative dims not currently supported; file an issue if you want it.",
                n.saturating_sub(1)
            )));
        }
        if seen[d as usize] {
            return Err(Error::value("Duplicate dim not allowed"));
        }
        seen[d as usize] = true;
    }
    let phys: Vec<usize> = layout.iter().map(|&d| shape[d as usize]).collect();
    let phys_strides = contiguous_strides(&phys);
    let mut strides = vec![0isize; n];
    for (i, &d) in layout.iter().enumerate() {
        strides[d as usize] = phys_strides[i];
    }
    Ok(strides)
}

/// Sorts dims innermost-first by the strides of several operands (SEMANTICS.md §4.1 step 4,
/// also `infer_dense_strides` with one operand). Returns `perm` with `perm[0]` innermost.
pub fn order_dims(shape: &[usize], operands: &[&[isize]]) -> Vec<usize> {
    let n = shape.len();
    let mut perm: Vec<usize> = (0..n).rev().collect();
    let should_swap = |a: usize, b: usize| -> i32 {
        for st in operands {
            if st[a] == 0 || st[b] == 0 {
                continue;
            }
            if st[a] < st[b] {
                return -1;
            }
            if st[a] > st[b] {
                return 1;
            }
            if shape[a] > shape[b] {
                return 1;
            }
        }
        0
    };
    for i in 1..n {
        let mut cur = i;
        for j in (0..i).rev() {
            let c = should_swap(perm[j], perm[cur]);
            if c > 0 {
                perm.swap(j, cur);
                cur = j;
            } else if c < 0 {
                break;
            }
        }
    }
    perm
}

/// Dense strides following `perm` (innermost first); `skip_ones` multiplies only by sizes > 1.
fn strides_from_perm(shape: &[usize], perm: &[usize], skip_ones: bool) -> Dims<isize> {
    let mut strides = Dims::filled(0isize, shape.len());
    let mut acc = 1isize;
    for &p in perm {
        strides[p] = acc;
        if skip_ones {
            if shape[p] > 1 {
                acc *= shape[p] as isize;
            }
        } else {
            acc *= shape[p] as isize;
        }
    }
    strides
}

impl View {
    /// A contiguous view of `shape` at offset 0.
    pub fn contiguous(shape: &[usize]) -> View {
        View {
            shape: shape.into(),
            strides: contiguous_strides(shape),
            offset: 0,
            read: Reading::PLAIN,
        }
    }

    #[inline]
    pub fn new(
        shape: impl Into<Dims<usize>>,
        strides: impl Into<Dims<isize>>,
        offset: usize,
    ) -> View {
        let (shape, strides) = (shape.into(), strides.into());
        debug_assert_eq!(shape.len(), strides.len(), "a view has one stride per dim");
        View {
            shape,
            strides,
            offset,
            read: Reading::PLAIN,
        }
    }

    /// This geometry with another reading.
    pub fn with_read(mut self, read: Reading) -> View {
        self.read = read;
        self
    }

    /// The same geometry read plainly: the storage's own elements, unchanged.
    pub fn plain(&self) -> View {
        self.clone().with_read(Reading::PLAIN)
    }

    /// Do the two views address the same elements the same way (the readings aside)?
    pub fn same_geometry(&self, other: &View) -> bool {
        self.shape == other.shape && self.strides == other.strides && self.offset == other.offset
    }

    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    pub fn numel(&self) -> usize {
        // Saturating: a shape whose element count overflows (which the ops refuse with
        // `check_sizes`) never reads as a small one.
        self.shape
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .unwrap_or(if self.shape.contains(&0) {
                0
            } else {
                usize::MAX
            })
    }

    /// Storage address of a multi-index.
    pub fn address(&self, index: &[usize]) -> isize {
        let mut a = self.offset as isize;
        for (i, s) in index.iter().zip(&self.strides) {
            a += *i as isize * s;
        }
        a
    }

    /// Smallest and largest address this view touches, or `None` when it has no elements.
    pub fn address_range(&self) -> Option<(isize, isize)> {
        if self.numel() == 0 {
            return None;
        }
        let (mut lo, mut hi) = (self.offset as isize, self.offset as isize);
        for (&n, &s) in self.shape.iter().zip(&self.strides) {
            let span = (n as isize - 1) * s;
            if span < 0 {
                lo += span;
            } else {
                hi += span;
            }
        }
        Some((lo, hi))
    }

    /// Does every address lie in a storage of `len` elements?
    pub fn fits_in(&self, len: usize) -> bool {
        match self.address_range() {
            None => true,
            Some((lo, hi)) => lo >= 0 && (hi as usize) < len,
        }
    }

    /// `is_contiguous()` (SEMANTICS.md §1.4).
    pub fn is_contiguous(&self) -> bool {
        if self.numel() == 0 {
            return true;
        }
        let mut expected = 1isize;
        for d in (0..self.ndim()).rev() {
            if self.shape[d] == 1 {
                continue;
            }
            if self.strides[d] != expected {
                return false;
            }
            expected *= self.shape[d] as isize;
        }
        true
    }

    fn is_contiguous_in_order(&self, order: &[usize]) -> bool {
        let mut expected = 1isize;
        for &d in order {
            if self.shape[d] == 1 {
                continue;
            }
            if self.strides[d] != expected {
                return false;
            }
            expected *= self.shape[d] as isize;
        }
        true
    }

    /// `is_contiguous(memory_format)`.
    pub fn is_contiguous_as(&self, format: MemoryFormat) -> bool {
        match format {
            MemoryFormat::Contiguous | MemoryFormat::Preserve => self.is_contiguous(),
            MemoryFormat::ChannelsLast => {
                self.ndim() == 4 && self.is_contiguous_in_order(&[1, 3, 2, 0])
            }
            MemoryFormat::ChannelsLast3d => {
                self.ndim() == 5 && self.is_contiguous_in_order(&[1, 4, 3, 2, 0])
            }
        }
    }

    /// `is_non_overlapping_and_dense()` (SEMANTICS.md §1.5).
    pub fn is_non_overlapping_and_dense(&self) -> bool {
        if self.is_contiguous()
            || self.is_contiguous_as(MemoryFormat::ChannelsLast)
            || self.is_contiguous_as(MemoryFormat::ChannelsLast3d)
        {
            return true;
        }
        let n = self.ndim();
        if n == 1 {
            return self.shape[0] < 2 || self.strides[0] == 1;
        }
        let mut perm: Vec<usize> = (0..n).collect();
        perm.sort_by(|&a, &b| {
            let (sa, sb) = (self.shape[a] < 2, self.shape[b] < 2);
            sa.cmp(&sb).then(self.strides[a].cmp(&self.strides[b]))
        });
        let mut req = 1isize;
        for &d in &perm {
            if self.shape[d] < 2 {
                return true;
            }
            if self.strides[d] != req {
                return false;
            }
            req *= self.shape[d] as isize;
        }
        true
    }

    /// How this view and `other`, a view of the same storage, overlap: PyTorch's
    /// `get_overlap_status` (MemoryOverlap.cpp). No when either is empty; too hard to tell when
    /// either is not non-overlapping and dense; else, comparing the element ranges
    /// `offset .. offset + numel`: full when the ranges and the strides are the same, partial when
    /// the ranges meet otherwise, no when they do not. In-place ops refuse only `Partial`.
    pub fn overlap_with(&self, other: &View) -> Overlap {
        if self.numel() == 0 || other.numel() == 0 {
            return Overlap::No;
        }
        if !self.is_non_overlapping_and_dense() || !other.is_non_overlapping_and_dense() {
            return Overlap::TooHard;
        }
        let (a0, b0) = (self.offset, other.offset);
        let (a1, b1) = (a0 + self.numel(), b0 + other.numel());
        if a0 == b0 && a1 == b1 {
            if self.strides == other.strides {
                Overlap::Full
            } else {
                Overlap::Partial
            }
        } else if a0 < b1 && b0 < a1 {
            Overlap::Partial
        } else {
            Overlap::No
        }
    }

    /// `has_internal_overlap` (MemoryOverlap.cpp): `Some(true)` when several elements surely share
    /// an address (a dim of size > 1 with stride 0), `Some(false)` when surely not, `None` when
    /// too hard to tell (PyTorch then allows the write).
    pub fn internal_overlap(&self) -> Option<bool> {
        if self.is_non_overlapping_and_dense() {
            return Some(false);
        }
        if self
            .shape
            .iter()
            .zip(&self.strides)
            .any(|(&n, &s)| n > 1 && s == 0)
        {
            return Some(true);
        }
        None
    }

    /// Strides-like-channels-last test of `suggest_memory_format` (SEMANTICS.md §1.7).
    fn strides_like(&self, order: &[usize]) -> bool {
        if self.strides[1] == 0 {
            return false;
        }
        let mut min = 0isize;
        for &d in order {
            if self.shape[d] == 0 || self.strides[d] < min {
                return false;
            }
            if d == 0 && min == self.strides[1] {
                return false;
            }
            min = self.strides[d] * self.shape[d].max(1) as isize;
        }
        true
    }

    /// `suggest_memory_format()`.
    pub fn suggest_memory_format(&self) -> MemoryFormat {
        if self.ndim() == 4 && self.strides_like(&[1, 3, 2, 0]) {
            MemoryFormat::ChannelsLast
        } else if self.ndim() == 5 && self.strides_like(&[1, 4, 3, 2, 0]) {
            MemoryFormat::ChannelsLast3d
        } else {
            MemoryFormat::Contiguous
        }
    }

    /// Strides of `empty_like(self)` with preserve_format (SEMANTICS.md §3.3).
    pub fn preserve_format_strides(&self) -> Dims<isize> {
        if self.is_non_overlapping_and_dense() {
            return self.strides.clone();
        }
        let perm = order_dims(&self.shape, &[&self.strides[..]]);
        strides_from_perm(&self.shape, &perm, true)
    }

    /// Strides of a fresh tensor of this shape laid out like `format` would lay out `self`.
    pub fn like_strides(&self, format: MemoryFormat) -> Result<Dims<isize>> {
        match format {
            MemoryFormat::Preserve => Ok(self.preserve_format_strides()),
            MemoryFormat::Contiguous
            | MemoryFormat::ChannelsLast
            | MemoryFormat::ChannelsLast3d => format_strides(&self.shape, format),
        }
    }

    // ---- view ops -------------------------------------------------------------------------

    /// `select(dim, index)`.
    pub fn select(&self, dim: i64, index: i64) -> Result<View> {
        if self.ndim() == 0 {
            return Err(Error::index(
                "select() cannot be applied to a 0-dim tensor.",
            ));
        }
        let d = wrap_dim(dim, self.ndim())?;
        let size = self.shape[d] as i64;
        if index < -size || index >= size {
            return Err(Error::index(format!(
                "select(): index {index} out of range for tensor of size {} at dimension {d}",
                fmt_list(&self.shape)
            )));
        }
        let i = if index < 0 { index + size } else { index };
        let mut v = self.clone();
        v.offset = (self.offset as isize + i as isize * self.strides[d]) as usize;
        v.shape.remove(d);
        v.strides.remove(d);
        Ok(v)
    }

    /// `slice(dim, start, end, step)` with Python's clamping (SEMANTICS.md §2.1).
    pub fn slice(&self, dim: i64, start: Option<i64>, end: Option<i64>, step: i64) -> Result<View> {
        if self.ndim() == 0 {
            return Err(Error::index("slice() cannot be applied to a 0-dim tensor."));
        }
        if step <= 0 {
            return Err(Error::value("slice step must be positive"));
        }
        let d = wrap_dim(dim, self.ndim())?;
        let len = self.shape[d] as i64;
        let mut s = start.unwrap_or(0);
        let mut e = end.unwrap_or(i64::MAX);
        if s < 0 {
            s += len;
        }
        if e < 0 {
            e += len;
        }
        s = s.clamp(0, len);
        e = if e < s { s } else { e.min(len) };
        let mut v = self.clone();
        v.offset = (self.offset as isize + s as isize * self.strides[d]) as usize;
        v.shape[d] = ((e - s) as u64).div_ceil(step as u64) as usize;
        v.strides[d] = self.strides[d].saturating_mul(step as isize);
        Ok(v)
    }

    /// `narrow(dim, start, length)`.
    pub fn narrow(&self, dim: i64, start: i64, length: i64) -> Result<View> {
        if self.ndim() == 0 {
            return Err(Error::index(
                "narrow() cannot be applied to a 0-dim tensor.",
            ));
        }
        let d = wrap_dim(dim, self.ndim())?;
        let size = self.shape[d] as i64;
        if start < -size || start > size {
            return Err(Error::index(format!(
                "start out of range (expected to be in range of [{}, {size}], but got {start})",
                -size
            )));
        }
        let s = if start < 0 { start + size } else { start };
        if length < 0 {
            return Err(Error::value("narrow(): length must be non-negative."));
        }
        if length > size - s {
            return Err(Error::index(format!(
                "start ({s}) + length ({length}) exceeds dimension size ({size})."
            )));
        }
        self.slice(d as i64, Some(s), Some(s + length), 1)
    }

    /// `unsqueeze(dim)`: the new dim's stride is `size·stride` of the dim it precedes, or 1 at the end.
    pub fn unsqueeze(&self, dim: i64) -> Result<View> {
        let d = wrap_dim(dim, self.ndim() + 1)?;
        let stride = if d < self.ndim() {
            self.shape[d] as isize * self.strides[d]
        } else {
            1
        };
        let mut v = self.clone();
        v.shape.insert(d, 1);
        v.strides.insert(d, stride);
        Ok(v)
    }

    /// `squeeze()` (all size-1 dims) or `squeeze(dims)` (listed dims of size 1).
    pub fn squeeze(&self, dims: Option<&[i64]>) -> Result<View> {
        let keep: Vec<bool> = match dims {
            None => self.shape.iter().map(|&n| n != 1).collect(),
            Some(ds) => {
                let ds = wrap_dims(ds, self.ndim())?;
                (0..self.ndim())
                    .map(|d| !(ds.contains(&d) && self.shape[d] == 1))
                    .collect()
            }
        };
        let mut v = View {
            shape: Dims::new(),
            strides: Dims::new(),
            offset: self.offset,
            read: self.read,
        };
        for (d, _) in keep.iter().enumerate().filter(|(_, k)| **k) {
            v.shape.push(self.shape[d]);
            v.strides.push(self.strides[d]);
        }
        Ok(v)
    }

    /// `permute(dims)`.
    pub fn permute(&self, dims: &[i64]) -> Result<View> {
        let n = self.ndim();
        if dims.len() != n {
            return Err(Error::shape(format!(
                "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = {n} is not equal to len(dims) = {}",
                dims.len()
            )));
        }
        let mut perm = Vec::with_capacity(n);
        for &d in dims {
            let w = wrap_dim(d, n)?;
            if perm.contains(&w) {
                return Err(Error::value("permute(): duplicate dims are not allowed."));
            }
            perm.push(w);
        }
        Ok(View {
            shape: perm.iter().map(|&p| self.shape[p]).collect(),
            strides: perm.iter().map(|&p| self.strides[p]).collect(),
            offset: self.offset,
            read: self.read,
        })
    }

    /// `transpose(dim0, dim1)`.
    pub fn transpose(&self, dim0: i64, dim1: i64) -> Result<View> {
        let a = wrap_dim(dim0, self.ndim())?;
        let b = wrap_dim(dim1, self.ndim())?;
        let mut v = self.clone();
        if self.ndim() > 0 {
            v.shape.swap(a, b);
            v.strides.swap(a, b);
        }
        Ok(v)
    }

    /// `t()`: transpose of a ≤ 2-D view.
    pub fn t(&self) -> Result<View> {
        if self.ndim() > 2 {
            return Err(Error::shape(format!(
                "t() expects a tensor with <= 2 dimensions, but self is {}D",
                self.ndim()
            )));
        }
        self.transpose(0, if self.ndim() < 2 { 0 } else { 1 })
    }

    /// `mT`: transpose of the last two dims.
    pub fn mt(&self) -> Result<View> {
        if self.ndim() == 1 {
            return Err(Error::shape(
                "tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.",
            ));
        }
        if self.ndim() == 0 {
            return Ok(self.clone());
        }
        self.transpose(-2, -1)
    }

    /// `movedim(source, destination)`.
    pub fn movedim(&self, source: &[i64], destination: &[i64]) -> Result<View> {
        let n = self.ndim();
        if source.len() != destination.len() {
            return Err(Error::value(format!(
                "movedim: Invalid source or destination dims: source ({} dims) should contain the same number of dims as destination ({} dims)",
                fmt_list(source),
                fmt_list(destination)
            )));
        }
        let src = wrap_dims(source, n).map_err(|_| {
            Error::value(format!(
                "movedim: repeated dim in `source` ({})",
                fmt_list(source)
            ))
        });
        // Range errors take precedence over repeat errors, as in PyTorch.
        for &d in source.iter().chain(destination) {
            wrap_dim(d, n)?;
        }
        let src = src?;
        if n == 0 {
            return Ok(self.clone());
        }
        let dst = wrap_dims(destination, n).map_err(|_| {
            Error::value(format!(
                "movedim: repeated dim in `destination` ({})",
                fmt_list(destination)
            ))
        })?;
        let mut perm: Vec<Option<usize>> = vec![None; n];
        for (&s, &d) in src.iter().zip(&dst) {
            perm[d] = Some(s);
        }
        let mut rest = (0..n).filter(|d| !src.contains(d));
        let perm: Vec<i64> = perm
            .into_iter()
            .map(|p| p.or_else(|| rest.next()).expect("movedim fills every slot") as i64)
            .collect();
        self.permute(&perm)
    }

    /// `expand(sizes)` (SEMANTICS.md §2.2); `-1` keeps a dim.
    pub fn expand(&self, sizes: &[i64]) -> Result<View> {
        let n = self.ndim();
        let m = sizes.len();
        if m < n {
            return Err(Error::shape(format!(
                "expand(torch.FloatTensor{{{}}}, size={}): the number of sizes provided ({m}) must be greater or equal to the number of dimensions in the tensor ({n})",
                fmt_list(&self.shape),
                fmt_list(sizes)
            )));
        }
        let mut shape = vec![0usize; m];
        let mut strides = vec![0isize; m];
        for i in (0..m).rev() {
            let offset = m - 1 - i;
            let target = sizes[i];
            if offset < n {
                let d = n - 1 - offset;
                let (size, stride) = (self.shape[d], self.strides[d]);
                if target == -1 || target as usize == size && target >= 0 {
                    shape[i] = size;
                    strides[i] = stride;
                } else if size == 1 && target >= 0 {
                    shape[i] = target as usize;
                    strides[i] = 0;
                } else {
                    return Err(Error::shape(format!(
                        "The expanded size of the tensor ({target}) must match the existing size ({size}) at non-singleton dimension {i}.  Target sizes: {}.  Tensor sizes: {}",
                        fmt_list(sizes),
                        fmt_list(&self.shape)
                    )));
                }
            } else {
                if target < 0 {
                    return Err(Error::value(format!(
                        "The expanded size of the tensor ({target}) isn't allowed in a leading, non-existing dimension {i}"
                    )));
                }
                shape[i] = target as usize;
                strides[i] = if target == 1 && i + 1 < m {
                    shape[i + 1] as isize * strides[i + 1]
                } else if target == 1 {
                    1
                } else {
                    0
                };
            }
        }
        if n == 0 {
            strides.iter_mut().for_each(|s| *s = 0);
        }
        check_sizes(&shape, 1)?;
        Ok(View {
            shape: shape.into(),
            strides: strides.into(),
            offset: self.offset,
            read: self.read,
        })
    }

    /// `diagonal(offset, dim1, dim2)` (SEMANTICS.md §2.3).
    pub fn diagonal(&self, offset: i64, dim1: i64, dim2: i64) -> Result<View> {
        let d1 = wrap_dim(dim1, self.ndim())?;
        let d2 = wrap_dim(dim2, self.ndim())?;
        if d1 == d2 {
            return Err(Error::value(format!(
                "diagonal dimensions cannot be identical {dim1}, {dim2}"
            )));
        }
        let (s1, s2) = (self.shape[d1] as i64, self.shape[d2] as i64);
        let len = if offset >= 0 {
            (s1.min(s2 - offset)).max(0)
        } else {
            (s1 + offset).min(s2).max(0)
        };
        let mut v = View {
            shape: Dims::new(),
            strides: Dims::new(),
            offset: self.offset,
            read: self.read,
        };
        if len > 0 {
            let shift = if offset >= 0 {
                offset as isize * self.strides[d2]
            } else {
                -offset as isize * self.strides[d1]
            };
            v.offset = (self.offset as isize + shift) as usize;
        }
        for d in 0..self.ndim() {
            if d != d1 && d != d2 {
                v.shape.push(self.shape[d]);
                v.strides.push(self.strides[d]);
            }
        }
        v.shape.push(len as usize);
        v.strides.push(self.strides[d1] + self.strides[d2]);
        Ok(v)
    }

    /// `unfold(dimension, size, step)` (SEMANTICS.md §2.4).
    pub fn unfold(&self, dim: i64, size: i64, step: i64) -> Result<View> {
        let d = wrap_dim(dim, self.ndim())?;
        let (dim_size, dim_stride) = if self.ndim() == 0 {
            (1, 1)
        } else {
            (self.shape[d] as i64, self.strides[d])
        };
        if size > dim_size {
            return Err(Error::shape(format!(
                "maximum size for tensor at dimension {d} is {dim_size} but size is {size}"
            )));
        }
        if size < 0 {
            return Err(Error::value(format!("size is {size} but must be >= 0")));
        }
        if step <= 0 {
            return Err(Error::value(format!("step is {step} but must be > 0")));
        }
        let mut v = self.clone();
        if self.ndim() > 0 {
            v.shape[d] = ((dim_size - size) / step + 1) as usize;
            v.strides[d] = (step as isize).saturating_mul(dim_stride);
        }
        v.shape.push(size as usize);
        v.strides.push(dim_stride);
        Ok(v)
    }

    /// `as_strided(size, stride, storage_offset)` checked against a storage of `storage_len` elements.
    pub fn as_strided(
        shape: &[i64],
        strides: &[i64],
        offset: i64,
        storage_len: usize,
        itemsize: usize,
    ) -> Result<View> {
        if shape.len() != strides.len() {
            return Err(Error::shape("mismatch in length of strides and shape"));
        }
        if strides.iter().any(|&s| s < 0) {
            return Err(Error::value(format!(
                "as_strided: Negative strides are not supported at the moment, got strides: {}",
                fmt_list(strides)
            )));
        }
        if offset < 0 {
            return Err(Error::value(format!(
                "Tensor: invalid storage offset {offset}"
            )));
        }
        let numel = shape.iter().try_fold(1i64, |acc, &s| acc.checked_mul(s));
        if shape.iter().any(|&s| s < 0) || numel.is_none() {
            return Err(Error::value(format!(
                "Storage size calculation overflowed with sizes={}",
                fmt_list(shape)
            )));
        }
        // Bounds in i128 so that no size, stride or offset can overflow the check itself.
        let hi = shape
            .iter()
            .zip(strides)
            .fold(offset as i128, |acc, (&n, &s)| {
                acc + (n as i128 - 1) * s as i128
            });
        let addressable = hi < isize::MAX as i128;
        let v = View {
            shape: shape.iter().map(|&s| s as usize).collect(),
            strides: strides.iter().map(|&s| s as isize).collect(),
            offset: offset as usize,
            read: Reading::PLAIN,
        };
        if numel != Some(0) {
            let needed = hi + 1;
            if !addressable || needed > storage_len as i128 {
                return Err(Error::index(format!(
                    "setStorage: sizes {}, strides {}, storage offset {offset}, and itemsize {itemsize} requiring a storage size of {} are out of bounds for storage of size {}",
                    fmt_list(shape),
                    fmt_list(strides),
                    needed * itemsize as i128,
                    storage_len as u128 * itemsize as u128
                )));
            }
        }
        Ok(v)
    }

    /// `view(shape)`: `Err(stride)` when the strides make it impossible.
    pub fn view(&self, shape: &[i64]) -> Result<View> {
        let new_shape = infer_size(shape, self.numel())?;
        match view_strides(&self.shape, &self.strides, &new_shape) {
            Some(strides) => Ok(View {
                shape: new_shape.into(),
                strides,
                offset: self.offset,
                read: self.read,
            }),
            None => Err(Error::stride(
                "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.",
            )),
        }
    }

    /// `unflatten(dim, sizes)`.
    pub fn unflatten(&self, dim: i64, sizes: &[i64]) -> Result<View> {
        if self.ndim() == 0 {
            // PyTorch's `self.size(dim)` does not wrap a 0-dim tensor's dim.
            return Err(Error::index(format!(
                "unflatten got an unexpected error: Dimension specified as {dim} but tensor has no dimensions"
            )));
        }
        let d = wrap_dim(dim, self.ndim())?;
        if sizes.is_empty() {
            return Err(Error::value("unflatten: sizes must be non-empty"));
        }
        let inner = infer_size(sizes, self.shape.get(d).copied().unwrap_or(1)).map_err(|e| {
            if e.kind == crate::ErrorKind::Value {
                Error::value(format!("unflatten got an unexpected error: {}", e.message))
            } else {
                Error::shape(format!(
                    "unflatten: Provided sizes {} don't multiply up to the size of dim {d} ({}) in the input tensor",
                    fmt_list(sizes),
                    self.shape.get(d).copied().unwrap_or(1)
                ))
            }
        })?;
        let mut shape: Vec<i64> = self.shape.iter().map(|&s| s as i64).collect();
        if self.ndim() == 0 {
            shape = inner.iter().map(|&s| s as i64).collect();
        } else {
            shape.splice(d..=d, inner.iter().map(|&s| s as i64));
        }
        self.view(&shape)
    }

    /// Pieces of `split(split_size, dim)`.
    pub fn split(&self, split_size: i64, dim: i64) -> Result<Vec<View>> {
        if self.ndim() == 0 {
            return Err(Error::value(
                "split expects at least a 1-dimensional tensor",
            ));
        }
        let d = wrap_dim(dim, self.ndim())?;
        let size = self.shape[d] as i64;
        if split_size < 0 {
            return Err(Error::value(format!(
                "split expects split_size be non-negative, but got split_size={split_size}"
            )));
        }
        if split_size == 0 && size != 0 {
            return Err(Error::value(format!(
                "split_size can only be 0 if dimension size is 0, but got dimension size of {size}"
            )));
        }
        let pieces = if split_size == 0 {
            1
        } else {
            (size as u64).div_ceil(split_size as u64).max(1) as i64
        };
        (0..pieces)
            .map(|i| {
                let start = i * split_size;
                let len = if i == pieces - 1 {
                    size - start
                } else {
                    split_size
                };
                self.narrow(d as i64, start, len)
            })
            .collect()
    }

    /// Pieces of `split_with_sizes(sizes, dim)`.
    pub fn split_with_sizes(&self, sizes: &[i64], dim: i64) -> Result<Vec<View>> {
        if self.ndim() == 0 {
            return Err(Error::value(
                "split expects at least a 1-dimensional tensor",
            ));
        }
        let d = wrap_dim(dim, self.ndim())?;
        if sizes.iter().any(|&s| s < 0) {
            return Err(Error::value(format!(
                "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes={}",
                fmt_list(sizes)
            )));
        }
        let total = sizes.iter().try_fold(0i64, |acc, &s| acc.checked_add(s));
        if total != Some(self.shape[d] as i64) {
            return Err(Error::value(format!(
                "split_with_sizes expects split_sizes to sum exactly to {} (input tensor's size at dimension {d}), but got split_sizes={}",
                self.shape[d],
                fmt_list(sizes)
            )));
        }
        let mut start = 0;
        sizes
            .iter()
            .map(|&len| {
                let v = self.narrow(d as i64, start, len);
                start += len;
                v
            })
            .collect()
    }

    /// Pieces of `chunk(chunks, dim)` (may be fewer than `chunks`).
    pub fn chunk(&self, chunks: i64, dim: i64) -> Result<Vec<View>> {
        if self.ndim() == 0 {
            return Err(Error::value(
                "chunk expects at least a 1-dimensional tensor",
            ));
        }
        if chunks <= 0 {
            return Err(Error::value(format!(
                "chunk expects `chunks` to be greater than 0, got: {chunks}"
            )));
        }
        let d = wrap_dim(dim, self.ndim())?;
        let size = self.shape[d] as i64;
        if size == 0 {
            let mut out = piece_list("chunk", chunks)?;
            for _ in 0..chunks {
                out.push(self.narrow(d as i64, 0, 0)?);
            }
            return Ok(out);
        }
        self.split((size as u64).div_ceil(chunks as u64) as i64, d as i64)
    }

    /// Pieces of `tensor_split(sections, dim)`.
    pub fn tensor_split_sections(&self, sections: i64, dim: i64) -> Result<Vec<View>> {
        if self.ndim() == 0 {
            return Err(Error::value(
                "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims",
            ));
        }
        // PyTorch 2.15 wraps the dim before it looks at the section count.
        let d = wrap_dim(dim, self.ndim())?;
        if sections <= 0 {
            return Err(Error::value(format!(
                "number of sections must be larger than 0, got {sections}"
            )));
        }
        let size = self.shape[d] as i64;
        let (q, r) = (size / sections, size % sections);
        let mut out = piece_list("tensor_split", sections)?;
        let mut start = 0;
        for i in 0..sections {
            let len = q + (i < r) as i64;
            out.push(self.slice(d as i64, Some(start), Some(start + len), 1)?);
            start += len;
        }
        Ok(out)
    }

    /// Pieces of `tensor_split(indices, dim)`.
    pub fn tensor_split_indices(&self, indices: &[i64], dim: i64) -> Result<Vec<View>> {
        if self.ndim() == 0 {
            return Err(Error::value(
                "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims",
            ));
        }
        let d = wrap_dim(dim, self.ndim())?;
        let mut out = Vec::with_capacity(indices.len() + 1);
        let mut prev = 0;
        for &i in indices {
            out.push(self.slice(d as i64, Some(prev), Some(i), 1)?);
            prev = i;
        }
        out.push(self.slice(d as i64, Some(prev), None, 1)?);
        Ok(out)
    }

    /// Views of `unbind(dim)`.
    pub fn unbind(&self, dim: i64) -> Result<Vec<View>> {
        if self.ndim() == 0 {
            return Err(Error::index(
                "Dimension specified as 0 but tensor has no dimensions",
            ));
        }
        let d = wrap_dim(dim, self.ndim())?;
        (0..self.shape[d] as i64)
            .map(|i| self.select(d as i64, i))
            .collect()
    }

    /// Is this the whole of a storage of `len` elements, in row-major order?
    pub fn is_identity_of(&self, len: usize) -> bool {
        self.offset == 0 && self.is_contiguous() && self.numel() == len
    }

    /// Broadcast strides to `out_shape` (SEMANTICS.md §4.1 step 3): missing leading dims and
    /// broadcast dims get stride 0.
    pub fn broadcast_to(&self, out_shape: &[usize]) -> View {
        let n = self.ndim();
        let m = out_shape.len();
        let mut strides = Dims::filled(0isize, m);
        for i in 0..n {
            let o = m - n + i;
            strides[o] = if self.shape[i] == 1 && out_shape[o] != 1 {
                0
            } else {
                self.strides[i]
            };
        }
        View {
            shape: out_shape.into(),
            strides,
            offset: self.offset,
            read: self.read,
        }
    }
}

/// Output strides of an elementwise op (SEMANTICS.md §4.1) for inputs `inputs` (already the
/// inputs' own views, not broadcast) producing `out_shape`.
pub fn elementwise_out_strides(out_shape: &[usize], inputs: &[&View]) -> Dims<isize> {
    let n = out_shape.len();
    if n == 0 {
        return Dims::new();
    }
    let same_shape = inputs.iter().all(|v| v.shape == out_shape);
    let mixed = inputs.iter().any(|v| v.ndim() == 0) && inputs.iter().any(|v| v.ndim() > 0);
    if !inputs.is_empty() && same_shape && !mixed {
        if inputs.iter().all(|v| v.is_contiguous()) {
            return contiguous_strides(out_shape);
        }
        if inputs
            .iter()
            .all(|v| v.is_contiguous_as(MemoryFormat::ChannelsLast))
            && n == 4
        {
            return format_strides(out_shape, MemoryFormat::ChannelsLast).expect("rank checked");
        }
        if inputs
            .iter()
            .all(|v| v.is_contiguous_as(MemoryFormat::ChannelsLast3d))
            && n == 5
        {
            return format_strides(out_shape, MemoryFormat::ChannelsLast3d).expect("rank checked");
        }
        let first = &inputs[0].strides;
        if inputs
            .iter()
            .all(|v| v.is_non_overlapping_and_dense() && &v.strides == first)
        {
            return first.clone();
        }
    }
    if n == 1 {
        return contiguous_strides(out_shape);
    }
    let operands: Vec<Dims<isize>> = inputs
        .iter()
        .map(|v| v.broadcast_to(out_shape).strides)
        .collect();
    let operands: Vec<&[isize]> = operands.iter().map(|s| &s[..]).collect();
    let perm = order_dims(out_shape, &operands);
    if perm.iter().copied().eq((0..n).rev()) {
        return contiguous_strides(out_shape);
    }
    strides_from_perm(out_shape, &perm, false)
}

/// Broadcast shape of two shapes (SEMANTICS.md §5.1).
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0usize; n];
    for i in 0..n {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::shape(format!(
                "The size of tensor a ({da}) must match the size of tensor b ({db}) at non-singleton dimension {i}"
            )));
        };
    }
    check_sizes(&out, 1)?;
    Ok(out)
}

impl fmt::Display for View {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "({}):({})@{}",
            join(&self.shape),
            join(&self.strides),
            self.offset
        )?;
        // Plain readings print nothing, so dumps of real programs are unchanged.
        match self.read.parts {
            crate::reading::Parts::Whole => {}
            crate::reading::Parts::Split => f.write_str(" parts")?,
            crate::reading::Parts::Paired => f.write_str(" paired")?,
        }
        if self.read.conj {
            f.write_str(" conj")?;
        }
        if self.read.neg {
            f.write_str(" neg")?;
        }
        Ok(())
    }
}

fn join<T: fmt::Display>(xs: &[T]) -> String {
    xs.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// A matmul's views `a[*B, M, K]`, `b[*B, K, N]`, `out[*B, M, N]` as one `(B·M)×K` by `K×N`
/// product, when `b` is one matrix for every batch point (each batch dim of `b` has size 1 or
/// stride 0) and the batch dims of `a` and `out` merge with their row dim into one strided dim
/// (PyTorch's `matmul` folds the same way): `x[B, T, C] @ w[C, D]` becomes one GEMM that packs
/// `w` once instead of once per batch point, and a 2-D product is itself. Returns the folded
/// row count and the row strides of `a` and `out`.
pub fn matmul_rows(av: &View, bv: &View, ov: &View) -> Option<(usize, isize, isize)> {
    let r = ov.ndim();
    if r < 2 || !(0..r - 2).all(|d| bv.shape[d] == 1 || bv.strides[d] == 0) {
        return None;
    }
    let rows = ov.shape[..r - 1].iter().product();
    Some((rows, merged_row_stride(av)?, merged_row_stride(ov)?))
}

/// The stride of the one dim that `v`'s batch and row dims (all but the last) merge into, or
/// None when they do not merge (size-1 dims take no part).
fn merged_row_stride(v: &View) -> Option<isize> {
    let r = v.ndim();
    let mut merged: Option<(usize, isize)> = None;
    for d in (0..r - 1).rev() {
        let (size, stride) = (v.shape[d], v.strides[d]);
        if size == 1 {
            continue;
        }
        merged = match merged {
            None => Some((size, stride)),
            Some((n, s)) if stride == s * n as isize => Some((n * size, s)),
            Some(_) => return None,
        };
    }
    Some(merged.map_or(v.strides[r - 2], |(_, s)| s))
}
