//! Advanced indexing (integer and bool index tensors): reads gather into a copy, writes
//! scatter into a new storage version.

use crate::promote::Operand;
use crate::tensor::Tensor;
use crate::views::TensorIndex;
use smelt_ir::{Error, Result};

impl Tensor {
    /// `self[items]` where some item is a tensor.
    pub fn try_index(&self, _items: &[TensorIndex]) -> Result<Tensor> {
        Err(Error::unsupported(
            "unsupported op getitem with tensor indices (advanced indexing)",
        ))
    }

    /// `self[items] = value` where some item is a tensor.
    pub fn try_index_put(&self, _items: &[TensorIndex], _value: Operand) -> Result<()> {
        Err(Error::unsupported(
            "unsupported op setitem with tensor indices (advanced indexing)",
        ))
    }
}
