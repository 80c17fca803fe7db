//! Dimension names (named tensors, SEMANTICS.md §7, PyTorch 2.11): validation, unification
//! from the right, lookups of a dim by name, and PyTorch's error messages. Names are checked
//! and propagated when an op is called; they never reach the graph IR or a kernel.

use crate::promote::{AsOperand, OperandRef};
use crate::tensor::Tensor;
use smelt_ir::{Error, Result};
use std::sync::{Arc, Mutex, OnceLock};

/// One name (or `None`, an unnamed dim) per dimension. A tensor whose names are all `None`
/// stores no list at all (it is *unnamed*).
pub type DimNames = Arc<[Option<String>]>;

/// A tensor handle's names. Clones of a handle share it (they are the same PyTorch tensor
/// object, whose names an in-place op may set); every view op makes a new one. The shared
/// cell is allocated only when a handle is first cloned or named: most tensors are neither,
/// and recording an op then allocates nothing for its names.
#[derive(Default)]
pub(crate) struct NameCell(OnceLock<Arc<Mutex<Option<DimNames>>>>);

impl Clone for NameCell {
    /// The same cell: created here when this handle has none yet, so the two handles share it.
    fn clone(&self) -> NameCell {
        NameCell(OnceLock::from(self.shared().clone()))
    }
}

impl NameCell {
    pub(crate) fn new(names: Option<DimNames>) -> NameCell {
        match names {
            None => NameCell::default(),
            Some(names) => NameCell(OnceLock::from(Arc::new(Mutex::new(Some(names))))),
        }
    }
    /// The cell clones share, created on first use.
    fn shared(&self) -> &Arc<Mutex<Option<DimNames>>> {
        self.0.get_or_init(|| Arc::new(Mutex::new(None)))
    }
    pub(crate) fn get(&self) -> Option<DimNames> {
        let cell = self.0.get()?;
        cell.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
    pub(crate) fn set(&self, names: Option<DimNames>) {
        *self.shared().lock().unwrap_or_else(|p| p.into_inner()) = names;
    }
    /// Does the cell hold names? (No clone of them.)
    pub(crate) fn is_named(&self) -> bool {
        self.0
            .get()
            .is_some_and(|cell| cell.lock().unwrap_or_else(|p| p.into_inner()).is_some())
    }
    /// Sets the names when no other handle shares this cell (so the change is unobservable);
    /// gives them back, nothing changed, when another handle shares it.
    pub(crate) fn set_unshared(&mut self, names: Option<DimNames>) -> Result<(), Option<DimNames>> {
        match self.0.get_mut() {
            None => *self = NameCell::new(names),
            Some(cell) => match Arc::get_mut(cell) {
                Some(cell) => *cell.get_mut().unwrap_or_else(|p| p.into_inner()) = names,
                None => return Err(names),
            },
        }
        Ok(())
    }
}

/// A dimension argument: a position (negative counts from the end) or a name, for the ops
/// that accept either (`select`, `transpose`, `squeeze`, `unbind`, `diagonal`, `cat`,
/// `flatten`, `unflatten`; reductions, softmax and cumsum adopt it the same way).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dim {
    /// A position; negative counts from the end.
    Index(i64),
    /// A dim name, looked up in the tensor's names.
    Name(String),
}

impl From<i64> for Dim {
    fn from(d: i64) -> Dim {
        Dim::Index(d)
    }
}
impl From<i32> for Dim {
    fn from(d: i32) -> Dim {
        Dim::Index(d as i64)
    }
}
impl From<usize> for Dim {
    fn from(d: usize) -> Dim {
        Dim::Index(d as i64)
    }
}
impl From<&str> for Dim {
    fn from(n: &str) -> Dim {
        Dim::Name(n.to_string())
    }
}
impl From<String> for Dim {
    fn from(n: String) -> Dim {
        Dim::Name(n)
    }
}
impl From<&Dim> for Dim {
    fn from(d: &Dim) -> Dim {
        d.clone()
    }
}

impl Dim {
    /// The position this dim stands for in `t`: an index is returned unwrapped (the op wraps
    /// it with its own range check), a name is looked up in `t`'s names.
    pub fn resolve(&self, t: &Tensor) -> Result<i64> {
        match self {
            Dim::Index(i) => Ok(*i),
            Dim::Name(n) => position_of(&t.names(), n),
        }
    }

    /// The wrapped position of this dim in `t` (`Dimension out of range` is an `index` error).
    pub fn position(&self, t: &Tensor) -> Result<usize> {
        smelt_ir::view::wrap_dim(self.resolve(t)?, t.ndim())
    }
}

/// Where `name` sits in `names`; `Name 'X' not found in Tensor['N', 'C'].` otherwise.
pub(crate) fn position_of(names: &[Option<String>], name: &str) -> Result<i64> {
    names
        .iter()
        .position(|n| n.as_deref() == Some(name))
        .map(|p| p as i64)
        .ok_or_else(|| {
            Error::names(format!(
                "Name '{name}' not found in {}.",
                tensor_repr(names)
            ))
        })
}

/// `['N', None]`, as PyTorch prints a name list.
pub(crate) fn fmt_names(names: &[Option<String>]) -> String {
    let items: Vec<String> = names
        .iter()
        .map(|n| match n {
            Some(s) => format!("'{s}'"),
            None => "None".to_string(),
        })
        .collect();
    format!("[{}]", items.join(", "))
}

/// `Tensor['N', None]`.
pub(crate) fn tensor_repr(names: &[Option<String>]) -> String {
    format!("Tensor{}", fmt_names(names))
}

/// The error of every op PyTorch 2.11 refuses on named tensors.
pub(crate) fn unsupported(op: &str) -> Error {
    Error::names(format!(
        "aten::{op} is not yet supported with named tensors. Please drop names via `tensor = tensor.rename(None)`, call the op with an unnamed tensor, and set names on the result of the operation."
    ))
}

/// The error of a form PyTorch 2.11 has no overload for (its `TypeError`): dims given by name
/// where the op takes positions, or names and positions mixed. `rule` says what the op takes.
pub(crate) fn no_overload(op: &str, rule: &str) -> Error {
    Error::names(format!(
        "{op}: {rule} (PyTorch 2.11 has no overload of {op} for this mix of names and positions)"
    ))
}

/// Are some of `dims` names and some positions?
pub(crate) fn mixes_names_and_positions(dims: &[Dim]) -> bool {
    dims.iter().any(|d| matches!(d, Dim::Name(_)))
        && dims.iter().any(|d| matches!(d, Dim::Index(_)))
}

/// Refuses `op` when any of `tensors` has a name.
pub(crate) fn refuse_named<'a>(
    op: &str,
    tensors: impl IntoIterator<Item = &'a Tensor>,
) -> Result<()> {
    if tensors.into_iter().any(Tensor::has_names) {
        return Err(unsupported(op));
    }
    Ok(())
}

/// Refuses `op` when any tensor operand has a name.
pub(crate) fn refuse_named_operands(op: &str, operands: &[&dyn AsOperand]) -> Result<()> {
    refuse_named(
        op,
        operands.iter().filter_map(|o| match o.operand() {
            OperandRef::Tensor(t) => Some(t),
            OperandRef::Scalar(_) => None,
        }),
    )
}

/// Checks that `name` is a valid identifier (letters, digits, `_`, not starting with a digit).
pub(crate) fn check_identifier(name: &str) -> Result<()> {
    let mut chars = name.chars();
    let valid = match chars.next() {
        Some(c) => {
            (c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    };
    if !valid {
        return Err(Error::names(format!(
            "Invalid name: a valid identifier contains only digits, alphabetical characters, and/or underscore and starts with a non-digit. got: '{name}'."
        )));
    }
    Ok(())
}

/// A user-given name: `None` and `"*"` are the wildcard, anything else must be an identifier.
pub(crate) fn parse_name(name: Option<&str>) -> Result<Option<String>> {
    match name {
        None | Some("*") => Ok(None),
        Some(n) => {
            check_identifier(n)?;
            Ok(Some(n.to_string()))
        }
    }
}

/// Validates a full name list for a tensor of `ndim` dims (count, duplicates) and normalises
/// an all-`None` list to unnamed.
pub(crate) fn normalise(names: Vec<Option<String>>, ndim: usize) -> Result<Option<DimNames>> {
    if names.len() != ndim {
        return Err(Error::names(format!(
            "Number of names ({}) and number of dimensions in tensor ({ndim}) do not match. Attempted to create a tensor with names {}",
            names.len(),
            fmt_names(&names)
        )));
    }
    check_no_duplicates(&names)?;
    if names.iter().all(Option::is_none) {
        return Ok(None);
    }
    Ok(Some(names.into()))
}

pub(crate) fn check_no_duplicates(names: &[Option<String>]) -> Result<()> {
    for (i, n) in names.iter().enumerate() {
        if n.is_some() && names[..i].contains(n) {
            return Err(Error::names(format!(
                "Cannot construct a tensor with duplicate names. Got names: {}.",
                fmt_names(names)
            )));
        }
    }
    Ok(())
}

/// Names of the output of a broadcasting op (PyTorch's `unify_from_right`): right-align the
/// lists; per position None∪X = X, X∪X = X, X∪Y is an error; a name present in both lists
/// must sit at the same position from the right. `action` names the op in messages.
pub(crate) fn unify_from_right(
    a: &[Option<String>],
    b: &[Option<String>],
    action: &str,
) -> Result<Vec<Option<String>>> {
    let size = a.len().max(b.len());
    let mut out = vec![None; size];
    for k in 0..size {
        let x = if k < a.len() {
            &a[a.len() - 1 - k]
        } else {
            &None
        };
        let y = if k < b.len() {
            &b[b.len() - 1 - k]
        } else {
            &None
        };
        out[size - 1 - k] = match (x, y) {
            (Some(p), Some(q)) if p != q => {
                return Err(Error::names(format!(
                    "Error when attempting to {action} dims {} and dims {}: dim '{p}' and dim '{q}' are at the same position from the right but do not match.",
                    fmt_names(a),
                    fmt_names(b)
                )));
            }
            (Some(p), _) | (None, Some(p)) => Some(p.clone()),
            (None, None) => None,
        };
        if x.is_none() || y.is_none() {
            check_misaligned(x, a, b, action)?;
            check_misaligned(y, b, a, action)?;
        }
    }
    Ok(out)
}

fn check_misaligned(
    name: &Option<String>,
    names: &[Option<String>],
    others: &[Option<String>],
    action: &str,
) -> Result<()> {
    if let Some(n) = name
        && others.contains(name)
    {
        return Err(Error::names(format!(
            "Misaligned dims when attempting to {action} dims {} and dims {}: dim '{n}' appears in a different position from the right across both lists.",
            fmt_names(names),
            fmt_names(others)
        )));
    }
    Ok(())
}

/// Unified names of a broadcasting op's tensor operands (scalars take no part); unnamed when
/// no operand has a name.
pub(crate) fn unify_operands(
    operands: &[&dyn AsOperand],
    action: &str,
) -> Result<Option<DimNames>> {
    if !operands
        .iter()
        .any(|o| matches!(o.operand(), OperandRef::Tensor(t) if t.has_names()))
    {
        return Ok(None);
    }
    let tensors: Vec<&Tensor> = operands
        .iter()
        .filter_map(|o| match o.operand() {
            OperandRef::Tensor(t) => Some(t),
            OperandRef::Scalar(_) => None,
        })
        .collect();
    unify_tensors(&tensors, action)
}

/// Unified names of several tensors; unnamed when none has a name.
pub(crate) fn unify_tensors(tensors: &[&Tensor], action: &str) -> Result<Option<DimNames>> {
    if !tensors.iter().any(|t| t.has_names()) {
        return Ok(None);
    }
    let mut names: Option<Vec<Option<String>>> = None;
    for t in tensors {
        let own = t.names();
        names = Some(match names {
            None => own,
            Some(acc) => unify_from_right(&acc, &own, action)?,
        });
    }
    Ok(to_dim_names(names.unwrap_or_default()))
}

/// A name list as stored: all-`None` becomes unnamed.
pub(crate) fn to_dim_names(names: Vec<Option<String>>) -> Option<DimNames> {
    if names.iter().all(Option::is_none) {
        None
    } else {
        Some(names.into())
    }
}

/// Names without the dims at positions `drop` (ops that remove dims: select, unbind,
/// squeeze, reductions without keepdim).
pub(crate) fn drop_dims(names: Option<DimNames>, drop: &[usize]) -> Option<DimNames> {
    let names = names?;
    to_dim_names(
        names
            .iter()
            .enumerate()
            .filter(|(i, _)| !drop.contains(i))
            .map(|(_, n)| n.clone())
            .collect(),
    )
}

/// The out/in-place rule: an unnamed `out` receives `computed`; a named one must equal it.
pub(crate) fn check_out_names(out: &Tensor, computed: &Option<DimNames>) -> Result<()> {
    let Some(own) = out.dim_names() else {
        return Ok(());
    };
    let computed_list: Vec<Option<String>> = match computed {
        Some(c) => c.to_vec(),
        None => vec![None; out.ndim()],
    };
    if *own != *computed_list {
        return Err(Error::names(format!(
            "Name mismatch: specified out tensor with names {} are not the same as the computed output names {}. Please rename the out tensor's dims with `Tensor.rename`.",
            fmt_names(&own),
            fmt_names(&computed_list)
        )));
    }
    Ok(())
}

/// Python's `resolve_ellipsis`: at most one `"..."`, which stands for the names of `current`
/// at those positions (with Python's slicing, quirks included).
pub(crate) fn resolve_ellipsis(
    names: &[Option<&str>],
    current: &[Option<String>],
    op: &str,
) -> Result<Vec<Option<String>>> {
    let ellipses: Vec<usize> = names
        .iter()
        .enumerate()
        .filter(|(_, n)| **n == Some("..."))
        .map(|(i, _)| i)
        .collect();
    let owned = |ns: &[Option<&str>]| -> Vec<Option<String>> {
        ns.iter().map(|n| n.map(str::to_string)).collect()
    };
    match ellipses.as_slice() {
        [] => Ok(owned(names)),
        [i] => {
            let len = current.len() as i64;
            let post = (names.len() - i - 1) as i64;
            let start = (*i as i64).min(len);
            let mut stop = len - post;
            if stop < 0 {
                stop = (stop + len).max(0);
            }
            let globbed = if stop > start {
                current[start as usize..stop as usize].to_vec()
            } else {
                vec![]
            };
            let mut out = owned(&names[..*i]);
            out.extend(globbed);
            out.extend(owned(&names[i + 1..]));
            Ok(out)
        }
        _ => {
            let shown: Vec<String> = names
                .iter()
                .map(|n| match n {
                    Some(s) => format!("'{s}'"),
                    None => "None".to_string(),
                })
                .collect();
            Err(Error::names(format!(
                "{op}: More than one Ellipsis ('...') found in names (({})). This function supports up to one Ellipsis.",
                shown.join(", ")
            )))
        }
    }
}

/// Validates user-given names (identifiers, `None`/`"*"` wildcards).
pub(crate) fn parse_names(names: &[Option<String>]) -> Result<Vec<Option<String>>> {
    names.iter().map(|n| parse_name(n.as_deref())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(v: &[Option<&str>]) -> Vec<Option<String>> {
        v.iter().map(|s| s.map(str::to_string)).collect()
    }

    #[test]
    fn unify_from_right_rules() {
        let nc = n(&[Some("N"), Some("C")]);
        let r = unify_from_right(&nc, &n(&[Some("N"), Some("D")]), "broadcast");
        let e = r.unwrap_err();
        assert_eq!(e.kind, smelt_ir::ErrorKind::Names);
        assert!(
            e.to_string()
                .contains("dim 'C' and dim 'D' are at the same position"),
            "{e}"
        );
        let r = unify_from_right(&n(&[None, Some("N")]), &n(&[Some("N"), None]), "broadcast");
        let e = r.unwrap_err();
        assert!(e.to_string().contains("Misaligned dims"), "{e}");
        let r = unify_from_right(&n(&[Some("N"), None]), &n(&[Some("C")]), "broadcast");
        assert_eq!(r.unwrap(), nc);
        let r = unify_from_right(&n(&[Some("N"), None]), &n(&[None, Some("C")]), "broadcast");
        assert_eq!(r.unwrap(), nc);
    }

    #[test]
    fn identifiers() {
        assert!(check_identifier("_a1").is_ok());
        assert!(check_identifier("1a").is_err());
        assert!(check_identifier("").is_err());
        assert!(check_identifier("a-b").is_err());
    }

    #[test]
    fn ellipsis_globs_like_python_slicing() {
        let cur = n(&[Some("A"), Some("B"), Some("C")]);
        let r = resolve_ellipsis(&[Some("X"), Some("...")], &cur, "rename").unwrap();
        assert_eq!(r, n(&[Some("X"), Some("B"), Some("C")]));
        let r = resolve_ellipsis(&[Some("..."), Some("...")], &cur, "rename");
        assert!(r.is_err());
    }
}
