//! Runs one step of a case: maps the op name of FORMAT.md §9 to smelt's API (`try_` forms,
//! so error kinds come back as values).

use super::args::Args;
use smelt_frontend::{
    BinaryOp, DType, Dim, Error, MemoryFormat, Result, RoundingMode, Scalar, Tensor, UnaryOp,
    set_default_dtype,
};

/// What a step produced: tensors to bind (in `let` order), or nothing.
pub type Produced = Vec<Tensor>;

fn one(t: Result<Tensor>) -> Result<Produced> {
    t.map(|t| vec![t])
}

fn unary(a: &Args, op: UnaryOp) -> Result<Produced> {
    one(a.tensor("self")?.try_unary(op))
}

fn binary(a: &Args, op: BinaryOp) -> Result<Produced> {
    one(a.tensor("self")?.try_binary(a.operand("other")?, op))
}

fn rounding(a: &Args) -> Result<Option<RoundingMode>> {
    Ok(match a.string("rounding_mode")?.as_deref() {
        None => None,
        Some("trunc") => Some(RoundingMode::Trunc),
        Some("floor") => Some(RoundingMode::Floor),
        Some(other) => {
            return Err(Error::value(format!(
                "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{other}'"
            )));
        }
    })
}

/// Applies the `names` argument of a factory, when given.
fn named(a: &Args, t: Result<Tensor>) -> Result<Produced> {
    let t = t?;
    if !a.has("names") {
        return Ok(vec![t]);
    }
    let names = a.names("names")?;
    one(t.try_named(&refs(&names)))
}

fn refs(names: &[Option<String>]) -> Vec<Option<&str>> {
    names.iter().map(Option::as_deref).collect()
}

fn size(a: &Args) -> Result<Vec<i64>> {
    a.ints("size")
}

/// The `dim` of a reduction: absent (every dim), an int or a name, or a list of them (empty =
/// every dim).
fn dims(a: &Args) -> Result<Vec<Dim>> {
    if a.is_list("dim") {
        a.dims("dim")
    } else if a.has("dim") {
        Ok(vec![a.dim("dim")?])
    } else {
        Ok(vec![])
    }
}

/// The `dim` of the reductions that take only ints (amax, amin, count_nonzero).
fn int_dims(a: &Args) -> Result<Vec<i64>> {
    if a.has("dim") {
        a.ints("dim")
    } else {
        Ok(vec![])
    }
}

/// An optional dim (an int or a name).
fn opt_dim(a: &Args, key: &str) -> Result<Option<Dim>> {
    if a.has(key) {
        a.dim(key).map(Some)
    } else {
        Ok(None)
    }
}

/// Executes op `name` with `a`.
pub fn run_op(name: &str, a: &Args) -> Result<Produced> {
    let s = || a.tensor("self");
    match name {
        // ---- creation ----
        "tensor" => {
            let shape: Vec<usize> = a
                .ints("shape")?
                .iter()
                .map(|&d| d.max(0) as usize)
                .collect();
            let data = match a.map.get("data") {
                Some(serde_json::Value::Array(items)) => items,
                _ => return Err(Error::value("tensor: `data` is not a list")),
            };
            let values: Vec<Scalar> = data
                .iter()
                .map(|v| {
                    super::args::scalar_of(v)
                        .ok_or_else(|| Error::value(format!("tensor: bad element {v}")))
                })
                .collect::<Result<_>>()?;
            let dtype = match a.dtype("dtype")? {
                Some(d) => d,
                None if !values.is_empty()
                    && values.iter().all(|v| matches!(v, Scalar::Bool(_))) =>
                {
                    DType::Bool
                }
                None if !values.is_empty()
                    && values.iter().all(|v| matches!(v, Scalar::Int(_))) =>
                {
                    DType::I64
                }
                None => smelt_frontend::get_default_dtype(),
            };
            if values.len() != shape.iter().product::<usize>() {
                return Err(Error::shape("tensor: data does not match shape"));
            }
            named(a, Tensor::try_from_scalars(&values, &shape, dtype))
        }
        "zeros" => named(a, Tensor::try_zeros(&size(a)?, a.dtype("dtype")?)),
        "ones" => named(a, Tensor::try_ones(&size(a)?, a.dtype("dtype")?)),
        "empty" => named(a, Tensor::try_empty(&size(a)?, a.dtype("dtype")?)),
        "full" => named(
            a,
            Tensor::try_full(&size(a)?, a.scalar("fill_value")?, a.dtype("dtype")?),
        ),
        "zeros_like" => {
            one(s()?.try_zeros_like(a.dtype("dtype")?, a.memory_format("memory_format")?))
        }
        "ones_like" => {
            one(s()?.try_ones_like(a.dtype("dtype")?, a.memory_format("memory_format")?))
        }
        "empty_like" => {
            one(s()?.try_empty_like(a.dtype("dtype")?, a.memory_format("memory_format")?))
        }
        "full_like" => one(s()?.try_full_like(
            a.scalar("fill_value")?,
            a.dtype("dtype")?,
            a.memory_format("memory_format")?,
        )),
        "empty_strided" => one(Tensor::try_empty_strided(
            &size(a)?,
            &a.ints("stride")?,
            a.dtype("dtype")?,
        )),
        "empty_permuted" => one(Tensor::try_empty_permuted(
            &size(a)?,
            &a.ints("physical_layout")?,
            a.dtype("dtype")?,
        )),
        "arange" => {
            let start = if a.has("start") {
                a.scalar("start")?
            } else {
                Scalar::Int(0)
            };
            let step = if a.has("step") {
                a.scalar("step")?
            } else {
                Scalar::Int(1)
            };
            one(Tensor::try_arange(
                start,
                a.scalar("end")?,
                step,
                a.dtype("dtype")?,
            ))
        }
        "linspace" => one(Tensor::try_linspace(
            a.scalar("start")?,
            a.scalar("end")?,
            a.int("steps")?,
            a.dtype("dtype")?,
        )),
        "eye" => one(Tensor::try_eye(
            a.int("n")?,
            a.opt_int("m")?,
            a.dtype("dtype")?,
        )),
        "set_default_dtype" => {
            let d = a
                .dtype("dtype")?
                .ok_or_else(|| Error::value("set_default_dtype: missing dtype"))?;
            smelt_frontend::try_set_default_dtype(d)?;
            let _ = set_default_dtype;
            Ok(vec![])
        }
        "tril" => one(s()?.try_tril(a.int_or("diagonal", 0)?)),
        "triu" => one(s()?.try_triu(a.int_or("diagonal", 0)?)),

        "cat" => one(Tensor::try_cat(&a.tensors("tensors")?, a.dim_or("dim", 0)?)),
        "stack" => one(Tensor::try_stack(
            &a.tensors("tensors")?,
            a.int_or("dim", 0)?,
        )),

        // ---- views ----
        "permute" => one(s()?.try_permute(&a.ints("dims")?)),
        "transpose" => one(s()?.try_transpose(a.dim("dim0")?, a.dim("dim1")?)),
        "t" => one(s()?.try_t()),
        "view" => one(s()?.try_view(&size(a)?)),
        "reshape" => one(s()?.try_reshape(&a.ints("shape")?)),
        "flatten" => match a.string("out_dim")? {
            Some(out) if a.has("dims") => one(s()?.try_flatten_dims(&a.dims("dims")?, &out)),
            Some(out) => one(s()?.try_flatten_named(
                a.dim_or("start_dim", 0)?,
                a.dim_or("end_dim", -1)?,
                &out,
            )),
            None => one(s()?.try_flatten(a.int_or("start_dim", 0)?, a.int_or("end_dim", -1)?)),
        },
        "unflatten" => {
            if a.has("names") {
                let names = a.names("names")?;
                one(s()?.try_unflatten_named(a.dim("dim")?, &a.ints("sizes")?, &refs(&names)))
            } else {
                one(s()?.try_unflatten(a.dim("dim")?, &a.ints("sizes")?))
            }
        }
        "ravel" => one(s()?.try_ravel()),
        "unfold" => one(s()?.try_unfold(a.int("dimension")?, a.int("size")?, a.int("step")?)),
        "diagonal" => {
            let (offset, d1, d2) = (
                a.int_or("offset", 0)?,
                a.dim_or("dim1", 0)?,
                a.dim_or("dim2", 1)?,
            );
            match a.string("outdim")? {
                Some(out) => one(s()?.try_diagonal_named(offset, d1, d2, &out)),
                None => one(s()?.try_diagonal(offset, d1, d2)),
            }
        }
        "movedim" => one(s()?.try_movedim(&a.ints("source")?, &a.ints("destination")?)),
        "squeeze" => {
            if a.is_list("dim") {
                one(s()?.try_squeeze_dims(&a.ints("dim")?))
            } else if a.has("dim") {
                one(s()?.try_squeeze_dim(a.dim("dim")?))
            } else {
                one(s()?.try_squeeze())
            }
        }
        "unsqueeze" => one(s()?.try_unsqueeze(a.int("dim")?)),
        "expand" => one(s()?.try_expand(&size(a)?)),
        "expand_as" => one(s()?.try_expand_as(&a.tensor("other")?)),
        "broadcast_to" => one(s()?.try_broadcast_to(&size(a)?)),
        "narrow" => one(s()?.try_narrow(a.int("dim")?, a.int("start")?, a.int("length")?)),
        "select" => one(s()?.try_select(a.dim("dim")?, a.int("index")?)),
        "as_strided" => {
            one(s()?.try_as_strided(&size(a)?, &a.ints("stride")?, a.opt_int("storage_offset")?))
        }
        "getitem" => one(s()?.try_getitem(&a.index("index")?)),
        "contiguous" => one(s()?.try_contiguous_format(
            a.memory_format("memory_format")?
                .unwrap_or(MemoryFormat::Contiguous),
        )),
        "clone" => one(s()?.try_clone_format(
            a.memory_format("memory_format")?
                .unwrap_or(MemoryFormat::Preserve),
        )),
        "detach" => one(Ok(s()?.detach())),
        "to" => {
            let d = a
                .dtype("dtype")?
                .ok_or_else(|| Error::value("to: missing dtype"))?;
            one(s()?.try_to_dtype(d, a.bool_or("copy", false)?))
        }
        "view_as" => one(s()?.try_view_as(&a.tensor("other")?)),
        "reshape_as" => one(s()?.try_reshape_as(&a.tensor("other")?)),
        "flip" => one(s()?.try_flip(&a.ints("dims")?)),
        "roll" => one(s()?.try_roll(&a.ints("shifts")?, &a.ints("dims")?)),
        "repeat" => one(s()?.try_repeat(&a.ints("repeats")?)),
        "split" => {
            let t = s()?;
            let dim = a.int_or("dim", 0)?;
            if a.is_list("split_size_or_sections") {
                t.try_split_with_sizes(&a.ints("split_size_or_sections")?, dim)
            } else {
                t.try_split(a.int("split_size_or_sections")?, dim)
            }
        }
        "chunk" => s()?.try_chunk(a.int("chunks")?, a.int_or("dim", 0)?),
        "tensor_split" => {
            let t = s()?;
            let dim = a.int_or("dim", 0)?;
            if a.is_list("indices_or_sections") {
                t.try_tensor_split_indices(&a.ints("indices_or_sections")?, dim)
            } else {
                t.try_tensor_split(a.int("indices_or_sections")?, dim)
            }
        }
        "unbind" => s()?.try_unbind(a.dim_or("dim", 0)?),

        // ---- names ----
        "refine_names" => one(s()?.try_refine_names(&refs(&a.names("names")?))),
        "rename" => {
            if a.has("names") && a.has("mapping") {
                return Err(Error::names(
                    "rename: This function takes either positional args or keyword args, but not both. Use tensor.rename(*names) to name dims and tensor.rename(**rename_map) to rename dims.",
                ));
            }
            if a.has("mapping") {
                let mapping = a.mapping("mapping")?;
                let pairs: Vec<(&str, Option<&str>)> = mapping
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_deref()))
                    .collect();
                one(s()?.try_rename_with(&pairs))
            } else {
                let names = if a.has("names") {
                    a.names("names")?
                } else {
                    vec![]
                };
                one(s()?.try_rename(&refs(&names)))
            }
        }
        "align_to" => one(s()?.try_align_to(&refs(&a.names("names")?))),
        "align_as" => one(s()?.try_align_as(&a.tensor("other")?)),

        // ---- elementwise ----
        "round" => one(s()?.try_round(a.int_or("decimals", 0)?)),
        "add" | "sub" => {
            let op = if name == "add" {
                BinaryOp::Add
            } else {
                BinaryOp::Sub
            };
            let alpha = if a.has("alpha") {
                a.scalar("alpha")?
            } else {
                Scalar::Int(1)
            };
            one(s()?.try_add_scaled(a.operand("other")?, alpha, op))
        }
        "mul" => binary(a, BinaryOp::Mul),
        "div" => one(s()?.try_div_mode(a.operand("other")?, rounding(a)?)),
        "floor_divide" => binary(a, BinaryOp::DivFloor),
        "remainder" => binary(a, BinaryOp::Remainder),
        "fmod" => binary(a, BinaryOp::Fmod),
        "pow" => one(s()?.try_binary(a.operand("exponent")?, BinaryOp::Pow)),
        "maximum" => binary(a, BinaryOp::Maximum),
        "minimum" => binary(a, BinaryOp::Minimum),
        "atan2" => binary(a, BinaryOp::Atan2),
        "eq" => binary(a, BinaryOp::Eq),
        "ne" => binary(a, BinaryOp::Ne),
        "lt" => binary(a, BinaryOp::Lt),
        "le" => binary(a, BinaryOp::Le),
        "gt" => binary(a, BinaryOp::Gt),
        "ge" => binary(a, BinaryOp::Ge),
        "logical_and" => binary(a, BinaryOp::LogicalAnd),
        "logical_or" => binary(a, BinaryOp::LogicalOr),
        "logical_xor" => binary(a, BinaryOp::LogicalXor),
        "bitwise_and" => binary(a, BinaryOp::BitAnd),
        "bitwise_or" => binary(a, BinaryOp::BitOr),
        "bitwise_xor" => binary(a, BinaryOp::BitXor),
        "where" => {
            let condition = a.tensor("condition")?;
            if a.has("self") || a.has("other") {
                one(Tensor::try_where(
                    &condition,
                    a.operand("self")?,
                    a.operand("other")?,
                ))
            } else {
                Tensor::try_where_nonzero(&condition)
            }
        }
        "clamp" => one(s()?.try_clamp(a.opt_operand("min")?, a.opt_operand("max")?)),

        // ---- indexing ----
        "gather" => one(s()?.try_gather(a.dim("dim")?, &a.tensor("index")?)),
        "index_select" => one(s()?.try_index_select(a.dim("dim")?, &a.tensor("index")?)),
        "take" => one(s()?.try_take(&a.tensor("index")?)),
        "masked_select" => one(s()?.try_masked_select(&a.tensor("mask")?)),
        "masked_fill" => one(s()?.try_masked_fill(&a.tensor("mask")?, a.operand("value")?)),
        "nonzero" => {
            if a.bool_or("as_tuple", false)? {
                s()?.try_nonzero_tuple()
            } else {
                one(s()?.try_nonzero())
            }
        }

        // ---- matmul family ----
        "matmul" => one(s()?.try_matmul(&a.tensor("other")?)),
        "mm" => one(s()?.try_mm(&a.tensor("mat2")?)),
        "bmm" => one(s()?.try_bmm(&a.tensor("mat2")?)),
        "mv" => one(s()?.try_mv(&a.tensor("vec")?)),
        "dot" => one(s()?.try_dot(&a.tensor("tensor")?)),
        "outer" => one(s()?.try_outer(&a.tensor("vec2")?)),
        "addmm" => {
            let beta = if a.has("beta") {
                a.scalar("beta")?
            } else {
                Scalar::Int(1)
            };
            let alpha = if a.has("alpha") {
                a.scalar("alpha")?
            } else {
                Scalar::Int(1)
            };
            one(s()?.try_addmm(&a.tensor("mat1")?, &a.tensor("mat2")?, beta, alpha))
        }

        // ---- reductions ----
        "sum" => one(s()?.try_sum(&dims(a)?, a.bool_or("keepdim", false)?, a.dtype("dtype")?)),
        "mean" => one(s()?.try_mean(&dims(a)?, a.bool_or("keepdim", false)?, a.dtype("dtype")?)),
        "prod" => one(s()?.try_prod(
            opt_dim(a, "dim")?,
            a.bool_or("keepdim", false)?,
            a.dtype("dtype")?,
        )),
        "amax" => one(s()?.try_amax(&int_dims(a)?, a.bool_or("keepdim", false)?)),
        "amin" => one(s()?.try_amin(&int_dims(a)?, a.bool_or("keepdim", false)?)),
        "max" | "min" => {
            let t = s()?;
            let max = name == "max";
            match opt_dim(a, "dim")? {
                None => one(if max { t.try_max() } else { t.try_min() }),
                Some(d) => {
                    let keepdim = a.bool_or("keepdim", false)?;
                    let (v, i) = if max {
                        t.try_max_dim(d, keepdim)?
                    } else {
                        t.try_min_dim(d, keepdim)?
                    };
                    Ok(vec![v, i])
                }
            }
        }
        "argmax" => one(s()?.try_argmax(a.opt_int("dim")?, a.bool_or("keepdim", false)?)),
        "argmin" => one(s()?.try_argmin(a.opt_int("dim")?, a.bool_or("keepdim", false)?)),
        // `dim=[]` (an explicit empty list) reduces no dim in torch's all/any.
        "all" if a.is_list("dim") && a.ints("dim").is_ok_and(|d| d.is_empty()) => {
            one(s()?.try_all_dims(&[], a.bool_or("keepdim", false)?))
        }
        "any" if a.is_list("dim") && a.ints("dim").is_ok_and(|d| d.is_empty()) => {
            one(s()?.try_any_dims(&[], a.bool_or("keepdim", false)?))
        }
        "all" => one(s()?.try_all(&dims(a)?, a.bool_or("keepdim", false)?)),
        "any" => one(s()?.try_any(&dims(a)?, a.bool_or("keepdim", false)?)),
        "count_nonzero" => one(s()?.try_count_nonzero(&int_dims(a)?)),
        "var" | "std" => {
            let t = s()?;
            let correction = if a.has("correction") {
                a.scalar("correction")?.as_f64()
            } else {
                1.0
            };
            let keepdim = a.bool_or("keepdim", false)?;
            one(if name == "var" {
                t.try_var(&dims(a)?, correction, keepdim)
            } else {
                t.try_std(&dims(a)?, correction, keepdim)
            })
        }
        "logsumexp" => one(s()?.try_logsumexp(&dims(a)?, a.bool_or("keepdim", false)?)),
        "softmax" => one(s()?.try_softmax(a.dim("dim")?, a.dtype("dtype")?)),
        "log_softmax" => one(s()?.try_log_softmax(a.dim("dim")?, a.dtype("dtype")?)),
        "cumsum" => one(s()?.try_cumsum(a.dim("dim")?, a.dtype("dtype")?)),
        "cumprod" => one(s()?.try_cumprod(a.dim("dim")?, a.dtype("dtype")?)),
        "sort" => {
            let (v, i) = s()?.try_sort(a.int_or("dim", -1)?, a.bool_or("descending", false)?)?;
            Ok(vec![v, i])
        }

        // ---- in place ----
        "masked_fill_" => {
            let t = s()?;
            t.try_masked_fill_(&a.tensor("mask")?, a.operand("value")?)?;
            Ok(vec![t])
        }
        "add_" | "sub_" => {
            let op = if name == "add_" {
                BinaryOp::Add
            } else {
                BinaryOp::Sub
            };
            let alpha = if a.has("alpha") {
                Some(a.scalar("alpha")?)
            } else {
                None
            };
            let t = s()?;
            t.try_binary_(a.operand("other")?, op, alpha)?;
            Ok(vec![t])
        }
        "mul_" => {
            let t = s()?;
            t.try_mul_(a.operand("other")?)?;
            Ok(vec![t])
        }
        "div_" => {
            let t = s()?;
            t.try_div_(a.operand("other")?, rounding(a)?)?;
            Ok(vec![t])
        }
        "neg_" | "abs_" | "exp_" => {
            let op = UnaryOp::from_name(name.trim_end_matches('_'))
                .expect("invariant: neg, abs and exp are unary ops");
            let t = s()?;
            t.try_unary_(op)?;
            Ok(vec![t])
        }
        "clamp_" => {
            let t = s()?;
            t.try_clamp_(a.opt_operand("min")?, a.opt_operand("max")?)?;
            Ok(vec![t])
        }
        "copy_" => {
            let t = s()?;
            t.try_copy_(&a.tensor("src")?)?;
            Ok(vec![t])
        }
        "fill_" => {
            let t = s()?;
            t.try_fill_(a.operand("value")?)?;
            Ok(vec![t])
        }
        "zero_" => {
            let t = s()?;
            t.try_zero_()?;
            Ok(vec![t])
        }
        "setitem" => {
            s()?.try_setitem(&a.index("index")?, a.operand("value")?)?;
            Ok(vec![])
        }
        // Every other unary op by its name (`UnaryOp::from_name`): a new op needs no entry.
        _ => match UnaryOp::from_name(name) {
            Some(op) => unary(a, op),
            None => Err(Error::unsupported(format!("unsupported op {name}"))),
        },
    }
}
