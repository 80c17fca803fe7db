//! Printing a sparse tensor as PyTorch prints one (`torch/_tensor_str.py`): the stored indices
//! and values as nested tensors, then `size`, `nnz`, the dtype when it is not implicit, and
//! the layout; the first suffix always starts a new line, later ones wrap at 80 columns.
//!
//! ```text
//! tensor(indices=tensor([[0, 1, 1],
//!                        [2, 0, 2]]),
//!        values=tensor([3., 4., 5.]),
//!        size=(2, 3), nnz=3, layout=torch.sparse_coo)
//! ```

use crate::default_dtype::get_default_dtype;
use crate::display::tensor_body;
use crate::tensor::Tensor;
use smelt_ir::{DType, Result};
use std::fmt;

/// PyTorch's line width for printing.
const LINE_WIDTH: usize = 80;
/// `tensor(`: where every line after the first starts.
const INDENT: usize = 7;

/// A Python tuple of sizes: `(2, 3)`, `(3,)`, `()`.
fn tuple(shape: &[usize]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => {
            let parts: Vec<String> = shape.iter().map(|s| s.to_string()).collect();
            format!("({})", parts.join(", "))
        }
    }
}

/// `name=tensor(<body>)`, with `, size=(..)` inside when the part is empty.
fn part(name: &str, t: &Tensor) -> Result<String> {
    let prefix = format!("{name}=tensor(");
    let mut body = tensor_body(t, INDENT + prefix.len())?;
    if t.numel() == 0 {
        body.push_str(&format!(", size={}", tuple(t.shape())));
    }
    Ok(format!("{prefix}{body})"))
}

/// PyTorch's `_add_suffixes` with `force_newline`: the first suffix on a new line, the others
/// appended while the line stays within [`LINE_WIDTH`].
fn add_suffixes(text: &str, suffixes: &[String]) -> String {
    let mut out = text.to_string();
    let mut last_line = text.len() - text.rfind('\n').map_or(0, |i| i + 1) + 1;
    let mut force = true;
    for s in suffixes {
        if force || last_line + s.len() + 2 > LINE_WIDTH {
            out.push_str(&format!(",\n{}{s}", " ".repeat(INDENT)));
            last_line = INDENT + s.len();
            force = false;
        } else {
            out.push_str(&format!(", {s}"));
            last_line += s.len() + 2;
        }
    }
    out.push(')');
    out
}

/// The whole printed form of sparse `t`.
fn render(t: &Tensor) -> Result<String> {
    let coo = t.coo().expect("invariant: printing a sparse tensor");
    let text = format!(
        "tensor({},\n{}{}",
        part("indices", &coo.indices)?,
        " ".repeat(INDENT),
        part("values", &coo.values)?
    );
    let mut suffixes = vec![
        format!("size={}", tuple(t.shape())),
        format!("nnz={}", coo.nnz()),
    ];
    let dtype = t.dtype();
    if !(dtype == get_default_dtype() || dtype == DType::I64 || dtype == DType::Bool) {
        suffixes.push(format!("dtype=torch.{dtype}"));
    }
    suffixes.push(format!("layout={}", t.layout()));
    Ok(add_suffixes(&text, &suffixes))
}

/// `Display` of a sparse tensor (realizes its indices and values).
pub(crate) fn fmt_sparse(t: &Tensor, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match render(t) {
        Ok(s) => f.write_str(&s),
        Err(e) => write!(f, "tensor(<error: {e}>)"),
    }
}

#[cfg(test)]
mod tests {
    use crate::tensor::Tensor;

    #[test]
    fn prints_as_pytorch_prints_a_sparse_tensor() {
        let i = Tensor::new([[0i64, 1, 1], [2, 0, 2]]);
        let s = Tensor::sparse_coo_tensor(&i, &Tensor::new([3.0f32, 4.0, 5.0]), Some(&[2, 3]));
        assert_eq!(
            s.to_string(),
            "tensor(indices=tensor([[0, 1, 1],\n                       [2, 0, 2]]),\n       \
             values=tensor([3., 4., 5.]),\n       size=(2, 3), nnz=3, layout=torch.sparse_coo)"
        );
        let empty = Tensor::sparse_coo_tensor(
            &Tensor::zeros_dtype(&[1, 0], smelt_ir::DType::I64),
            &Tensor::zeros_dtype(&[0, 2], smelt_ir::DType::F64),
            Some(&[3, 2]),
        );
        assert_eq!(
            empty.to_string(),
            "tensor(indices=tensor([], size=(1, 0)),\n       values=tensor([], size=(0, 2)),\n       \
             size=(3, 2), nnz=0, dtype=torch.float64, layout=torch.sparse_coo)"
        );
    }
}
