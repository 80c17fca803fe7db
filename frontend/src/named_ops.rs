//! Ops that exist for names (SEMANTICS.md §7.3): setting names (`named`, `set_names`),
//! `refine_names`, `rename`, `align_to`/`align_as`, and the named forms of `flatten` and
//! `unflatten`. Name lists are `&[Option<&str>]`: `None` (or `"*"`) is an unnamed dim and,
//! where PyTorch allows it, `Some("...")` is the Ellipsis.

use crate::names::{
    self, Dim, check_no_duplicates, fmt_names, normalise, parse_name, parse_names,
    resolve_ellipsis, tensor_repr,
};
use crate::tensor::{Tensor, ok};
use crate::views::shape_i64;
use smelt_ir::view::wrap_dim;
use smelt_ir::{Error, Result, View};

fn owned(names: &[Option<&str>]) -> Vec<Option<String>> {
    names.iter().map(|n| n.map(str::to_string)).collect()
}

impl Tensor {
    /// Sets this tensor's dim names in place (Python's `t.names = [...]`; `None` drops them); every
    /// handle sharing this one's name cell sees them. Errors: a `names` error for an invalid or
    /// duplicate name or a list of the wrong length.
    pub fn try_set_names(&self, names: Option<&[Option<&str>]>) -> Result<()> {
        let stored = match names {
            None => None,
            Some(ns) => normalise(parse_names(&owned(ns))?, self.ndim())?,
        };
        self.names.set(stored);
        Ok(())
    }

    /// The tensor with these dim names: the `names=` argument of the factories (`tensor`, `zeros`,
    /// `ones`, `full`, `empty`), as a builder. Errors: a `names` error for an invalid or duplicate
    /// name or a list of the wrong length.
    #[track_caller]
    pub fn try_named(self, names: &[Option<&str>]) -> Result<Tensor> {
        let stored = normalise(parse_names(&owned(names))?, self.ndim())?;
        Ok(self.with_dim_names(stored))
    }
    /// The tensor with these dim names; panics where [`Tensor::try_named`] returns an error.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let x = Tensor::zeros(&[2, 3], None).named(&[Some("N"), Some("C")]);
    /// assert_eq!(x.sum_dim("C").names(), [Some("N".to_string())]);
    /// ```
    #[track_caller]
    pub fn named(self, names: &[Option<&str>]) -> Tensor {
        ok(self.try_named(names))
    }

    /// `tensor.refine_names(*names)`: an alias whose unnamed dims take the given names; a named dim
    /// must keep its name. One `"..."` stands for a run of dims that keep theirs. Errors: a `names`
    /// error for a named dim given another name, a list of the wrong length, or an invalid name.
    #[track_caller]
    pub fn try_refine_names(&self, names: &[Option<&str>]) -> Result<Tensor> {
        let current = self.names();
        let wanted = parse_names(&resolve_ellipsis(names, &current, "refine_names")?)?;
        let cannot = |why: String| {
            Error::names(format!(
                "refine_names: cannot coerce {} to {} because {why}",
                tensor_repr(&current),
                tensor_repr(&wanted)
            ))
        };
        if wanted.len() != current.len() {
            return Err(cannot(format!(
                "they have a different number of dims ({} and {} respectively).",
                current.len(),
                wanted.len()
            )));
        }
        check_no_duplicates(&wanted)?;
        for (i, (have, want)) in current.iter().zip(&wanted).enumerate() {
            match (have, want) {
                (None, _) => {}
                (Some(h), Some(w)) if h == w => {}
                (Some(h), None) => {
                    return Err(cannot(format!(
                        "'{h}' is more specific than None at index {i}"
                    )));
                }
                (Some(h), Some(w)) => {
                    return Err(cannot(format!(
                        "'{h}' is different from '{w}' at index {i}"
                    )));
                }
            }
        }
        let stored = normalise(wanted, self.ndim())?;
        Ok(self.alias().with_dim_names(stored))
    }
    /// `tensor.refine_names(*names)`; panics where [`Tensor::try_refine_names`] returns an error.
    #[track_caller]
    pub fn refine_names(&self, names: &[Option<&str>]) -> Tensor {
        ok(self.try_refine_names(names))
    }

    /// The names `rename(*names)` gives: `[None]` drops all (`rename(None)`), one `"..."`
    /// keeps a run of current names.
    fn renamed_positional(
        &self,
        names: &[Option<&str>],
        op: &str,
    ) -> Result<Option<names::DimNames>> {
        if names == [None] {
            return Ok(None);
        }
        let resolved = resolve_ellipsis(names, &self.names(), op)?;
        normalise(parse_names(&resolved)?, self.ndim())
    }

    /// The names `rename(**mapping)` gives: each `old` dim takes the `new` name (or none), all at
    /// once — dims are found by their names before any is renamed, so `a → b, b → a` swaps
    /// (PyTorch's `_update_names_with_mapping`).
    fn renamed_by_mapping(
        &self,
        mapping: &[(&str, Option<&str>)],
        op: &str,
    ) -> Result<Option<names::DimNames>> {
        let before = self.names();
        let mut current = before.clone();
        for &(old, new) in mapping {
            let Some(p) = before.iter().position(|n| n.as_deref() == Some(old)) else {
                let shown: Vec<String> = self
                    .names()
                    .iter()
                    .map(|n| n.as_ref().map_or("None".to_string(), |s| format!("'{s}'")))
                    .collect();
                let new = new.map_or("None".to_string(), str::to_string);
                return Err(Error::names(format!(
                    "{op}: Tried to rename dim '{old}' to dim {new} in Tensor[({})] but dim '{old}' does not exist",
                    shown.join(", ")
                )));
            };
            current[p] = new.map(str::to_string);
        }
        normalise(parse_names(&current)?, self.ndim())
    }

    /// `tensor.rename(*names)`: an alias with new names (`[None]` drops them all; one `"..."` keeps
    /// a run of current names). Errors: a `names` error for an invalid or duplicate name or a list
    /// of the wrong length.
    #[track_caller]
    pub fn try_rename(&self, names: &[Option<&str>]) -> Result<Tensor> {
        let stored = self.renamed_positional(names, "rename")?;
        Ok(self.alias().with_dim_names(stored))
    }
    /// `tensor.rename(*names)`; panics where [`Tensor::try_rename`] returns an error.
    #[track_caller]
    pub fn rename(&self, names: &[Option<&str>]) -> Tensor {
        ok(self.try_rename(names))
    }
    /// `rename(None)`: an unnamed alias.
    #[track_caller]
    pub fn drop_names(&self) -> Tensor {
        self.alias().with_dim_names(None)
    }

    /// `tensor.rename(**mapping)`: an alias where each `old` dim is renamed to `new` (or unnamed).
    /// Errors: a `names` error for an `old` name the tensor lacks, or an invalid or duplicate
    /// result.
    #[track_caller]
    pub fn try_rename_with(&self, mapping: &[(&str, Option<&str>)]) -> Result<Tensor> {
        let stored = self.renamed_by_mapping(mapping, "rename")?;
        Ok(self.alias().with_dim_names(stored))
    }

    /// `tensor.rename(**mapping)`; panics where [`Tensor::try_rename_with`] returns an error.
    #[track_caller]
    pub fn rename_with(&self, mapping: &[(&str, Option<&str>)]) -> Tensor {
        ok(self.try_rename_with(mapping))
    }

    /// `tensor.rename_(*names)`: renames this tensor in place, as [`Tensor::try_rename`].
    #[track_caller]
    pub fn try_rename_(&self, names: &[Option<&str>]) -> Result<&Tensor> {
        let stored = self.renamed_positional(names, "rename_")?;
        self.names.set(stored);
        Ok(self)
    }

    /// `tensor.align_to(*names)`: an alias with dims in the listed order; names the tensor lacks
    /// become size-1 dims of stride 0. One `"..."` stands for the unlisted dims in their order;
    /// without it every dim must be named and listed. Errors: a `names` error for an unnamed dim
    /// (without `"..."`), a dim left out, or a name listed twice.
    #[track_caller]
    pub fn try_align_to(&self, names: &[Option<&str>]) -> Result<Tensor> {
        let ellipses: Vec<usize> = (0..names.len())
            .filter(|&i| names[i] == Some("..."))
            .collect();
        if ellipses.len() > 1 {
            return Err(Error::names(format!(
                "align_to: More than one Ellipsis ('...') found in names ({}). This function supports up to one Ellipsis.",
                fmt_names(&owned(names))
            )));
        }
        let order: Vec<Option<String>> = parse_names(&owned(
            &names
                .iter()
                .copied()
                .filter(|n| *n != Some("..."))
                .collect::<Vec<_>>(),
        ))?;
        match ellipses.first() {
            Some(&e) => self.align_with_ellipsis(&order, e),
            None => self.align_exact(&order),
        }
    }
    /// `tensor.align_to(*names)`; panics where [`Tensor::try_align_to`] returns an error.
    #[track_caller]
    pub fn align_to(&self, names: &[Option<&str>]) -> Tensor {
        ok(self.try_align_to(names))
    }

    /// `tensor.align_as(other)`: [`Tensor::try_align_to`] with `other`'s names.
    #[track_caller]
    pub fn try_align_as(&self, other: &Tensor) -> Result<Tensor> {
        self.align_exact(&other.names())
    }
    /// `tensor.align_as(other)`; panics where [`Tensor::try_align_as`] returns an error.
    #[track_caller]
    pub fn align_as(&self, other: &Tensor) -> Tensor {
        ok(self.try_align_as(other))
    }

    #[track_caller]
    fn align_exact(&self, order: &[Option<String>]) -> Result<Tensor> {
        let current = self.names();
        let mut shape = vec![1usize; order.len()];
        let mut strides = vec![0isize; order.len()];
        for (i, name) in current.iter().enumerate() {
            let Some(n) = name else {
                return Err(Error::names(format!(
                    "align_to: All input dims must be named. Found unnamed dim at index {i} of {}",
                    tensor_repr(&current)
                )));
            };
            let Some(p) = order.iter().position(|o| o.as_ref() == Some(n)) else {
                return Err(Error::names(format!(
                    "align_to: Cannot find dim '{n}' from {} in desired alignment {}.",
                    tensor_repr(order),
                    fmt_names(order)
                )));
            };
            shape[p] = self.view.shape[i];
            strides[p] = self.view.strides[i];
        }
        self.aligned(shape, strides, order.to_vec())
    }

    #[track_caller]
    fn align_with_ellipsis(&self, order: &[Option<String>], ellipsis: usize) -> Result<Tensor> {
        let current = self.names();
        if order.iter().any(Option::is_none) {
            return Err(Error::names(format!(
                "align_to: the desired order of dimensions cannot contain a None name, got {}",
                fmt_names(order)
            )));
        }
        let mentioned = |n: &Option<String>| n.is_some() && order.contains(n);
        let (mut shape, mut strides, mut out) = (vec![], vec![], vec![]);
        let push_unmentioned =
            |shape: &mut Vec<usize>, strides: &mut Vec<isize>, out: &mut Vec<Option<String>>| {
                for (i, n) in current.iter().enumerate() {
                    if !mentioned(n) {
                        shape.push(self.view.shape[i]);
                        strides.push(self.view.strides[i]);
                        out.push(n.clone());
                    }
                }
            };
        for (k, name) in order.iter().enumerate() {
            if k == ellipsis {
                push_unmentioned(&mut shape, &mut strides, &mut out);
            }
            match current.iter().position(|c| c.is_some() && c == name) {
                Some(i) => {
                    shape.push(self.view.shape[i]);
                    strides.push(self.view.strides[i]);
                }
                None => {
                    shape.push(1);
                    strides.push(0);
                }
            }
            out.push(name.clone());
        }
        if ellipsis >= order.len() {
            push_unmentioned(&mut shape, &mut strides, &mut out);
        }
        self.aligned(shape, strides, out)
    }

    #[track_caller]
    fn aligned(
        &self,
        shape: Vec<usize>,
        strides: Vec<isize>,
        names: Vec<Option<String>>,
    ) -> Result<Tensor> {
        let stored = normalise(names, shape.len())?;
        let view = View::new(shape, strides, self.view.offset);
        Ok(self.with_view(view).with_dim_names(stored))
    }

    /// `torch.flatten(self, start_dim, end_dim, out_dim)`: the dims `start..=end` (positions or
    /// names) merged into one dim named `out_dim`; layout as for [`Tensor::try_flatten`]. Errors:
    /// a `value` error for `start_dim` after `end_dim`, an `index` error for a dim out of range, a
    /// `names` error for an unknown or invalid name or a name mixed with a position.
    #[track_caller]
    pub fn try_flatten_named(
        &self,
        start_dim: impl Into<Dim>,
        end_dim: impl Into<Dim>,
        out_dim: &str,
    ) -> Result<Tensor> {
        let (start_dim, end_dim) = (start_dim.into(), end_dim.into());
        if names::mixes_names_and_positions(&[start_dim.clone(), end_dim.clone()]) {
            return Err(names::no_overload(
                "flatten",
                "start_dim and end_dim must both be names or both be positions",
            ));
        }
        let s = start_dim.position(self)?;
        let e = end_dim.position(self)?;
        if s > e {
            return Err(Error::value(
                "flatten() has invalid args: start_dim cannot come after end_dim",
            ));
        }
        self.flatten_range(s, e, out_dim)
    }
    /// `torch.flatten(self, start_dim, end_dim, out_dim)`; panics where
    /// [`Tensor::try_flatten_named`] returns an error.
    #[track_caller]
    pub fn flatten_named(
        &self,
        start_dim: impl Into<Dim>,
        end_dim: impl Into<Dim>,
        out_dim: &str,
    ) -> Tensor {
        ok(self.try_flatten_named(start_dim, end_dim, out_dim))
    }

    /// `torch.flatten(self, dims, out_dim)`: the listed dims, which must be consecutive and in
    /// order, merged into one dim named `out_dim`. Errors: a `value` error for an empty list, a
    /// `names` error for dims that are not consecutive, a dim given by position (PyTorch's
    /// `flatten(dims, out_dim)` takes names only) or an unknown or invalid name.
    #[track_caller]
    pub fn try_flatten_dims(&self, dims: &[Dim], out_dim: &str) -> Result<Tensor> {
        if dims.iter().any(|d| matches!(d, Dim::Index(_))) {
            return Err(names::no_overload(
                "flatten",
                "dims with an out_dim must be names",
            ));
        }
        let positions: Vec<usize> = dims
            .iter()
            .map(|d| d.position(self))
            .collect::<Result<_>>()?;
        let Some(&first) = positions.first() else {
            return Err(Error::value(
                "flatten(tensor, dims, out_dim): dims cannot be empty",
            ));
        };
        if positions.iter().enumerate().any(|(i, &p)| p != first + i) {
            let shown: Vec<Option<String>> = dims
                .iter()
                .map(|d| match d {
                    Dim::Name(n) => Some(n.clone()),
                    Dim::Index(i) => Some(i.to_string()),
                })
                .collect();
            return Err(Error::names(format!(
                "flatten(tensor, dims, out_dim): dims {} must be consecutive in {}",
                fmt_names(&shown),
                tensor_repr(&self.names())
            )));
        }
        self.flatten_range(first, first + positions.len() - 1, out_dim)
    }

    #[track_caller]
    fn flatten_range(&self, s: usize, e: usize, out_dim: &str) -> Result<Tensor> {
        let out = parse_name(Some(out_dim))?;
        if self.ndim() == 0 {
            let flat = self.drop_names().try_reshape(&[1])?;
            return Ok(flat.alias().with_dim_names(normalise(vec![out], 1)?));
        }
        let current = self.names();
        let mut names = current[..s].to_vec();
        names.push(out);
        names.extend_from_slice(&current[e + 1..]);
        let mut shape = shape_i64(&self.view.shape[..s]);
        shape.push(self.view.shape[s..=e].iter().product::<usize>() as i64);
        shape.extend(shape_i64(&self.view.shape[e + 1..]));
        let flat = self.drop_names().try_reshape(&shape)?;
        let stored = normalise(names, flat.ndim())?;
        Ok(flat.alias().with_dim_names(stored))
    }

    /// `torch.unflatten(self, dim, sizes, names)`: `dim` split into dims of `sizes` named `names`
    /// (PyTorch's namedshape `zip(names, sizes)`). Errors: a `shape` error when the sizes do not
    /// multiply to the dim's size, a `names` error for names and sizes of different lengths, an
    /// invalid name, or a `dim` given by position (PyTorch's form takes a name) or unknown.
    #[track_caller]
    pub fn try_unflatten_named(
        &self,
        dim: impl Into<Dim>,
        sizes: &[i64],
        names: &[Option<&str>],
    ) -> Result<Tensor> {
        let Dim::Name(dim) = dim.into() else {
            return Err(names::no_overload(
                "unflatten",
                "with names for the new dims, dim must be a name",
            ));
        };
        let d = wrap_dim(names::position_of(&self.names(), &dim)?, self.ndim())?;
        let new_names = parse_names(&owned(names))?;
        if new_names.len() != sizes.len() {
            return Err(Error::names(format!(
                "unflatten: sizes and names must have the same length, got {} sizes and {} names",
                sizes.len(),
                new_names.len()
            )));
        }
        let size = self.view.shape.get(d).copied().unwrap_or(1);
        let view = self.view.unflatten(d as i64, sizes).map_err(|e| {
            if e.kind == smelt_ir::ErrorKind::Shape {
                let name = match self.names().get(d) {
                    Some(Some(n)) => format!("'{n}'"),
                    Some(None) | None => "None".to_string(),
                };
                Error::shape(format!(
                    "unflatten: Provided sizes {} don't multiply up to the size of dim {d} ({name}: {size}) in {}",
                    smelt_ir::view::fmt_list(sizes),
                    tensor_repr(&self.names())
                ))
            } else {
                e
            }
        })?;
        let mut out = self.names();
        if out.is_empty() {
            out = new_names;
        } else {
            out.splice(d..=d, new_names);
        }
        let stored = normalise(out, view.ndim())?;
        Ok(self.with_view(view).with_dim_names(stored))
    }
    /// `torch.unflatten(self, dim, sizes, names)`; panics where [`Tensor::try_unflatten_named`]
    /// returns an error.
    #[track_caller]
    pub fn unflatten_named(
        &self,
        dim: impl Into<Dim>,
        sizes: &[i64],
        names: &[Option<&str>],
    ) -> Tensor {
        ok(self.try_unflatten_named(dim, sizes, names))
    }
}
