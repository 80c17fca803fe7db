//! Named tensors against PyTorch 2.11 itself: replays `tests/fixtures/named_torch211.json`
//! (recorded once by `scripts/record_named_torch211.py` with torch 2.11 in a scratch virtual
//! environment; named tensors are gone from torch 2.15) through smelt. Every recorded case has
//! a replay here and every replay a recorded case. A case PyTorch accepted must give the same
//! names, shape and dtype for every tensor it returns; a case it refused must be an error of the
//! kind its exception maps to, with PyTorch's message (for a `TypeError` — a form PyTorch has no
//! overload for — the message must name the op).

use serde_json::Value;
use smelt::prelude::*;
use smelt::{BinaryOp, UnaryOp};
use std::collections::BTreeMap;

const N: Option<&str> = Some("N");
const C: Option<&str> = Some("C");
const H: Option<&str> = Some("H");
const X: Option<&str> = Some("X");
const Y: Option<&str> = Some("Y");
const A: Option<&str> = Some("A");
const B: Option<&str> = Some("B");
const ELLIPSIS: Option<&str> = Some("...");

/// The inputs, as `INPUTS` in the recording script: (dtype, shape, names).
fn spec(key: &str) -> (DType, &'static [usize], &'static [Option<&'static str>]) {
    use DType::{Bool, F32, I64};
    match key {
        "nc" => (F32, &[2, 3], &[N, C]),
        "n_" => (F32, &[2, 3], &[N, None]),
        "_c" => (F32, &[2, 3], &[None, C]),
        "nd" => (F32, &[2, 3], &[N, Some("D")]),
        "u" => (F32, &[2, 3], &[]),
        "c" => (F32, &[3], &[C]),
        "d" => (F32, &[3], &[Some("D")]),
        "u3" => (F32, &[3], &[]),
        "n" => (F32, &[2], &[N]),
        "xn" => (F32, &[2, 2], &[None, N]),
        "nx" => (F32, &[2, 2], &[N, None]),
        "inc" => (I64, &[2, 3], &[N, C]),
        "in_" => (I64, &[2, 3], &[N, None]),
        "i_c" => (I64, &[2, 3], &[None, C]),
        "ind" => (I64, &[2, 3], &[N, Some("D")]),
        "iu" => (I64, &[2, 3], &[]),
        "ic" => (I64, &[3], &[C]),
        "iu3" => (I64, &[3], &[]),
        "ixn" => (I64, &[2, 2], &[None, N]),
        "inx" => (I64, &[2, 2], &[N, None]),
        "bnc" => (Bool, &[2, 3], &[N, C]),
        "bu" => (Bool, &[2, 3], &[]),
        "bc" => (Bool, &[3], &[C]),
        "bd" => (Bool, &[3], &[Some("D")]),
        "bu3" => (Bool, &[3], &[]),
        "b_c" => (Bool, &[2, 3], &[None, C]),
        "nch" => (F32, &[2, 3, 4], &[N, C, H]),
        "n1c" => (F32, &[1, 3], &[N, C]),
        "ab" => (F32, &[3, 3], &[A, B]),
        "abcd" => (F32, &[1, 2, 3, 4], &[A, B, C, Some("D")]),
        "nchw" => (F32, &[2, 3, 4, 5], &[N, C, H, Some("W")]),
        "s" => (F32, &[], &[]),
        "ab23" => (F32, &[2, 3], &[A, B]),
        "xc34" => (F32, &[3, 4], &[X, C]),
        "ba32" => (F32, &[3, 2], &[B, A]),
        "u34" => (F32, &[3, 4], &[]),
        "k3" => (F32, &[3], &[Some("K")]),
        "nab" => (F32, &[2, 2, 3], &[N, A, B]),
        "mbc" => (F32, &[2, 3, 4], &[Some("M"), B, C]),
        "_bc" => (F32, &[2, 3, 4], &[None, B, C]),
        "bn32" => (F32, &[3, 2], &[B, N]),
        "bc34" => (F32, &[3, 4], &[B, C]),
        "c4" => (F32, &[4], &[C]),
        "d4" => (F32, &[4], &[Some("D")]),
        "u4" => (F32, &[4], &[]),
        "idx" => (I64, &[1], &[]),
        "idxn" => (I64, &[1], &[N]),
        "gi" => (I64, &[1, 3], &[]),
        "gin" => (I64, &[1, 3], &[N, C]),
        _ => panic!("no input {key}"),
    }
}

/// A fresh input: values 1, 2, 3 … (bool alternating from true; index inputs all 0).
fn t(key: &str) -> Tensor {
    let (dtype, shape, names) = spec(key);
    let n: usize = shape.iter().product();
    let index = matches!(key, "idx" | "idxn" | "gi" | "gin");
    let x = if dtype == DType::Bool {
        Tensor::from_vec((0..n).map(|i| i % 2 == 0).collect(), shape)
    } else if index {
        Tensor::from_vec(vec![0i64; n], shape)
    } else if dtype == DType::I64 {
        Tensor::from_vec((1..=n as i64).collect(), shape)
    } else {
        Tensor::from_vec((1..=n).map(|i| i as f32).collect(), shape)
    };
    if names.is_empty() { x } else { x.named(names) }
}

#[derive(Debug, PartialEq)]
struct Described {
    names: Vec<Option<String>>,
    shape: Vec<usize>,
    dtype: String,
}

fn describe(t: &Tensor) -> Described {
    Described {
        names: t.names(),
        shape: t.shape().to_vec(),
        dtype: t.dtype().name().to_string(),
    }
}

enum Outcome {
    Ok(Vec<Described>),
    Err(Error),
}

/// What a replay returned, reduced to what the fixture records.
trait Observe {
    fn observe(self) -> Outcome;
}
impl Observe for Outcome {
    fn observe(self) -> Outcome {
        self
    }
}
impl Observe for Result<Tensor> {
    fn observe(self) -> Outcome {
        match self {
            Ok(t) => Outcome::Ok(vec![describe(&t)]),
            Err(e) => Outcome::Err(e),
        }
    }
}
impl Observe for Result<&Tensor> {
    fn observe(self) -> Outcome {
        self.cloned().observe()
    }
}
impl Observe for Result<(Tensor, Tensor)> {
    fn observe(self) -> Outcome {
        match self {
            Ok((a, b)) => Outcome::Ok(vec![describe(&a), describe(&b)]),
            Err(e) => Outcome::Err(e),
        }
    }
}
impl Observe for Result<Vec<Tensor>> {
    fn observe(self) -> Outcome {
        match self {
            Ok(ts) => Outcome::Ok(ts.iter().map(describe).collect()),
            Err(e) => Outcome::Err(e),
        }
    }
}

/// `x` after an op that returns nothing (setitem, set_names).
fn after(x: Tensor, r: Result<()>) -> Outcome {
    r.map(|()| x).observe()
}

type Replay = Box<dyn Fn() -> Outcome>;

#[derive(Default)]
struct Cases(BTreeMap<String, Replay>);

impl Cases {
    fn add<O: Observe>(&mut self, id: impl Into<String>, f: impl Fn() -> O + 'static) {
        let id = id.into();
        let replay: Replay = Box::new(move || f().observe());
        assert!(
            self.0.insert(id.clone(), replay).is_none(),
            "two replays for {id}"
        );
    }
}

fn s2() -> Tensor {
    Tensor::scalar(2.0, DType::F32)
}

/// Operands of the binary forms (`FORMS` in the script); `"2"` is the scalar 2, a 0-dim f32
/// tensor for the ops whose PyTorch binding takes no number.
fn operand(key: &str, ints: bool, tensor_scalar: bool) -> Operand {
    if key == "2" {
        return if tensor_scalar {
            Operand::from(s2())
        } else {
            Operand::from(2i64)
        };
    }
    let key = if ints {
        match key {
            "nc" => "inc",
            "n_" => "in_",
            "_c" => "i_c",
            "nd" => "ind",
            "u" => "iu",
            "c" => "ic",
            "u3" => "iu3",
            "xn" => "ixn",
            "nx" => "inx",
            _ => panic!("no int input for {key}"),
        }
    } else {
        key
    };
    Operand::from(t(key))
}

fn self_operand(key: &str, ints: bool) -> Tensor {
    match operand(key, ints, false) {
        Operand::Tensor(t) => t,
        Operand::Scalar(_) => panic!("a scalar self"),
    }
}

const FORMS: [(&str, &str, &str); 10] = [
    ("nn", "nc", "nc"),
    ("nu", "nc", "u"),
    ("un", "u", "nc"),
    ("nb", "nc", "u3"),
    ("bn", "u3", "nc"),
    ("cn", "c", "nc"),
    ("ns", "nc", "2"),
    ("pp", "n_", "_c"),
    ("mm", "nc", "nd"),
    ("mis", "xn", "nx"),
];

const INPLACE_FORMS: [(&str, &str, &str); 7] = [
    ("nn", "nc", "nc"),
    ("nu", "nc", "u"),
    ("un", "u", "nc"),
    ("ub", "u", "c"),
    ("ns", "nc", "2"),
    ("pp", "n_", "_c"),
    ("mm", "nc", "nd"),
];

const UNARY: [&str; 28] = [
    "neg",
    "abs",
    "sign",
    "exp",
    "expm1",
    "log",
    "log2",
    "log1p",
    "exp2",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "square",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sigmoid",
    "relu",
    "erf",
    "floor",
    "ceil",
    "trunc",
    "round",
    "logical_not",
    "isnan",
    "isinf",
    "isfinite",
];

fn unary_op(name: &str) -> UnaryOp {
    UnaryOp::from_name(name).unwrap_or_else(|| panic!("no unary op {name}"))
}

fn binary_op(name: &str) -> BinaryOp {
    BinaryOp::from_name(name).unwrap_or_else(|| panic!("no binary op {name}"))
}

fn factories_and_copies(c: &mut Cases) {
    let zeros = || Tensor::zeros(&[2, 3], None);
    c.add("named.ok", move || zeros().try_named(&[N, C]));
    c.add("named.wildcard", move || zeros().try_named(&[N, Some("*")]));
    c.add("named.all_none", move || zeros().try_named(&[None, None]));
    c.add("named.invalid", || {
        Tensor::zeros(&[2], None).try_named(&[Some("1a")])
    });
    c.add("named.duplicate", || {
        Tensor::zeros(&[2, 2], None).try_named(&[N, N])
    });
    c.add("named.count", move || zeros().try_named(&[N]));
    c.add("set_names.ok", || {
        let x = t("u");
        after(x.clone(), x.try_set_names(Some(&[N, C])))
    });
    c.add("set_names.none", || {
        let x = t("nc");
        after(x.clone(), x.try_set_names(None))
    });
    c.add("set_names.partial", || {
        let x = t("nc");
        after(x.clone(), x.try_set_names(Some(&[None, C])))
    });
    c.add("set_names.duplicate", || {
        let x = t("u");
        after(x.clone(), x.try_set_names(Some(&[N, N])))
    });

    let f64_ = Some(DType::F64);
    c.add("zeros_like.named", || t("nc").try_zeros_like(None, None));
    c.add("zeros_like.dtype", move || {
        t("nc").try_zeros_like(f64_, None)
    });
    c.add("ones_like.named", || t("nc").try_ones_like(None, None));
    c.add("ones_like.dtype", move || t("nc").try_ones_like(f64_, None));
    c.add("empty_like.named", || t("nc").try_empty_like(None, None));
    c.add("empty_like.dtype", move || {
        t("nc").try_empty_like(f64_, None)
    });
    c.add("rand_like.named", || t("nc").try_rand_like(None));
    c.add("rand_like.dtype", move || t("nc").try_rand_like(f64_));
    c.add("randn_like.named", || t("nc").try_randn_like(None));
    c.add("randn_like.dtype", move || t("nc").try_randn_like(f64_));
    c.add("full_like.named", || t("nc").try_full_like(7.0, None, None));
    c.add("randint_like.named", || {
        t("inc").try_randint_like(0, 5, None)
    });
    c.add("zeros_like.channels_last", || {
        t("nchw").try_zeros_like(None, Some(MemoryFormat::ChannelsLast))
    });

    c.add("clone.named", || {
        t("nc").try_clone_format(MemoryFormat::Preserve)
    });
    c.add("clone.channels_last", || {
        t("nchw").try_clone_format(MemoryFormat::ChannelsLast)
    });
    c.add("contiguous.named", || {
        t("nc").try_contiguous_format(MemoryFormat::Contiguous)
    });
    c.add("contiguous.transposed", || {
        t("nc").t().try_contiguous_format(MemoryFormat::Contiguous)
    });
    c.add("contiguous.channels_last", || {
        t("nchw").try_contiguous_format(MemoryFormat::ChannelsLast)
    });
    c.add("detach.named", || Ok(t("nc").detach()));
    c.add("to_dtype.named", || t("nc").try_to_dtype(DType::F64, false));
    c.add("to_dtype.same", || t("nc").try_to_dtype(DType::F32, false));
    c.add("to_dtype.copy", || t("nc").try_to_dtype(DType::F32, true));
    c.add("to_dtype.int", || t("nc").try_to_dtype(DType::I64, false));
    c.add("cpu.named", || t("nc").try_cpu());
    c.add("to_device.named", || t("nc").try_to(Device::Cpu));
}

fn unary(c: &mut Cases) {
    for name in UNARY {
        let op = unary_op(name);
        c.add(format!("unary.{name}.f"), move || t("nc").try_unary(op));
        c.add(format!("unary.{name}.partial"), move || {
            t("n_").try_unary(op)
        });
        c.add(format!("unary.{name}.i"), move || t("inc").try_unary(op));
    }
    c.add("unary.bitwise_not.i", || t("inc").try_bitwise_not());
    c.add("unary.bitwise_not.b", || t("bnc").try_bitwise_not());
    c.add("unary.logical_not.b", || t("bnc").try_logical_not());
    c.add("round.decimals", || t("nc").try_round(1));
    c.add("round.decimals0", || t("nc").try_round(0));
    for name in UNARY.iter().take_while(|n| **n != "logical_not").copied() {
        let op = unary_op(name);
        c.add(format!("unary_.{name}"), move || {
            t("nc").try_unary_(op).cloned()
        });
    }
    c.add("unary_.logical_not", || {
        t("bnc").try_unary_(UnaryOp::LogicalNot).cloned()
    });
    c.add("unary_.bitwise_not", || {
        t("inc").try_unary_(UnaryOp::BitwiseNot).cloned()
    });
}

const BINARY: [&str; 27] = [
    "add",
    "sub",
    "mul",
    "div",
    "floor_divide",
    "remainder",
    "fmod",
    "pow",
    "maximum",
    "minimum",
    "atan2",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "logical_and",
    "logical_or",
    "logical_xor",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "div_trunc",
    "div_floor",
    "add_alpha",
    "sub_alpha",
];

const TENSOR_SCALAR: [&str; 6] = [
    "maximum",
    "minimum",
    "atan2",
    "logical_and",
    "logical_or",
    "logical_xor",
];

/// One binary op as its public form: `torch.div(…, rounding_mode=…)` is `try_div_mode`,
/// `alpha=2` is `try_add_scaled`, `floor_divide` its own method; the rest `try_binary`.
fn binary_call(name: &'static str, a: &Tensor, b: Operand) -> Result<Tensor> {
    match name {
        "div_trunc" => a.try_div_mode(b, Some(RoundingMode::Trunc)),
        "div_floor" => a.try_div_mode(b, Some(RoundingMode::Floor)),
        "add_alpha" => a.try_add_scaled(b, 2, BinaryOp::Add),
        "sub_alpha" => a.try_add_scaled(b, 2, BinaryOp::Sub),
        "floor_divide" => a.try_floor_divide(b),
        _ => a.try_binary(b, binary_op(name)),
    }
}

fn binary(c: &mut Cases) {
    for name in BINARY {
        let ints = name.starts_with("bitwise");
        let tensor_scalar = TENSOR_SCALAR.contains(&name);
        for (form, a, b) in FORMS {
            c.add(format!("binary.{name}.{form}"), move || {
                binary_call(
                    name,
                    &self_operand(a, ints),
                    operand(b, ints, tensor_scalar),
                )
            });
        }
    }
    let inplace = [
        "add",
        "sub",
        "mul",
        "div",
        "floor_divide",
        "remainder",
        "fmod",
        "pow",
        "atan2",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "logical_and",
        "logical_or",
        "logical_xor",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
    ];
    for name in inplace {
        let ints = name.starts_with("bitwise");
        let op = match name {
            "floor_divide" => BinaryOp::DivFloor,
            _ => binary_op(name),
        };
        for (form, a, b) in INPLACE_FORMS {
            c.add(format!("binary_.{name}.{form}"), move || {
                self_operand(a, ints)
                    .try_binary_(operand(b, ints, false), op, None)
                    .cloned()
            });
        }
    }
    for (name, mode) in [
        ("div_trunc", RoundingMode::Trunc),
        ("div_floor", RoundingMode::Floor),
    ] {
        for (form, a, b) in INPLACE_FORMS {
            c.add(format!("binary_.{name}.{form}"), move || {
                self_operand(a, false)
                    .try_div_(operand(b, false, false), Some(mode))
                    .cloned()
            });
        }
    }
    for (name, op) in [("add", BinaryOp::Add), ("sub", BinaryOp::Sub)] {
        for (form, a, b) in [("nn", "nc", "nc"), ("un", "u", "nc")] {
            c.add(format!("binary_.{name}_alpha.{form}"), move || {
                t(a).try_binary_(t(b), op, Some(Scalar::Int(2))).cloned()
            });
        }
    }
}

fn where_clamp_and_writes(c: &mut Cases) {
    c.add("where.named_cond", || {
        Tensor::try_where(&t("bnc"), t("u"), t("u"))
    });
    c.add("where.named_a", || {
        Tensor::try_where(&t("bu"), t("nc"), t("u"))
    });
    c.add("where.named_b", || {
        Tensor::try_where(&t("bu"), t("u"), t("nc"))
    });
    c.add("where.named_scalar", || {
        Tensor::try_where(&t("bnc"), t("nc"), 0.0)
    });
    c.add("where.unnamed", || Tensor::try_where(&t("bu"), t("u"), 0.0));

    let op = |k: &str| Some(Operand::from(t(k)));
    let num = |v: f64| Some(Operand::from(v));
    c.add("clamp.scalars", move || {
        t("nc").try_clamp(num(1.0), num(4.0))
    });
    c.add("clamp.min", move || t("nc").try_clamp(num(1.0), None));
    c.add("clamp.max", move || t("nc").try_clamp(None, num(4.0)));
    c.add("clamp.tensor_named", move || {
        t("nc").try_clamp(op("c"), None)
    });
    c.add("clamp.tensor_unnamed", move || {
        t("nc").try_clamp(op("u3"), None)
    });
    c.add("clamp.tensor_max_named", move || {
        t("nc").try_clamp(None, op("c"))
    });
    c.add("clamp.tensor_both", move || {
        t("nc").try_clamp(op("c"), op("c"))
    });
    c.add("clamp.unnamed_self_named_bound", move || {
        t("u").try_clamp(op("c"), None)
    });
    c.add("clamp.mismatch", move || t("nc").try_clamp(op("d"), None));
    c.add("clamp_.scalars", move || {
        t("nc").try_clamp_(num(1.0), num(4.0)).cloned()
    });
    c.add("clamp_.tensor_named", move || {
        t("nc").try_clamp_(op("c"), None).cloned()
    });
    c.add("clamp_.unnamed_self", move || {
        t("u").try_clamp_(op("c"), None).cloned()
    });

    c.add("copy_.unnamed_self", || t("u").try_copy_(&t("nc")).cloned());
    c.add("copy_.named_self", || t("nc").try_copy_(&t("u")).cloned());
    c.add("copy_.same_names", || t("nc").try_copy_(&t("nc")).cloned());
    c.add("copy_.broadcast", || t("u").try_copy_(&t("c")).cloned());
    c.add("copy_.mismatch", || t("nc").try_copy_(&t("nd")).cloned());
    c.add("fill_.scalar", || t("nc").try_fill_(2.0).cloned());
    c.add("fill_.tensor", || t("nc").try_fill_(s2()).cloned());
    c.add("zero_.named", || t("nc").try_zero_().cloned());

    use TensorIndex::{Int, Slice};
    let set = |key: &'static str, items: Vec<TensorIndex>, value: fn() -> Operand| {
        move || {
            let x = t(key);
            after(x.clone(), x.try_setitem(&items, value()))
        }
    };
    c.add(
        "setitem.int_scalar",
        set("nc", vec![Int(0)], || Operand::from(5.0)),
    );
    c.add(
        "setitem.int_named_value",
        set("u", vec![Int(0)], || Operand::from(t("c"))),
    );
    c.add(
        "setitem.named_self_named_value",
        set("nc", vec![Int(0)], || Operand::from(t("c"))),
    );
    c.add(
        "setitem.mismatch",
        set("nc", vec![Int(0)], || Operand::from(t("d"))),
    );
    c.add(
        "setitem.slice",
        set("nc", vec![Slice(None, None, None), Int(0)], || {
            Operand::from(1.0)
        }),
    );
    c.add("setitem.tensor_index", || {
        let x = t("nc");
        let i = TensorIndex::Tensor(Tensor::from_vec(vec![0i64], &[1]));
        after(x.clone(), x.try_setitem(&[i], 1.0))
    });
    c.add("setitem.bool_mask", || {
        let x = t("nc");
        after(
            x.clone(),
            x.try_setitem(&[TensorIndex::Tensor(t("bu"))], 1.0),
        )
    });
    c.add("setitem.tensor_index_named_value", || {
        let x = t("u");
        let i = TensorIndex::Tensor(Tensor::from_vec(vec![0i64], &[1]));
        after(x.clone(), x.try_setitem(&[i], t("c")))
    });
}

fn views(c: &mut Cases) {
    use TensorIndex::{Ellipsis, Int, NewAxis, Slice};
    let all = || Slice(None, None, None);
    c.add("slice.named", move || {
        t("nc").try_getitem(&[all(), Slice(Some(1), None, None)])
    });
    c.add("slice.step", || {
        t("nc").try_getitem(&[Slice(None, None, Some(2))])
    });
    c.add("narrow.named", || t("nc").try_narrow(1, 0, 2));
    c.add("unsqueeze.named", || t("nc").try_unsqueeze(0));
    c.add("unsqueeze.unnamed", || t("u").try_unsqueeze(0));
    c.add("squeeze_dims.named", || t("n1c").try_squeeze_dims(&[0]));
    c.add("permute.named", || t("nc").try_permute(&[1, 0]));
    c.add("movedim.named", || t("nc").try_movedim(&[0], &[1]));
    c.add("unfold.named", || t("nc").try_unfold(1, 2, 1));
    c.add("view.named", || t("nc").try_view(&[6]));
    c.add("view_as.named", || {
        t("nc").try_view_as(&Tensor::zeros(&[6], None))
    });
    c.add("reshape.named", || t("nc").try_reshape(&[3, 2]));
    c.add("reshape_as.named", || t("nc").try_reshape_as(&t("ba32")));
    c.add("flatten.named", || t("nc").try_flatten(0, -1));
    c.add("flatten.same_dim", || t("nc").try_flatten(1, 1));
    c.add("flatten.zero_dim", || t("s").try_flatten(0, -1));
    c.add("ravel.named", || t("nc").try_ravel());
    c.add("select.index", || t("nc").try_select(0, 1));
    c.add("select.name", || t("nc").try_select("C", 1));
    c.add("select.name_unnamed", || t("u").try_select("N", 0));
    c.add("select.missing_name", || t("nc").try_select("X", 0));
    c.add("select.out_of_range_name", || t("nc").try_select("C", 5));
    c.add("select.out_of_range_index", || t("nc").try_select(1, 5));
    c.add("select.out_of_range_unnamed_dim", || {
        t("n_").try_select(1, 5)
    });
    c.add("select.out_of_range_partial_named_dim", || {
        t("n_").try_select(0, 5)
    });
    c.add("squeeze.all", || t("n1c").try_squeeze());
    c.add("squeeze_dim.index_size1", || t("n1c").try_squeeze_dim(0));
    c.add("squeeze_dim.name_size1", || t("n1c").try_squeeze_dim("N"));
    c.add("squeeze_dim.index_not1", || t("n1c").try_squeeze_dim(1));
    c.add("squeeze_dim.name_not1", || t("n1c").try_squeeze_dim("C"));
    c.add("squeeze_dim.name_unnamed", || t("u").try_squeeze_dim("N"));
    c.add("transpose.index", || t("nc").try_transpose(0, 1));
    c.add("transpose.names", || t("nc").try_transpose("C", "N"));
    c.add("transpose.mixed", || t("nch").try_transpose("N", -1));
    c.add("transpose.names_unnamed", || t("u").try_transpose("C", "N"));
    c.add("swapaxes.named", || Ok(t("nc").swapaxes(0, 1)));
    c.add("swapdims.named", || Ok(t("nc").swapdims(0, 1)));
    c.add("t.named", || t("nc").try_t());
    c.add("t.vector", || t("c").try_t());
    c.add("mt.named", || t("nch").try_mt());
    c.add("adjoint.named", || Ok(t("nch").adjoint()));
    c.add("big_t.named", || t("nc").try_big_t());
    c.add("big_t.vector", || t("c").try_big_t());
    c.add("expand.same_rank", || t("n1c").try_expand(&[4, 3]));
    c.add("expand.higher_rank", || t("nc").try_expand(&[4, 2, 3]));
    c.add("expand.minus_one", || t("n1c").try_expand(&[-1, 3]));
    c.add("expand_as.named", || t("n1c").try_expand_as(&t("u")));
    c.add("broadcast_to.named", || {
        t("nc").try_broadcast_to(&[4, 2, 3])
    });
    c.add("diagonal.index", || t("ab").try_diagonal(0, 0, 1));
    c.add("diagonal.offset", || t("ab").try_diagonal(1, 0, 1));
    c.add("diagonal.names", || {
        t("ab").try_diagonal_named(0, "A", "B", "D")
    });
    c.add("diagonal.names_offset", || {
        t("ab").try_diagonal_named(1, "B", "A", "D")
    });
    c.add("diagonal.outdim_index_dims", || {
        t("ab").try_diagonal_named(0, 0, 1, "D")
    });
    c.add("diagonal.outdim_unnamed", || {
        t("ab").drop_names().try_diagonal_named(0, "A", "B", "D")
    });
    c.add("diagonal.names_no_outdim", || {
        t("ab").try_diagonal(0, "A", "B")
    });
    c.add("diagonal.duplicate_outdim", || {
        t("nch").try_diagonal_named(0, "C", "H", "N")
    });
    c.add("unflatten.index_named", || {
        t("nc").try_unflatten(1, &[3, 1])
    });
    c.add("unflatten.index_unnamed", || {
        t("u").try_unflatten(1, &[3, 1])
    });
    c.add("unflatten.name", || t("nc").try_unflatten("C", &[3, 1]));
    c.add("as_strided.named", || {
        t("nc").try_as_strided(&[3], &[1], None)
    });
    c.add("split.named", || t("nc").try_split(2, 1));
    c.add("split_with_sizes.named", || {
        t("nc").try_split_with_sizes(&[1, 2], 1)
    });
    c.add("chunk.named", || t("nc").try_chunk(2, 1));
    c.add("tensor_split.sections", || t("nc").try_tensor_split(2, 1));
    c.add("tensor_split.indices", || {
        t("nc").try_tensor_split_indices(&[1], 1)
    });
    c.add("hsplit.named", || t("nc").try_hsplit(3));
    c.add("vsplit.named", || t("nc").try_vsplit(2));
    c.add("unbind.index", || t("nc").try_unbind(0));
    c.add("unbind.name", || t("nc").try_unbind("C"));
    c.add("unbind.name_unnamed", || t("u").try_unbind("N"));
    c.add("getitem.int", || t("nc").try_getitem(&[Int(0)]));
    c.add("getitem.int_slice", move || {
        t("nc").try_getitem(&[all(), Int(0)])
    });
    c.add("getitem.ellipsis", || {
        t("nch").try_getitem(&[Ellipsis, Int(0)])
    });
    c.add("getitem.none", || t("nc").try_getitem(&[NewAxis]));
    c.add("getitem.tensor", || {
        let i = Tensor::from_vec(vec![0i64], &[1]);
        t("nc").try_getitem(&[TensorIndex::Tensor(i)])
    });
    c.add("getitem.bool_mask", || {
        t("nc").try_getitem(&[TensorIndex::Tensor(t("bu"))])
    });
    c.add("getitem.named_tensor_index", || {
        t("u").try_getitem(&[TensorIndex::Tensor(t("idxn"))])
    });
}

fn name_ops(c: &mut Cases) {
    c.add("refine_names.ok", || t("n_").try_refine_names(&[N, C]));
    c.add("refine_names.ellipsis", || {
        t("nch").drop_names().try_refine_names(&[N, ELLIPSIS])
    });
    c.add("refine_names.different", || {
        t("nc").try_refine_names(&[N, Some("D")])
    });
    c.add("refine_names.less_specific", || {
        t("nc").try_refine_names(&[N, None])
    });
    c.add("refine_names.count", || t("nc").try_refine_names(&[N]));
    c.add("refine_names.two_ellipses", || {
        t("nc").try_refine_names(&[ELLIPSIS, ELLIPSIS])
    });
    c.add("rename.positional", || t("nc").try_rename(&[A, B]));
    c.add("rename.ellipsis", || t("nch").try_rename(&[A, ELLIPSIS]));
    c.add("rename.none", || t("nc").try_rename(&[None]));
    c.add("rename.mapping", || {
        t("nc").try_rename_with(&[("C", Some("D"))])
    });
    c.add("rename.mapping_to_none", || {
        t("nc").try_rename_with(&[("C", None)])
    });
    c.add("rename.mapping_swap", || {
        t("nc").try_rename_with(&[("N", C), ("C", N)])
    });
    c.add("rename.mapping_missing", || {
        t("nc").try_rename_with(&[("X", Y)])
    });
    c.add("rename.mapping_duplicate", || {
        t("nc").try_rename_with(&[("C", N)])
    });
    c.add("rename_.positional", || {
        t("nc").try_rename_(&[A, B]).cloned()
    });
    c.add("align_to.order", || t("nc").try_align_to(&[C, X, N]));
    c.add("align_to.ellipsis", || {
        t("abcd").try_align_to(&[Some("D"), ELLIPSIS, A])
    });
    c.add("align_to.unnamed_dim", || t("n_").try_align_to(&[N, C]));
    c.add("align_to.missing", || t("nc").try_align_to(&[C]));
    c.add("align_to.unnamed", || t("u").try_align_to(&[N, C]));
    c.add("align_to.unnamed_ellipsis", || {
        t("u").try_align_to(&[ELLIPSIS])
    });
    c.add("align_as.named", || t("c").try_align_as(&t("nch")));
    c.add("flatten_named.indices", || {
        t("nch").try_flatten_named(0, 1, "NC")
    });
    c.add("flatten_named.names", || {
        t("nch").try_flatten_named("C", "H", "CH")
    });
    c.add("flatten_named.mixed", || {
        t("nch").try_flatten_named(0, "C", "X")
    });
    c.add("flatten_named.indices_unnamed", || {
        t("u").try_flatten_named(0, 1, "X")
    });
    c.add("flatten_named.names_unnamed", || {
        t("u").try_flatten_named("A", "B", "X")
    });
    c.add("flatten_dims.ok", || {
        t("nch").try_flatten_dims(&[Dim::from("C"), Dim::from("H")], "CH")
    });
    c.add("flatten_dims.not_consecutive", || {
        t("nch").try_flatten_dims(&[Dim::from("N"), Dim::from("H")], "X")
    });
    c.add("flatten_dims.indices", || {
        t("nch").try_flatten_dims(&[Dim::from(1), Dim::from(2)], "CH")
    });
    c.add("flatten_dims.mixed", || {
        t("nch").try_flatten_dims(&[Dim::from("C"), Dim::from(2)], "CH")
    });
    c.add("unflatten_named.ok", || {
        t("nc").try_unflatten_named("C", &[3, 1], &[X, Y])
    });
    c.add("unflatten_named.minus_one", || {
        t("nc").try_unflatten_named("C", &[-1, 1], &[X, Y])
    });
    c.add("unflatten_named.bad_product", || {
        t("nc").try_unflatten_named("C", &[2, 2], &[X, Y])
    });
    c.add("unflatten_named.duplicate", || {
        t("nc").try_unflatten_named("C", &[3, 1], &[N, Y])
    });
    c.add("unflatten_named.index", || {
        t("nc").try_unflatten_named(1, &[3, 1], &[X, Y])
    });
    c.add("unflatten_named.name_unnamed", || {
        t("u").try_unflatten_named("C", &[3, 1], &[X, Y])
    });
}

fn reductions(c: &mut Cases) {
    let none: &'static [i64] = &[];
    let both = || vec![Dim::from("N"), Dim::from("C")];
    type Full = fn(&Tensor, Vec<Dim>, bool) -> Result<Tensor>;
    let families: [(&str, Full); 3] = [
        ("sum", |x, d, k| x.try_sum(d, k, None)),
        ("mean", |x, d, k| x.try_mean(d, k, None)),
        ("logsumexp", |x, d, k| x.try_logsumexp(d, k)),
    ];
    for (op, f) in families {
        let d = |v: &[Dim]| v.to_vec();
        if op != "logsumexp" {
            c.add(format!("{op}.all"), move || f(&t("nc"), vec![], false));
        }
        c.add(format!("{op}.index"), move || {
            f(&t("nc"), d(&[Dim::from(1)]), false)
        });
        c.add(format!("{op}.name"), move || {
            f(&t("nc"), d(&[Dim::from("C")]), false)
        });
        c.add(format!("{op}.name_keepdim"), move || {
            f(&t("nc"), d(&[Dim::from("C")]), true)
        });
        c.add(format!("{op}.index_keepdim"), move || {
            f(&t("nc"), d(&[Dim::from(0)]), true)
        });
        c.add(format!("{op}.names"), move || f(&t("nc"), both(), false));
        c.add(format!("{op}.indices"), move || {
            f(&t("nc"), d(&[Dim::from(0), Dim::from(1)]), false)
        });
        c.add(format!("{op}.missing_name"), move || {
            f(&t("nc"), d(&[Dim::from("X")]), false)
        });
        c.add(format!("{op}.partial"), move || {
            f(&t("n_"), d(&[Dim::from(1)]), false)
        });
        c.add(format!("{op}.mixed"), move || {
            f(&t("nc"), d(&[Dim::from("N"), Dim::from(1)]), false)
        });
        c.add(format!("{op}.name_unnamed"), move || {
            f(&t("u"), d(&[Dim::from("C")]), false)
        });
    }
    c.add("sum.dtype", || {
        t("nc").try_sum("C", false, Some(DType::F64))
    });
    c.add("sum.int", || t("inc").try_sum("C", false, None));
    c.add("mean.dtype", || {
        t("nc").try_mean("C", false, Some(DType::F64))
    });
    type VarStd = fn(&Tensor, Vec<Dim>, f64, bool) -> Result<Tensor>;
    let families: [(&str, VarStd); 2] = [
        ("var", |x, d, c, k| x.try_var(d, c, k)),
        ("std", |x, d, c, k| x.try_std(d, c, k)),
    ];
    for (op, f) in families {
        c.add(format!("{op}.all"), move || f(&t("nc"), vec![], 1.0, false));
        c.add(format!("{op}.index"), move || {
            f(&t("nc"), vec![Dim::from(1)], 1.0, false)
        });
        c.add(format!("{op}.name"), move || {
            f(&t("nc"), vec![Dim::from("C")], 1.0, false)
        });
        c.add(format!("{op}.name_keepdim"), move || {
            f(&t("nc"), vec![Dim::from("C")], 1.0, true)
        });
        c.add(format!("{op}.names"), move || {
            f(&t("nc"), both(), 1.0, false)
        });
        c.add(format!("{op}.correction"), move || {
            f(&t("nc"), vec![Dim::from("N")], 0.0, false)
        });
        c.add(format!("{op}.index_correction"), move || {
            f(&t("nc"), vec![Dim::from(0)], 0.0, true)
        });
        c.add(format!("{op}.mixed"), move || {
            f(&t("nc"), vec![Dim::from("N"), Dim::from(1)], 1.0, false)
        });
    }
    c.add("prod.all", || t("nc").try_prod(None::<Dim>, false, None));
    c.add("prod.index", || t("nc").try_prod(Some(1), false, None));
    c.add("prod.name", || t("nc").try_prod(Some("C"), false, None));
    c.add("prod.name_keepdim", || {
        t("nc").try_prod(Some("C"), true, None)
    });
    c.add("prod.dtype", || {
        t("nc").try_prod(Some(0), false, Some(DType::F64))
    });
    c.add("prod.name_unnamed", || {
        t("u").try_prod(Some("C"), false, None)
    });
    type Amax = fn(&Tensor, &[i64], bool) -> Result<Tensor>;
    let families: [(&str, Amax); 2] = [
        ("amax", |x, d, k| x.try_amax(d, k)),
        ("amin", |x, d, k| x.try_amin(d, k)),
    ];
    for (op, f) in families {
        c.add(format!("{op}.all"), move || f(&t("nc"), none, false));
        c.add(format!("{op}.index"), move || f(&t("nc"), &[1], false));
        c.add(format!("{op}.keepdim"), move || f(&t("nc"), &[1], true));
        c.add(format!("{op}.unnamed"), move || f(&t("u"), &[1], false));
    }
    type Extreme = fn(&Tensor) -> Result<Tensor>;
    type ExtremeDim = fn(&Tensor, Dim, bool) -> Result<(Tensor, Tensor)>;
    let families: [(&str, Extreme, ExtremeDim); 2] = [
        ("max", |x| x.try_max(), |x, d, k| x.try_max_dim(d, k)),
        ("min", |x| x.try_min(), |x, d, k| x.try_min_dim(d, k)),
    ];
    for (op, all, f) in families {
        c.add(format!("{op}.all"), move || all(&t("nc")));
        c.add(format!("{op}.index"), move || {
            f(&t("nc"), Dim::from(1), false)
        });
        c.add(format!("{op}.name"), move || {
            f(&t("nc"), Dim::from("C"), false)
        });
        c.add(format!("{op}.name_keepdim"), move || {
            f(&t("nc"), Dim::from("C"), true)
        });
        c.add(format!("{op}.index_keepdim"), move || {
            f(&t("nc"), Dim::from(0), true)
        });
        c.add(format!("{op}.name_unnamed"), move || {
            f(&t("u"), Dim::from("N"), false)
        });
    }
    type Arg = fn(&Tensor, Option<i64>, bool) -> Result<Tensor>;
    let families: [(&str, Arg); 2] = [
        ("argmax", |x, d, k| x.try_argmax(d, k)),
        ("argmin", |x, d, k| x.try_argmin(d, k)),
    ];
    for (op, f) in families {
        c.add(format!("{op}.all"), move || f(&t("nc"), None, false));
        c.add(format!("{op}.index"), move || f(&t("nc"), Some(1), false));
        c.add(format!("{op}.keepdim"), move || f(&t("nc"), Some(1), true));
    }
    type Logical = fn(&Tensor, Vec<Dim>, bool) -> Result<Tensor>;
    let families: [(&str, Logical); 2] = [
        ("all", |x, d, k| x.try_all(d, k)),
        ("any", |x, d, k| x.try_any(d, k)),
    ];
    for (op, f) in families {
        c.add(format!("{op}.all"), move || f(&t("bnc"), vec![], false));
        c.add(format!("{op}.index"), move || {
            f(&t("bnc"), vec![Dim::from(1)], false)
        });
        c.add(format!("{op}.index_keepdim"), move || {
            f(&t("bnc"), vec![Dim::from(1)], true)
        });
        c.add(format!("{op}.name"), move || {
            f(&t("bnc"), vec![Dim::from("C")], false)
        });
        c.add(format!("{op}.name_unnamed"), move || {
            f(&t("bu"), vec![Dim::from("C")], false)
        });
        c.add(format!("{op}.float"), move || f(&t("nc"), vec![], false));
    }
    c.add("count_nonzero.all", move || t("nc").try_count_nonzero(none));
    c.add("count_nonzero.index", || t("nc").try_count_nonzero(&[1]));
    type Along = fn(&Tensor, Dim, Option<DType>) -> Result<Tensor>;
    let families: [(&str, Along); 4] = [
        ("softmax", |x, d, dt| x.try_softmax(d, dt)),
        ("log_softmax", |x, d, dt| x.try_log_softmax(d, dt)),
        ("cumsum", |x, d, dt| x.try_cumsum(d, dt)),
        ("cumprod", |x, d, dt| x.try_cumprod(d, dt)),
    ];
    for (op, f) in families {
        c.add(format!("{op}.index"), move || {
            f(&t("nc"), Dim::from(1), None)
        });
        c.add(format!("{op}.name"), move || {
            f(&t("nc"), Dim::from("C"), None)
        });
        c.add(format!("{op}.dtype"), move || {
            f(&t("nc"), Dim::from("N"), Some(DType::F64))
        });
        if op.starts_with("cum") {
            c.add(format!("{op}.int"), move || {
                f(&t("inc"), Dim::from(0), None)
            });
        } else {
            c.add(format!("{op}.missing_name"), move || {
                f(&t("nc"), Dim::from("X"), None)
            });
            c.add(format!("{op}.name_unnamed"), move || {
                f(&t("u"), Dim::from("N"), None)
            });
        }
    }
    c.add("sort.index", || t("nc").try_sort(1, false));
    c.add("sort.descending", || t("nc").try_sort(0, true));
}

fn products(c: &mut Cases) {
    c.add("mm.named", || t("ab23").try_mm(&t("xc34")));
    c.add("mm.one_named", || t("ab23").try_mm(&t("u34")));
    c.add("mm.duplicate", || t("ab23").try_mm(&t("ba32")));
    c.add("matmul.2d_2d", || t("ab23").try_matmul(&t("xc34")));
    c.add("matmul.1d_1d", || t("k3").try_matmul(&t("c")));
    c.add("matmul.1d_2d", || t("k3").try_matmul(&t("xc34")));
    c.add("matmul.2d_1d", || t("ab23").try_matmul(&t("k3")));
    c.add("matmul.3d_3d", || t("nab").try_matmul(&t("_bc")));
    c.add("matmul.3d_2d", || t("nab").try_matmul(&t("bn32")));
    c.add("matmul.3d_2d_dup", || t("nab").try_matmul(&t("bc34")));
    c.add("matmul.2d_3d", || {
        t("ab23").drop_names().named(&[X, B]).try_matmul(&t("_bc"))
    });
    c.add("matmul.batch_mismatch", || t("nab").try_matmul(&t("mbc")));
    c.add("matmul.unnamed", || {
        t("ab23").drop_names().try_matmul(&t("u34"))
    });
    c.add("bmm.named", || t("nab").try_bmm(&t("_bc")));
    c.add("bmm.mismatch", || t("nab").try_bmm(&t("mbc")));
    c.add("mv.named", || t("ab23").try_mv(&t("k3")));
    c.add("dot.named", || t("k3").try_dot(&t("c")));
    c.add("dot.one_named", || t("k3").try_dot(&t("u3")));
    c.add("outer.named_self", || t("n").try_outer(&t("u3")));
    c.add("outer.named_other", || t("u3").try_outer(&t("n")));
    c.add("outer.both", || t("n").try_outer(&t("c")));
    let one = Scalar::Int(1);
    let addmm = move |bias: &str, a: Tensor, b: &str, beta: Scalar, alpha: Scalar| {
        t(bias).try_addmm(&a, &t(b), beta, alpha)
    };
    c.add("addmm.named_bias", move || {
        addmm("c4", t("ab23"), "xc34", one, one)
    });
    c.add("addmm.unnamed_bias", move || {
        addmm("u4", t("ab23"), "xc34", one, one)
    });
    c.add("addmm.named_bias_unnamed_mats", move || {
        addmm("c4", t("ab23").drop_names(), "u34", one, one)
    });
    c.add("addmm.mismatch", move || {
        addmm("d4", t("ab23"), "xc34", one, one)
    });
    c.add("addmm.beta0", move || {
        addmm("c4", t("ab23"), "xc34", Scalar::Int(0), one)
    });
    c.add("addmm.alpha2", move || {
        addmm("c4", t("ab23"), "xc34", one, Scalar::Int(2))
    });
    c.add("addmm.beta2", move || {
        addmm("c4", t("ab23"), "xc34", Scalar::Int(2), one)
    });
}

fn masks_joins_gathers(c: &mut Cases) {
    c.add("masked_fill.named_self", || {
        t("nc").try_masked_fill(&t("bu"), 0.0)
    });
    c.add("masked_fill.named_mask", || {
        t("u").try_masked_fill(&t("bnc"), 0.0)
    });
    c.add("masked_fill.both", || {
        t("nc").try_masked_fill(&t("bnc"), 0.0)
    });
    c.add("masked_fill.broadcast_mask", || {
        t("nc").try_masked_fill(&t("bc"), 0.0)
    });
    c.add("masked_fill.unnamed_broadcast_mask", || {
        t("nc").try_masked_fill(&t("bu3"), 0.0)
    });
    c.add("masked_fill.mismatch", || {
        t("nc").try_masked_fill(&t("bd"), 0.0)
    });
    c.add("masked_fill.tensor_value", || {
        t("nc").try_masked_fill(&t("bu"), Tensor::scalar(0.0, DType::F32))
    });
    c.add("masked_fill_.named_self", || {
        t("nc").try_masked_fill_(&t("bu"), 0.0).cloned()
    });
    c.add("masked_fill_.named_mask", || {
        t("u").try_masked_fill_(&t("b_c"), 0.0).cloned()
    });
    c.add("masked_fill_.broadcast_mask", || {
        t("nc").try_masked_fill_(&t("bu3"), 0.0).cloned()
    });
    c.add("masked_fill_.named_broadcast_mask", || {
        t("u").try_masked_fill_(&t("bc"), 0.0).cloned()
    });
    c.add("masked_select.named_self", || {
        t("nc").try_masked_select(&t("bu"))
    });
    c.add("masked_select.named_mask", || {
        t("u").try_masked_select(&t("bnc"))
    });
    c.add("nonzero.named", || t("nc").try_nonzero());
    c.add("nonzero_tuple.named", || t("nc").try_nonzero_tuple());
    c.add("where_nonzero.named", || {
        Tensor::try_where_nonzero(&t("bnc"))
    });

    c.add("cat.index", || Tensor::try_cat(&[t("nc"), t("nc")], 0));
    c.add("cat.name", || Tensor::try_cat(&[t("nc"), t("nc")], "N"));
    c.add("cat.mixed", || Tensor::try_cat(&[t("nc"), t("u")], 0));
    c.add("cat.partial", || Tensor::try_cat(&[t("n_"), t("_c")], 0));
    c.add("cat.mismatch", || Tensor::try_cat(&[t("nc"), t("nd")], 0));
    c.add("cat.unnamed_first_name", || {
        Tensor::try_cat(&[t("u"), t("nc")], "N")
    });
    c.add("cat.name_unnamed", || {
        Tensor::try_cat(&[t("u"), t("u")], "N")
    });
    c.add("stack.named", || Tensor::try_stack(&[t("nc"), t("nc")], 0));
    c.add("stack.one_named", || {
        Tensor::try_stack(&[t("u"), t("nc")], 0)
    });
    c.add("gather.named_self", || t("nc").try_gather(0, &t("gi")));
    c.add("gather.named_index", || t("u").try_gather(0, &t("gin")));
    c.add("gather.name", || t("nc").try_gather("N", &t("gi")));
    c.add("gather.name_unnamed", || t("u").try_gather("N", &t("gi")));
    c.add("index_select.named_self", || {
        t("nc").try_index_select(0, &t("idx"))
    });
    c.add("index_select.named_index", || {
        t("u").try_index_select(0, &t("idxn"))
    });
    c.add("index_select.name", || {
        t("nc").try_index_select("N", &t("idx"))
    });
    c.add("take.named_self", || t("nc").try_take(&t("idx")));
    c.add("take.named_index", || t("u").try_take(&t("idxn")));
    c.add("flip.named", || t("nc").try_flip(&[0]));
    c.add("roll.named", || t("nc").try_roll(&[1], &[0]));
    c.add("repeat.named", || t("nc").try_repeat(&[1, 1]));
    c.add("tril.named", || t("nc").try_tril(0));
    c.add("triu.named", || t("nc").try_triu(0));

    c.add("uniform_.named", || t("nc").try_uniform_(0.0, 1.0).cloned());
    c.add("normal_.named", || t("nc").try_normal_(0.0, 1.0).cloned());
    c.add("exponential_.named", || {
        t("nc").try_exponential_(1.0).cloned()
    });
    c.add("bernoulli_.named", || t("nc").try_bernoulli_(0.5).cloned());
    c.add("random_.named", || {
        t("inc").try_random_(0, Some(5)).cloned()
    });
    c.add("bernoulli.named", || t("nc").div(10.0).try_bernoulli());
    c.add("dropout.train", || t("nc").try_dropout(0.5, true));
    c.add("dropout.eval", || t("nc").try_dropout(0.5, false));
}

fn replays() -> Cases {
    let mut c = Cases::default();
    factories_and_copies(&mut c);
    unary(&mut c);
    binary(&mut c);
    where_clamp_and_writes(&mut c);
    views(&mut c);
    name_ops(&mut c);
    reductions(&mut c);
    products(&mut c);
    masks_joins_gathers(&mut c);
    c
}

/// The smelt error kind a PyTorch exception maps to. Every `RuntimeError` the fixture holds is a
/// names error except the size check of a named unflatten.
fn kind_of(exception: &str, message: &str) -> ErrorKind {
    match exception {
        "IndexError" => ErrorKind::Index,
        // A form PyTorch has no overload for (a name where it takes only positions).
        "TypeError" => ErrorKind::Names,
        "RuntimeError" if message.starts_with("unflatten: Provided sizes") => ErrorKind::Shape,
        "RuntimeError" => ErrorKind::Names,
        other => panic!("no error kind for a {other}"),
    }
}

fn recorded(v: &Value) -> Described {
    Described {
        names: v["names"]
            .as_array()
            .expect("names")
            .iter()
            .map(|n| n.as_str().map(str::to_string))
            .collect(),
        shape: v["shape"]
            .as_array()
            .expect("shape")
            .iter()
            .map(|s| s.as_u64().expect("size") as usize)
            .collect(),
        dtype: v["dtype"].as_str().expect("dtype").to_string(),
    }
}

/// How smelt's outcome differs from PyTorch's, if it does.
fn compare(expected: &Value, got: Outcome) -> Option<String> {
    match (expected.get("ok"), got) {
        (Some(ok), Outcome::Ok(got)) => {
            let want: Vec<Described> = ok.as_array().expect("ok").iter().map(recorded).collect();
            (want != got).then(|| format!("torch gave {want:?}, smelt {got:?}"))
        }
        (Some(ok), Outcome::Err(e)) => Some(format!(
            "torch accepted ({ok}), smelt refused: {:?}: {}",
            e.kind, e.message
        )),
        (None, got) => {
            let exception = expected["err"].as_str().expect("err");
            let message = expected["msg"].as_str().expect("msg");
            let kind = kind_of(exception, message);
            let Outcome::Err(e) = got else {
                return Some(format!(
                    "torch refused ({exception}: {message}), smelt accepted"
                ));
            };
            let same_message = if exception == "TypeError" {
                // `op(): …` or `op() received …` names the op; smelt's message must too.
                match message.split_once("()") {
                    Some((op, _)) => e.message.starts_with(&format!("{op}:")),
                    None => true,
                }
            } else {
                e.message == message
            };
            (e.kind != kind || !same_message).then(|| {
                format!(
                    "torch: {exception} ({kind:?}): {message}\n      smelt: {:?}: {}",
                    e.kind, e.message
                )
            })
        }
    }
}

fn fixture() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/named_torch211.json"
    );
    let text = std::fs::read_to_string(path).expect("the fixture");
    serde_json::from_str(&text).expect("the fixture is JSON")
}

#[test]
fn every_recorded_case_matches_torch_2_11() {
    let fixture = fixture();
    assert!(
        fixture["torch"]
            .as_str()
            .is_some_and(|v| v.starts_with("2.11")),
        "the fixture was recorded with torch {}",
        fixture["torch"]
    );
    let cases = fixture["cases"].as_object().expect("cases");
    let replays = replays();
    let unreplayed: Vec<&String> = cases
        .keys()
        .filter(|k| !replays.0.contains_key(*k))
        .collect();
    let unrecorded: Vec<&String> = replays
        .0
        .keys()
        .filter(|k| !cases.contains_key(*k))
        .collect();
    assert!(
        unreplayed.is_empty() && unrecorded.is_empty(),
        "recorded without a replay: {unreplayed:?}; replayed without a record: {unrecorded:?}"
    );
    let mismatches: Vec<String> = cases
        .iter()
        .filter_map(|(id, expected)| {
            compare(expected, (replays.0[id])()).map(|why| format!("{id}: {why}"))
        })
        .collect();
    assert!(
        mismatches.is_empty(),
        "{} of {} cases differ from torch 2.11:\n{}",
        mismatches.len(),
        cases.len(),
        mismatches.join("\n")
    );
}

/// `rename(**mapping)` renames every dim at once: a swap of two names works (it would collide
/// if applied one by one), and the alias shares storage.
#[test]
fn rename_with_mapping_swaps_names() {
    let x = t("nc");
    let swapped = x.rename_with(&[("N", C), ("C", N)]);
    assert_eq!(swapped.names(), [C, N].map(|n| n.map(str::to_string)));
    assert_eq!(swapped.shape(), &[2, 3]);
    assert!(swapped.shares_storage(&x));
    assert_eq!(swapped.to_vec::<f32>(), x.to_vec::<f32>());
    assert_eq!(x.names(), [N, C].map(|n| n.map(str::to_string)));
}
