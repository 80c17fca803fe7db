//! `Display` in PyTorch's print format (`tensor([[1., 2.], [3., 4.]])`, `tensor([1.+2.j])`);
//! printing realizes. The rules are `torch/_tensor_str.py`'s: one formatter per tensor (for a
//! complex tensor one for the real parts and one for the imaginary parts) sees the values that
//! are printed (the edges when more than 1000 elements are summarized) and fixes a common
//! width, integer mode and scientific notation; rows of a 1-D slice wrap at 80 columns.

use crate::default_dtype::get_default_dtype;
use crate::tensor::Tensor;
use smelt_ir::scalar::default_complex;
use smelt_ir::{DType, Scalar};
use std::fmt;

const EDGE_ITEMS: usize = 3;
const THRESHOLD: usize = 1000;
const LINE_WIDTH: usize = 80;
const PRECISION: usize = 4;

/// How every value of one tensor (or of one part of a complex tensor) is printed:
/// PyTorch's `_Formatter`.
struct Formatter {
    float: bool,
    int_mode: bool,
    sci: bool,
    width: usize,
}

/// Python's `f"{x:.{p}e}"`: Rust prints `1.0000e3`, Python `1.0000e+03`.
fn sci(x: f64) -> String {
    let s = format!("{x:.PRECISION$e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = e.strip_prefix('-').map(|d| ('-', d)).unwrap_or(('+', e));
            format!("{m}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

impl Formatter {
    /// A formatter for the values of a float tensor (or the parts of a complex one).
    fn floats(values: &[f64]) -> Formatter {
        let mut f = Formatter {
            float: true,
            int_mode: true,
            sci: false,
            width: 1,
        };
        let nonzero: Vec<f64> = values
            .iter()
            .copied()
            .filter(|x| x.is_finite() && *x != 0.0)
            .collect();
        if nonzero.is_empty() {
            return f;
        }
        let max = nonzero.iter().map(|x| x.abs()).fold(f64::MIN, f64::max);
        let min = nonzero.iter().map(|x| x.abs()).fold(f64::MAX, f64::min);
        f.int_mode = nonzero.iter().all(|x| *x == x.ceil());
        let wide = max / min > 1000.0 || max > 1.0e8;
        f.sci = if f.int_mode {
            wide
        } else {
            wide || min < 1.0e-4
        };
        f.width = nonzero
            .iter()
            .map(|&x| {
                if f.sci {
                    sci(x).len()
                } else if f.int_mode {
                    format!("{x:.0}").len() + 1
                } else {
                    format!("{x:.PRECISION$}").len()
                }
            })
            .max()
            .unwrap_or(1);
        f
    }

    /// A formatter for bool or integer values: the widest value's width.
    fn exact(values: &[Scalar]) -> Formatter {
        let mut f = Formatter {
            float: false,
            int_mode: false,
            sci: false,
            width: 1,
        };
        f.width = values
            .iter()
            .map(|v| f.exact_str(*v).len())
            .fold(1, usize::max);
        f
    }

    fn exact_str(&self, v: Scalar) -> String {
        match v {
            Scalar::Bool(b) => if b { "True" } else { "False" }.to_string(),
            Scalar::Int(_) | Scalar::Float(_) | Scalar::Complex(..) => v.as_i64().to_string(),
        }
    }

    /// `value` padded on the left to the common width.
    fn format(&self, v: Scalar) -> String {
        let s = if !self.float {
            self.exact_str(v)
        } else {
            let x = v.as_f64();
            if x.is_nan() {
                "nan".to_string()
            } else if x.is_infinite() {
                if x > 0.0 { "inf" } else { "-inf" }.to_string()
            } else if self.sci {
                sci(x)
            } else if self.int_mode {
                format!("{x:.0}.")
            } else {
                format!("{x:.PRECISION$}")
            }
        };
        format!("{s:>width$}", width = self.width)
    }
}

/// The formatters of a tensor: one, or one per part of a complex tensor.
enum Formatters {
    Real(Formatter),
    Complex(Formatter, Formatter),
}

impl Formatters {
    fn new(dtype: DType, printed: &[Scalar]) -> Formatters {
        if dtype.is_complex() {
            let (re, im): (Vec<f64>, Vec<f64>) = printed.iter().map(|v| v.as_complex()).unzip();
            Formatters::Complex(Formatter::floats(&re), Formatter::floats(&im))
        } else if dtype.is_float() {
            let values: Vec<f64> = printed.iter().map(|v| v.as_f64()).collect();
            Formatters::Real(Formatter::floats(&values))
        } else {
            Formatters::Real(Formatter::exact(printed))
        }
    }

    /// Columns one element takes in a row, with its separator.
    fn element_width(&self) -> usize {
        match self {
            Formatters::Real(f) => f.width + 2,
            // The imaginary part's width, and its `j`.
            Formatters::Complex(re, im) => re.width + 2 + im.width + 1,
        }
    }

    fn format(&self, v: Scalar) -> String {
        match self {
            Formatters::Real(f) => f.format(v),
            Formatters::Complex(re, im) => {
                let (x, y) = v.as_complex();
                let real = re.format(Scalar::Float(x));
                let imag = format!("{}j", im.format(Scalar::Float(y)));
                let imag = imag.trim_start();
                if imag.starts_with(['+', '-']) {
                    format!("{real}{imag}")
                } else {
                    format!("{real}+{imag}")
                }
            }
        }
    }
}

/// The indices along a dim of `n` that are printed (`None`: the ellipsis).
fn shown(n: usize, summarize: bool) -> Vec<Option<usize>> {
    if summarize && n > 2 * EDGE_ITEMS {
        (0..EDGE_ITEMS)
            .map(Some)
            .chain(std::iter::once(None))
            .chain((n - EDGE_ITEMS..n).map(Some))
            .collect()
    } else {
        (0..n).map(Some).collect()
    }
}

/// The values that are printed (PyTorch's `get_summarized_data`), in order.
fn printed(values: &[Scalar], shape: &[usize], summarize: bool, out: &mut Vec<Scalar>) {
    let Some((&n, rest)) = shape.split_first() else {
        out.push(values[0]);
        return;
    };
    let inner: usize = rest.iter().product();
    for i in shown(n, summarize).into_iter().flatten() {
        printed(&values[i * inner..(i + 1) * inner], rest, summarize, out);
    }
}

fn write_dim(
    out: &mut String,
    f: &Formatters,
    values: &[Scalar],
    shape: &[usize],
    indent: usize,
    summarize: bool,
) {
    let Some((&n, rest)) = shape.split_first() else {
        out.push_str(&f.format(values[0]));
        return;
    };
    let inner: usize = rest.iter().product();
    if rest.is_empty() {
        // A row: its elements, wrapped to the line width.
        let items: Vec<String> = shown(n, summarize)
            .into_iter()
            .map(|i| match i {
                Some(i) => f.format(values[i]),
                None => " ...".to_string(),
            })
            .collect();
        let per_line = (LINE_WIDTH.saturating_sub(indent) / f.element_width()).max(1);
        let lines: Vec<String> = items.chunks(per_line).map(|l| l.join(", ")).collect();
        out.push('[');
        out.push_str(&lines.join(&format!(",\n{}", " ".repeat(indent + 1))));
        out.push(']');
        return;
    }
    out.push('[');
    for (k, i) in shown(n, summarize).into_iter().enumerate() {
        if k > 0 {
            out.push(',');
            out.push_str(&"\n".repeat(shape.len() - 1));
            out.push_str(&" ".repeat(indent + 1));
        }
        match i {
            None => out.push_str("..."),
            Some(i) => write_dim(
                out,
                f,
                &values[i * inner..(i + 1) * inner],
                rest,
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
    // The logical values: a conjugate or negative view prints what it reads.
    let values = t.try_to_scalars()?;
    let mut body = String::new();
    if t.numel() == 0 {
        body.push_str("[]");
    } else {
        let summarize = t.numel() > THRESHOLD;
        let mut shown_values = vec![];
        printed(&values, t.shape(), summarize, &mut shown_values);
        let f = Formatters::new(t.dtype(), &shown_values);
        write_dim(&mut body, &f, &values, t.shape(), indent, summarize);
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
        let default = get_default_dtype();
        let implicit = dtype == default
            || dtype == default_complex(default)
            || dtype == DType::I64
            || dtype == DType::Bool;
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

#[cfg(test)]
mod tests {
    use crate::Tensor;
    use smelt_ir::{DType, Scalar};

    fn complex(parts: &[(f64, f64)], shape: &[usize], dtype: DType) -> Tensor {
        let values: Vec<Scalar> = parts
            .iter()
            .map(|&(re, im)| Scalar::Complex(re, im))
            .collect();
        Tensor::from_scalars(&values, shape, dtype)
    }

    /// Strings PyTorch 2.x prints for the same tensors.
    #[test]
    fn complex_tensors_print_as_pytorch_prints_them() {
        let t = complex(&[(1.0, 2.0), (3.0, -4.0)], &[2], DType::C64);
        assert_eq!(t.to_string(), "tensor([1.+2.j, 3.-4.j])");
        let t = complex(&[(1.5, -0.25), (0.0, 2.0)], &[2], DType::C64);
        assert_eq!(t.to_string(), "tensor([1.5000-0.2500j, 0.0000+2.0000j])");
        let t = complex(&[(1.0, 0.0)], &[], DType::C128);
        assert_eq!(t.to_string(), "tensor(1.+0.j, dtype=torch.complex128)");
        let t = complex(&[(-1.0, -0.0), (10.0, 1.0)], &[1, 2], DType::C64);
        assert_eq!(t.to_string(), "tensor([[-1.-0.j, 10.+1.j]])");
        // The conjugate view prints its values.
        let t = complex(&[(1.0, 2.0)], &[1], DType::C64).conj();
        assert_eq!(t.to_string(), "tensor([1.-2.j])");
    }

    #[test]
    fn long_rows_wrap_and_summaries_keep_pytorchs_ellipsis() {
        let t = Tensor::arange_dtype(1000, 3000, 1, DType::F32);
        assert_eq!(
            t.to_string(),
            "tensor([1000., 1001., 1002.,  ..., 2997., 2998., 2999.])"
        );
        // Each part has its own formatter: integral real parts, fractional imaginary ones.
        let values: Vec<Scalar> = (0..12).map(|i| Scalar::Complex(i as f64, 0.5)).collect();
        let t = Tensor::from_scalars(&values, &[12], DType::C64);
        assert_eq!(
            t.to_string(),
            "tensor([ 0.+0.5000j,  1.+0.5000j,  2.+0.5000j,  3.+0.5000j,  4.+0.5000j,  5.+0.5000j,\n\
            \x20        6.+0.5000j,  7.+0.5000j,  8.+0.5000j,  9.+0.5000j, 10.+0.5000j, 11.+0.5000j])"
        );
        // Zeros and non-finite values do not widen the others.
        let t = Tensor::new([1.0f32, f32::INFINITY, 0.0]);
        assert_eq!(t.to_string(), "tensor([1., inf, 0.])");
    }
}
