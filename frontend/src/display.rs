//! `Display` in PyTorch's print format (`tensor([[1., 2.], [3., 4.]])`); printing realizes.

use crate::default_dtype::get_default_dtype;
use crate::tensor::Tensor;
use smelt_ir::{DType, Scalar};
use std::fmt;

const EDGE_ITEMS: usize = 3;
const THRESHOLD: usize = 1000;

/// How every element of one tensor is printed (fixed width, shared precision).
struct Formatter {
    int_mode: bool,
    sci: bool,
    width: usize,
}

impl Formatter {
    fn new(dtype: DType, values: &[Scalar]) -> Formatter {
        let mut f = Formatter {
            int_mode: true,
            sci: false,
            width: 1,
        };
        if dtype.is_float() {
            let finite: Vec<f64> = values
                .iter()
                .map(|v| v.as_f64())
                .filter(|x| x.is_finite())
                .collect();
            f.int_mode = finite.iter().all(|x| x.fract() == 0.0);
            let nonzero: Vec<f64> = finite
                .iter()
                .map(|x| x.abs())
                .filter(|&x| x != 0.0)
                .collect();
            if let (Some(max), Some(min)) = (
                nonzero.iter().cloned().reduce(f64::max),
                nonzero.iter().cloned().reduce(f64::min),
            ) {
                f.sci = max / min > 1000.0 || max > 1e8 || (!f.int_mode && min < 1e-4);
            }
        }
        f.width = values.iter().map(|v| f.raw(*v).len()).max().unwrap_or(1);
        f
    }

    fn raw(&self, v: Scalar) -> String {
        match v {
            Scalar::Bool(b) => if b { "True" } else { "False" }.to_string(),
            Scalar::Int(i) => i.to_string(),
            Scalar::Float(x) => {
                if x.is_nan() {
                    "nan".to_string()
                } else if x.is_infinite() {
                    if x > 0.0 { "inf" } else { "-inf" }.to_string()
                } else if self.sci {
                    let s = format!("{x:.4e}");
                    // Rust prints `1.0000e3`; PyTorch prints `1.0000e+03`.
                    match s.split_once('e') {
                        Some((m, e)) => {
                            let (sign, digits) =
                                e.strip_prefix('-').map(|d| ('-', d)).unwrap_or(('+', e));
                            format!("{m}e{sign}{digits:0>2}")
                        }
                        None => s,
                    }
                } else if self.int_mode {
                    format!("{x:.0}.")
                } else {
                    format!("{x:.4}")
                }
            }
        }
    }

    fn cell(&self, v: Scalar) -> String {
        format!("{:>width$}", self.raw(v), width = self.width)
    }
}

fn write_dim(
    out: &mut String,
    f: &Formatter,
    values: &[Scalar],
    shape: &[usize],
    indent: usize,
    summarize: bool,
) {
    if shape.is_empty() {
        out.push_str(&f.cell(values[0]));
        return;
    }
    let n = shape[0];
    let inner: usize = shape[1..].iter().product();
    let indices: Vec<Option<usize>> = if summarize && n > 2 * EDGE_ITEMS {
        (0..EDGE_ITEMS)
            .map(Some)
            .chain(std::iter::once(None))
            .chain((n - EDGE_ITEMS..n).map(Some))
            .collect()
    } else {
        (0..n).map(Some).collect()
    };
    out.push('[');
    for (k, i) in indices.iter().enumerate() {
        if k > 0 {
            if shape.len() == 1 {
                out.push_str(", ");
            } else {
                out.push(',');
                out.push_str(&"\n".repeat(shape.len() - 1));
                out.push_str(&" ".repeat(indent + 1));
            }
        }
        match i {
            None => out.push_str("..."),
            Some(i) => write_dim(
                out,
                f,
                &values[i * inner..(i + 1) * inner],
                &shape[1..],
                indent + 1,
                summarize,
            ),
        }
    }
    out.push(']');
}

/// The bracketed elements of a strided tensor (PyTorch's `_tensor_str`), continuation lines
/// indented by `indent`: `[]` when empty.
pub(crate) fn tensor_body(t: &Tensor, indent: usize) -> smelt_ir::Result<String> {
    let values = t.try_to_scalars()?;
    let f = Formatter::new(t.dtype(), &values);
    let mut body = String::new();
    if t.numel() == 0 {
        body.push_str("[]");
    } else {
        write_dim(
            &mut body,
            &f,
            &values,
            t.shape(),
            indent,
            t.numel() > THRESHOLD,
        );
    }
    Ok(body)
}

impl fmt::Display for Tensor {
    fn fmt(&self, fm: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_sparse() {
            return crate::sparse::fmt_sparse(self, fm);
        }
        let body = match tensor_body(self, 7) {
            Ok(b) => b,
            Err(e) => return write!(fm, "tensor(<error: {e}>)"),
        };
        let dtype = self.dtype();
        let mut suffix = String::new();
        if self.numel() == 0 && self.ndim() > 1 {
            let dims: Vec<String> = self.shape().iter().map(|s| s.to_string()).collect();
            suffix.push_str(&format!(", size=({})", dims.join(", ")));
        }
        let implicit = dtype == get_default_dtype() || dtype == DType::I64 || dtype == DType::Bool;
        if !implicit {
            suffix.push_str(&format!(", dtype=torch.{dtype}"));
        }
        if self.has_names() {
            let names: Vec<String> = self
                .names()
                .iter()
                .map(|n| n.as_ref().map_or("None".to_string(), |s| format!("'{s}'")))
                .collect();
            let trailing = if names.len() == 1 { "," } else { "" };
            suffix.push_str(&format!(", names=({}{trailing})", names.join(", ")));
        }
        write!(fm, "tensor({body}{suffix})")
    }
}
