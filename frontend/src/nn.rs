//! `torch.nn.functional`'s layer norm and GELU, composed from primitives (STYLE rule 1) as
//! PyTorch's CPU kernels compute them: float16/bfloat16 inputs compute in float32 and round
//! once at the end.

use crate::names::refuse_named;
use crate::tensor::{Tensor, ok};
use smelt_ir::view::fmt_list;
use smelt_ir::{Error, Result};

/// `sqrt(2 / π)`, the tanh approximation's scale (PyTorch's `M_SQRT2 * M_2_SQRTPI * 0.5`).
const GELU_BETA: f64 = std::f64::consts::SQRT_2 * std::f64::consts::FRAC_2_SQRT_PI * 0.5;
/// The tanh approximation's cubic coefficient.
const GELU_KAPPA: f64 = 0.044715;

impl Tensor {
    /// [`Tensor::layer_norm`] returning a `Result`: a `shape` error when the input's trailing
    /// dims are not `normalized_shape` or a weight or bias has another shape, a `dtype` error
    /// for an integer or bool input or a weight or bias of another dtype than the input, a
    /// `names` error for a named tensor.
    #[track_caller]
    pub fn try_layer_norm(
        &self,
        normalized_shape: &[usize],
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Result<Tensor> {
        let operands = [Some(self), weight, bias];
        refuse_named("layer_norm", operands.into_iter().flatten())?;
        let (shape, k) = (self.shape(), normalized_shape.len());
        if k == 0 {
            return Err(Error::value(
                "layer_norm: Expected normalized_shape to be at least 1-dimensional, i.e., \
                 containing at least one element, but got normalized_shape = []",
            ));
        }
        if shape.len() < k || shape[shape.len() - k..] != *normalized_shape {
            return Err(Error::shape(format!(
                "layer_norm: Given normalized_shape={}, expected input with shape [*, {}], but got input of size{}",
                fmt_list(normalized_shape),
                normalized_shape
                    .iter()
                    .map(|n| n.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                fmt_list(shape)
            )));
        }
        let dtype = self.dtype();
        if !dtype.is_float() {
            return Err(Error::dtype(format!(
                "layer_norm: \"LayerNormKernelImpl\" not implemented for '{}'",
                dtype.torch_name()
            )));
        }
        for (what, t) in [("weight", weight), ("bias", bias)] {
            let Some(t) = t else { continue };
            if t.shape() != normalized_shape {
                return Err(Error::shape(format!(
                    "layer_norm: Expected {what} to be of same shape as normalized_shape, but got {what} of shape {} and normalized_shape = {}",
                    fmt_list(t.shape()),
                    fmt_list(normalized_shape)
                )));
            }
            if t.dtype() != dtype {
                return Err(Error::dtype(format!(
                    "layer_norm: expected {what} of dtype {} (the input's), got {}",
                    dtype.torch_name(),
                    t.dtype().torch_name()
                )));
            }
        }
        let dims: Vec<i64> = (shape.len() - k..shape.len()).map(|d| d as i64).collect();
        let compute = dtype.compute_dtype();
        let x = self.try_to_dtype(compute, false)?;
        let mean = x.try_mean(&dims[..], true, None)?;
        let var = x.try_var(&dims[..], 0.0, true)?;
        let mut y = x.try_sub(&mean)?.try_mul(var.try_add(eps)?.try_rsqrt()?)?;
        if let Some(w) = weight {
            y = y.try_mul(w.try_to_dtype(compute, false)?)?;
        }
        if let Some(b) = bias {
            y = y.try_add(b.try_to_dtype(compute, false)?)?;
        }
        y.try_to_dtype(dtype, false)
    }

    /// `torch.nn.functional.layer_norm(self, normalized_shape, weight, bias, eps)`: each
    /// slice over the trailing `normalized_shape` dims centred on its mean and scaled by
    /// `1 / sqrt(var + eps)` (the biased variance), then times `weight` plus `bias`.
    /// float16/bfloat16 inputs compute in float32 and round once.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let x = Tensor::new([[1.0f32, 3.0], [2.0, 2.0]]);
    /// let y = x.layer_norm(&[2], None, None, 1e-5).to_vec::<f32>();
    /// let want = [-1.0f32, 1.0, 0.0, 0.0];
    /// assert!(y.iter().zip(want).all(|(y, w)| (y - w).abs() < 1e-5), "{y:?}");
    /// ```
    ///
    /// Panics where [`Tensor::try_layer_norm`] returns an error.
    #[track_caller]
    pub fn layer_norm(
        &self,
        normalized_shape: &[usize],
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Tensor {
        ok(self.try_layer_norm(normalized_shape, weight, bias, eps))
    }

    /// [`Tensor::gelu`] returning a `Result`: a `value` error for an `approximate` other than
    /// `"none"` or `"tanh"`, a `dtype` error for an integer or bool input.
    #[track_caller]
    pub fn try_gelu(&self, approximate: &str) -> Result<Tensor> {
        let tanh = match approximate {
            "none" => false,
            "tanh" => true,
            _ => {
                return Err(Error::value(
                    "gelu: approximate argument must be either none or tanh.",
                ));
            }
        };
        let dtype = self.dtype();
        if !dtype.is_float() {
            return Err(Error::dtype(format!(
                "gelu: \"GeluKernelImpl\" not implemented for '{}'",
                dtype.torch_name()
            )));
        }
        let x = self.try_to_dtype(dtype.compute_dtype(), false)?;
        // PyTorch's CPU kernel: 0.5·x·(1 + tanh(β·(x + κ·x³))), or 0.5·x·(1 + erf(x/√2)).
        let t = if tanh {
            let cube = x.try_mul(&x)?.try_mul(&x)?;
            let inner = x.try_add(cube.try_mul(GELU_KAPPA)?)?.try_mul(GELU_BETA)?;
            inner.try_tanh()?
        } else {
            x.try_mul(std::f64::consts::FRAC_1_SQRT_2)?.try_erf()?
        };
        let y = x.try_mul(0.5)?.try_mul(t.try_add(1.0)?)?;
        Ok(y.try_to_dtype(dtype, false)?
            .with_dim_names(self.dim_names()))
    }

    /// `torch.nn.functional.gelu(self, approximate=approximate)`: `x·Φ(x)`, exactly
    /// (`"none"`: `0.5·x·(1 + erf(x/√2))`) or by GPT-2's tanh approximation (`"tanh"`:
    /// `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`). float16/bfloat16 inputs compute in
    /// float32 and round once; names carry over.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let x = Tensor::new([-1.0f32, 0.0, 2.0]);
    /// let y = x.gelu("tanh").to_vec::<f32>();
    /// assert!((y[0] + 0.158808).abs() < 1e-6 && y[1] == 0.0 && (y[2] - 1.954598).abs() < 1e-6);
    /// ```
    ///
    /// Panics where [`Tensor::try_gelu`] returns an error.
    #[track_caller]
    pub fn gelu(&self, approximate: &str) -> Tensor {
        ok(self.try_gelu(approximate))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smelt_ir::{DType, ErrorKind};

    #[test]
    fn layer_norm_matches_pytorch_values() {
        // torch.nn.functional.layer_norm(x, (3,), w, b, 1e-5), torch 2.15.
        let x = Tensor::new([[1.0f32, 2.0, 4.0], [-1.0, 0.5, 0.25]]);
        let w = Tensor::new([1.0f32, 0.5, 2.0]);
        let b = Tensor::new([0.0f32, 0.1, -0.2]);
        let y = x.layer_norm(&[3], Some(&w), Some(&b), 1e-5).to_vec::<f32>();
        let want = [
            -1.069_041_4,
            -0.033_630_14,
            2.472_603_6,
            -1.396_985_2,
            0.544_495_3,
            0.815_989_2,
        ];
        for (g, w) in y.iter().zip(want) {
            assert!((g - w).abs() < 2e-6, "{y:?} vs {want:?}");
        }
    }

    #[test]
    fn gelu_matches_pytorch_values() {
        // torch.nn.functional.gelu(x) and gelu(x, approximate="tanh"), torch 2.15.
        let x = Tensor::new([-3.0f32, -0.5, 0.1, 1.5]);
        let exact = [-0.004_050_225, -0.154_268_77, 0.053_982_783, 1.399_789_1];
        let tanh = [-0.003_637_433, -0.154_286, 0.053_982_753, 1.399_571_5];
        for (approx, want) in [("none", exact), ("tanh", tanh)] {
            let y = x.gelu(approx).to_vec::<f32>();
            for (g, w) in y.iter().zip(want) {
                assert!((g - w).abs() < 1e-6, "{approx}: {y:?} vs {want:?}");
            }
        }
        // bfloat16 computes in float32 and rounds once: torch gives 1.3984375 for 1.5.
        let h = x.to_dtype(DType::BF16).gelu("tanh");
        assert_eq!(h.dtype(), DType::BF16);
        assert_eq!(h.to_dtype(DType::F32).to_vec::<f32>()[3], 1.398_437_5);
    }

    #[test]
    fn errors_name_the_op_and_the_rule() {
        let x = Tensor::new([[1.0f32, 2.0], [3.0, 4.0]]);
        let e = x.try_layer_norm(&[3], None, None, 1e-5).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Shape);
        assert!(
            e.message.contains("expected input with shape [*, 3]"),
            "{e}"
        );
        let w = Tensor::new([1.0f32, 2.0, 3.0]);
        let e = x.try_layer_norm(&[2], Some(&w), None, 1e-5).unwrap_err();
        assert!(e.message.contains("weight of shape [3]"), "{e}");
        let w64 = Tensor::new([1.0f64, 2.0]);
        let e = x.try_layer_norm(&[2], None, Some(&w64), 1e-5).unwrap_err();
        assert_eq!(e.kind, ErrorKind::DType);
        let e = x.try_layer_norm(&[], None, None, 1e-5).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Value);
        let i = Tensor::new([1i64, 2]);
        assert_eq!(
            i.try_layer_norm(&[2], None, None, 1e-5).unwrap_err().kind,
            ErrorKind::DType
        );
        assert_eq!(i.try_gelu("none").unwrap_err().kind, ErrorKind::DType);
        let e = x.try_gelu("exact").unwrap_err();
        assert_eq!(e.kind, ErrorKind::Value);
        assert!(e.message.contains("none or tanh"), "{e}");
    }
}
