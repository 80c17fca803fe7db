#!/usr/bin/env python3
"""Records what PyTorch 2.11 does with named tensors, for every op smelt accepts them in.

Run once, by hand, with torch==2.11 installed from PyPI in a scratch virtual environment
outside the project (named tensors are gone from torch 2.15, which the conformance suite was
recorded with; 2.12-2.14 were not tried). It was run once, with torch 2.11.0; it is not part
of CI and nothing runs it:

    /path/to/venv-with-torch-2.11/bin/python scripts/record_named_torch211.py \
        > tests/fixtures/named_torch211.json

Each case runs one op in one form (dim by index or by name, keepdim, in place or not, with or
without an optional argument, operands named, partly named or unnamed, broadcasting) on
fresh inputs and records, by case id, either what it returned (for every tensor: names,
shape, dtype) or what it raised (the exception's type and message). tests/named_torch211.rs
replays every id through smelt and compares. Ids and inputs are spelled the same on both
sides: `INPUTS` below and `input()` in the test.
"""

import json
import sys
import warnings

import torch

warnings.simplefilter("ignore")  # "Named tensors ... are an experimental feature"

# name: (dtype, shape, names). Values are 1, 2, 3 ... (bool: alternating), so no division by
# zero and no empty reduction.
INPUTS = {
    "nc": ("f32", (2, 3), ("N", "C")),
    "n_": ("f32", (2, 3), ("N", None)),
    "_c": ("f32", (2, 3), (None, "C")),
    "nd": ("f32", (2, 3), ("N", "D")),
    "u": ("f32", (2, 3), None),
    "c": ("f32", (3,), ("C",)),
    "d": ("f32", (3,), ("D",)),
    "u3": ("f32", (3,), None),
    "n": ("f32", (2,), ("N",)),
    "xn": ("f32", (2, 2), (None, "N")),
    "nx": ("f32", (2, 2), ("N", None)),
    "inc": ("i64", (2, 3), ("N", "C")),
    "in_": ("i64", (2, 3), ("N", None)),
    "i_c": ("i64", (2, 3), (None, "C")),
    "ind": ("i64", (2, 3), ("N", "D")),
    "iu": ("i64", (2, 3), None),
    "ic": ("i64", (3,), ("C",)),
    "iu3": ("i64", (3,), None),
    "ixn": ("i64", (2, 2), (None, "N")),
    "inx": ("i64", (2, 2), ("N", None)),
    "bnc": ("bool", (2, 3), ("N", "C")),
    "bu": ("bool", (2, 3), None),
    "bc": ("bool", (3,), ("C",)),
    "bd": ("bool", (3,), ("D",)),
    "bu3": ("bool", (3,), None),
    "b_c": ("bool", (2, 3), (None, "C")),
    "nch": ("f32", (2, 3, 4), ("N", "C", "H")),
    "n1c": ("f32", (1, 3), ("N", "C")),
    "ab": ("f32", (3, 3), ("A", "B")),
    "abcd": ("f32", (1, 2, 3, 4), ("A", "B", "C", "D")),
    "nchw": ("f32", (2, 3, 4, 5), ("N", "C", "H", "W")),
    "s": ("f32", (), None),
    "ab23": ("f32", (2, 3), ("A", "B")),
    "xc34": ("f32", (3, 4), ("X", "C")),
    "ba32": ("f32", (3, 2), ("B", "A")),
    "u34": ("f32", (3, 4), None),
    "k3": ("f32", (3,), ("K",)),
    "nab": ("f32", (2, 2, 3), ("N", "A", "B")),
    "mbc": ("f32", (2, 3, 4), ("M", "B", "C")),
    "_bc": ("f32", (2, 3, 4), (None, "B", "C")),
    "bn32": ("f32", (3, 2), ("B", "N")),
    "bc34": ("f32", (3, 4), ("B", "C")),
    "c4": ("f32", (4,), ("C",)),
    "d4": ("f32", (4,), ("D",)),
    "u4": ("f32", (4,), None),
    "idx": ("i64", (1,), None),
    "idxn": ("i64", (1,), ("N",)),
    "gi": ("i64", (1, 3), None),
    "gin": ("i64", (1, 3), ("N", "C")),
}

DTYPES = {"f32": torch.float32, "i64": torch.int64, "bool": torch.bool}


def make(key):
    dtype, shape, names = INPUTS[key]
    n = 1
    for s in shape:
        n *= s
    if dtype == "bool":
        t = (torch.arange(n) % 2 == 0).reshape(shape)
    elif key in ("idx", "idxn", "gi", "gin"):
        t = torch.zeros(n, dtype=torch.int64).reshape(shape)
    else:
        t = torch.arange(1, n + 1).to(DTYPES[dtype]).reshape(shape)
    if names is not None:
        t = t.refine_names(*names)
    return t


class Inputs:
    """`t.nc` is a fresh `nc` each time it is read."""

    def __getattr__(self, key):
        return make(key)


CASES = []


def case(cid, fn):
    assert cid not in {c for c, _ in CASES}, cid
    CASES.append((cid, fn))


# ---- factories, names, copies ---------------------------------------------------------------

case("named.ok", lambda t: torch.zeros(2, 3, names=("N", "C")))
case("named.wildcard", lambda t: torch.zeros(2, 3, names=("N", "*")))
case("named.all_none", lambda t: torch.zeros(2, 3, names=(None, None)))
case("named.invalid", lambda t: torch.zeros(2, names=("1a",)))
case("named.duplicate", lambda t: torch.zeros(2, 2, names=("N", "N")))
case("named.count", lambda t: torch.zeros(2, 3, names=("N",)))


def set_names(x, names):
    x.names = names
    return x


case("set_names.ok", lambda t: set_names(t.u, ("N", "C")))
case("set_names.none", lambda t: set_names(t.nc, None))
case("set_names.partial", lambda t: set_names(t.nc, (None, "C")))
case("set_names.duplicate", lambda t: set_names(t.u, ("N", "N")))

for like in ["zeros_like", "ones_like", "empty_like", "rand_like", "randn_like"]:
    case(f"{like}.named", lambda t, like=like: getattr(torch, like)(t.nc))
    case(f"{like}.dtype", lambda t, like=like: getattr(torch, like)(t.nc, dtype=torch.float64))
case("full_like.named", lambda t: torch.full_like(t.nc, 7.0))
case("randint_like.named", lambda t: torch.randint_like(t.inc, 0, 5))
case("zeros_like.channels_last", lambda t: torch.zeros_like(t.nchw, memory_format=torch.channels_last))

case("clone.named", lambda t: t.nc.clone())
case("clone.channels_last", lambda t: t.nchw.clone(memory_format=torch.channels_last))
case("contiguous.named", lambda t: t.nc.contiguous())
case("contiguous.transposed", lambda t: t.nc.t().contiguous())
case("contiguous.channels_last", lambda t: t.nchw.contiguous(memory_format=torch.channels_last))
case("detach.named", lambda t: t.nc.detach())
case("to_dtype.named", lambda t: t.nc.to(torch.float64))
case("to_dtype.same", lambda t: t.nc.to(torch.float32))
case("to_dtype.copy", lambda t: t.nc.to(torch.float32, copy=True))
case("to_dtype.int", lambda t: t.nc.to(torch.int64))
case("cpu.named", lambda t: t.nc.cpu())
case("to_device.named", lambda t: t.nc.to("cpu"))

# ---- unary ----------------------------------------------------------------------------------

UNARY = [
    "neg", "abs", "sign", "exp", "expm1", "log", "log2", "log1p", "exp2", "sqrt", "rsqrt",
    "reciprocal", "square", "sin", "cos", "tan", "tanh", "sigmoid", "relu", "erf", "floor",
    "ceil", "trunc", "round", "logical_not", "isnan", "isinf", "isfinite",
]
for op in UNARY:
    case(f"unary.{op}.f", lambda t, op=op: getattr(torch, op)(t.nc))
    case(f"unary.{op}.partial", lambda t, op=op: getattr(torch, op)(t.n_))
    case(f"unary.{op}.i", lambda t, op=op: getattr(torch, op)(t.inc))
case("unary.bitwise_not.i", lambda t: torch.bitwise_not(t.inc))
case("unary.bitwise_not.b", lambda t: torch.bitwise_not(t.bnc))
case("unary.logical_not.b", lambda t: torch.logical_not(t.bnc))
case("round.decimals", lambda t: torch.round(t.nc, decimals=1))
case("round.decimals0", lambda t: torch.round(t.nc, decimals=0))

INPLACE_UNARY = [
    "neg", "abs", "sign", "exp", "expm1", "log", "log2", "log1p", "exp2", "sqrt", "rsqrt",
    "reciprocal", "square", "sin", "cos", "tan", "tanh", "sigmoid", "relu", "erf", "floor",
    "ceil", "trunc", "round",
]
for op in INPLACE_UNARY:
    case(f"unary_.{op}", lambda t, op=op: getattr(t.nc, op + "_")())
case("unary_.logical_not", lambda t: t.bnc.logical_not_())
case("unary_.bitwise_not", lambda t: t.inc.bitwise_not_())

# ---- binary ---------------------------------------------------------------------------------

# Float operands; the int/bool variants for the ops that need them.
BINARY = [
    ("add", torch.add), ("sub", torch.sub), ("mul", torch.mul), ("div", torch.div),
    ("floor_divide", torch.floor_divide), ("remainder", torch.remainder), ("fmod", torch.fmod),
    ("pow", torch.pow), ("maximum", torch.maximum), ("minimum", torch.minimum),
    ("atan2", torch.atan2), ("eq", torch.eq), ("ne", torch.ne), ("lt", torch.lt),
    ("le", torch.le), ("gt", torch.gt), ("ge", torch.ge), ("logical_and", torch.logical_and),
    ("logical_or", torch.logical_or), ("logical_xor", torch.logical_xor),
    ("bitwise_and", torch.bitwise_and), ("bitwise_or", torch.bitwise_or),
    ("bitwise_xor", torch.bitwise_xor),
    ("div_trunc", lambda a, b: torch.div(a, b, rounding_mode="trunc")),
    ("div_floor", lambda a, b: torch.div(a, b, rounding_mode="floor")),
    ("add_alpha", lambda a, b: torch.add(a, b, alpha=2)),
    ("sub_alpha", lambda a, b: torch.sub(a, b, alpha=2)),
]
INT_ONLY = {"bitwise_and", "bitwise_or", "bitwise_xor"}
# form: (self, other); other "2" is the scalar 2.
FORMS = {
    "nn": ("nc", "nc"),  # both named, equal
    "nu": ("nc", "u"),  # named self, unnamed other
    "un": ("u", "nc"),  # unnamed self, named other
    "nb": ("nc", "u3"),  # named self, unnamed other broadcast
    "bn": ("u3", "nc"),  # unnamed self broadcast, named other
    "cn": ("c", "nc"),  # both named, broadcasting
    "ns": ("nc", "2"),  # named self, scalar
    "pp": ("n_", "_c"),  # partial names that unify
    "mm": ("nc", "nd"),  # names that do not match
    "mis": ("xn", "nx"),  # misaligned names
}


# Ops whose Python binding takes no Python number for `other`: their "scalar" is a 0-dim
# float32 tensor (smelt's test passes `Tensor::scalar(2.0, F32)` for them).
TENSOR_SCALAR = {"maximum", "minimum", "atan2", "logical_and", "logical_or", "logical_xor"}


def operand(t, key, ints, op=None):
    if key == "2":
        return torch.tensor(2.0) if op in TENSOR_SCALAR else 2
    if ints:
        key = {"nc": "inc", "n_": "in_", "_c": "i_c", "nd": "ind", "u": "iu", "c": "ic",
               "u3": "iu3", "xn": "ixn", "nx": "inx"}[key]
    return make(key)


for name, fn in BINARY:
    for form, (a, b) in FORMS.items():
        ints = name in INT_ONLY
        case(
            f"binary.{name}.{form}",
            lambda t, fn=fn, a=a, b=b, ints=ints, op=name: fn(
                operand(t, a, ints), operand(t, b, ints, op)
            ),
        )

INPLACE_BINARY = [
    ("add", "add_"), ("sub", "sub_"), ("mul", "mul_"), ("div", "div_"),
    ("floor_divide", "floor_divide_"), ("remainder", "remainder_"), ("fmod", "fmod_"),
    ("pow", "pow_"), ("atan2", "atan2_"), ("eq", "eq_"), ("ne", "ne_"), ("lt", "lt_"),
    ("le", "le_"), ("gt", "gt_"), ("ge", "ge_"), ("logical_and", "logical_and_"),
    ("logical_or", "logical_or_"), ("logical_xor", "logical_xor_"),
    ("bitwise_and", "bitwise_and_"), ("bitwise_or", "bitwise_or_"),
    ("bitwise_xor", "bitwise_xor_"),
]
INPLACE_FORMS = {
    "nn": ("nc", "nc"),
    "nu": ("nc", "u"),
    "un": ("u", "nc"),  # an unnamed self receives the names
    "ub": ("u", "c"),  # ... broadcast ones too
    "ns": ("nc", "2"),
    "pp": ("n_", "_c"),  # a partly named self must already have the result's names
    "mm": ("nc", "nd"),
}
for name, method in INPLACE_BINARY:
    for form, (a, b) in INPLACE_FORMS.items():
        ints = name in INT_ONLY
        case(
            f"binary_.{name}.{form}",
            lambda t, m=method, a=a, b=b, ints=ints, op=name: getattr(operand(t, a, ints), m)(
                operand(t, b, ints, op)
            ),
        )
for mode in ["trunc", "floor"]:
    for form, (a, b) in INPLACE_FORMS.items():
        case(
            f"binary_.div_{mode}.{form}",
            lambda t, a=a, b=b, mode=mode: operand(t, a, False).div_(
                operand(t, b, False), rounding_mode=mode
            ),
        )
for name in ["add", "sub"]:
    for form in ["nn", "un"]:
        a, b = INPLACE_FORMS[form]
        case(
            f"binary_.{name}_alpha.{form}",
            lambda t, m=name + "_", a=a, b=b: getattr(make(a), m)(make(b), alpha=2),
        )

# ---- where, clamp ---------------------------------------------------------------------------

case("where.named_cond", lambda t: torch.where(t.bnc, t.u, t.u))
case("where.named_a", lambda t: torch.where(t.bu, t.nc, t.u))
case("where.named_b", lambda t: torch.where(t.bu, t.u, t.nc))
case("where.named_scalar", lambda t: torch.where(t.bnc, t.nc, 0.0))
case("where.unnamed", lambda t: torch.where(t.bu, t.u, 0.0))

case("clamp.scalars", lambda t: torch.clamp(t.nc, 1.0, 4.0))
case("clamp.min", lambda t: torch.clamp(t.nc, min=1.0))
case("clamp.max", lambda t: torch.clamp(t.nc, max=4.0))
case("clamp.tensor_named", lambda t: torch.clamp(t.nc, min=t.c))
case("clamp.tensor_unnamed", lambda t: torch.clamp(t.nc, min=t.u3))
case("clamp.tensor_max_named", lambda t: torch.clamp(t.nc, max=t.c))
case("clamp.tensor_both", lambda t: torch.clamp(t.nc, min=t.c, max=t.c))
case("clamp.unnamed_self_named_bound", lambda t: torch.clamp(t.u, min=t.c))
case("clamp.mismatch", lambda t: torch.clamp(t.nc, min=t.d))
case("clamp_.scalars", lambda t: t.nc.clamp_(1.0, 4.0))
case("clamp_.tensor_named", lambda t: t.nc.clamp_(min=t.c))
case("clamp_.unnamed_self", lambda t: t.u.clamp_(min=t.c))

# ---- in-place fills and copies --------------------------------------------------------------

case("copy_.unnamed_self", lambda t: t.u.copy_(t.nc))
case("copy_.named_self", lambda t: t.nc.copy_(t.u))
case("copy_.same_names", lambda t: t.nc.copy_(t.nc))
case("copy_.broadcast", lambda t: t.u.copy_(t.c))
case("copy_.mismatch", lambda t: t.nc.copy_(t.nd))
case("fill_.scalar", lambda t: t.nc.fill_(2.0))
case("fill_.tensor", lambda t: t.nc.fill_(torch.tensor(2.0)))
case("zero_.named", lambda t: t.nc.zero_())


def setitem(x, key, value):
    x[key] = value
    return x


case("setitem.int_scalar", lambda t: setitem(t.nc, 0, 5.0))
case("setitem.int_named_value", lambda t: setitem(t.u, 0, t.c))
case("setitem.named_self_named_value", lambda t: setitem(t.nc, 0, t.c))
case("setitem.mismatch", lambda t: setitem(t.nc, 0, t.d))
case("setitem.slice", lambda t: setitem(t.nc, (slice(None), 0), 1.0))
case("setitem.tensor_index", lambda t: setitem(t.nc, torch.tensor([0]), 1.0))
case("setitem.bool_mask", lambda t: setitem(t.nc, t.bu, 1.0))
case("setitem.tensor_index_named_value", lambda t: setitem(t.u, torch.tensor([0]), t.c))

# ---- views ----------------------------------------------------------------------------------

case("slice.named", lambda t: t.nc[:, 1:])
case("slice.step", lambda t: t.nc[::2])
case("narrow.named", lambda t: t.nc.narrow(1, 0, 2))
case("unsqueeze.named", lambda t: t.nc.unsqueeze(0))
case("unsqueeze.unnamed", lambda t: t.u.unsqueeze(0))
case("squeeze_dims.named", lambda t: t.n1c.squeeze((0,)))
case("permute.named", lambda t: t.nc.permute(1, 0))
case("movedim.named", lambda t: t.nc.movedim(0, 1))
case("unfold.named", lambda t: t.nc.unfold(1, 2, 1))
case("view.named", lambda t: t.nc.view(6))
case("view_as.named", lambda t: t.nc.view_as(t.u3.repeat(2)))
case("reshape.named", lambda t: t.nc.reshape(3, 2))
case("reshape_as.named", lambda t: t.nc.reshape_as(t.ba32))
case("flatten.named", lambda t: t.nc.flatten())
case("flatten.same_dim", lambda t: t.nc.flatten(1, 1))
case("flatten.zero_dim", lambda t: t.s.flatten())
case("ravel.named", lambda t: t.nc.ravel())
case("select.index", lambda t: t.nc.select(0, 1))
case("select.name", lambda t: t.nc.select("C", 1))
case("select.name_unnamed", lambda t: t.u.select("N", 0))
case("select.missing_name", lambda t: t.nc.select("X", 0))
case("select.out_of_range_name", lambda t: t.nc.select("C", 5))
case("select.out_of_range_index", lambda t: t.nc.select(1, 5))
case("select.out_of_range_unnamed_dim", lambda t: t.n_.select(1, 5))
case("select.out_of_range_partial_named_dim", lambda t: t.n_.select(0, 5))
case("squeeze.all", lambda t: t.n1c.squeeze())
case("squeeze_dim.index_size1", lambda t: t.n1c.squeeze(0))
case("squeeze_dim.name_size1", lambda t: t.n1c.squeeze("N"))
case("squeeze_dim.index_not1", lambda t: t.n1c.squeeze(1))
case("squeeze_dim.name_not1", lambda t: t.n1c.squeeze("C"))
case("squeeze_dim.name_unnamed", lambda t: t.u.squeeze("N"))
case("transpose.index", lambda t: t.nc.transpose(0, 1))
case("transpose.names", lambda t: t.nc.transpose("C", "N"))
case("transpose.mixed", lambda t: t.nch.transpose("N", -1))
case("transpose.names_unnamed", lambda t: t.u.transpose("C", "N"))
case("swapaxes.named", lambda t: t.nc.swapaxes(0, 1))
case("swapdims.named", lambda t: t.nc.swapdims(0, 1))
case("t.named", lambda t: t.nc.t())
case("t.vector", lambda t: t.c.t())
case("mt.named", lambda t: t.nch.mT)
case("adjoint.named", lambda t: t.nch.adjoint())
case("big_t.named", lambda t: t.nc.T)
case("big_t.vector", lambda t: t.c.T)
case("expand.same_rank", lambda t: t.n1c.expand(4, 3))
case("expand.higher_rank", lambda t: t.nc.expand(4, 2, 3))
case("expand.minus_one", lambda t: t.n1c.expand(-1, 3))
case("expand_as.named", lambda t: t.n1c.expand_as(t.u))
case("broadcast_to.named", lambda t: torch.broadcast_to(t.nc, (4, 2, 3)))
case("diagonal.index", lambda t: t.ab.diagonal(0, 0, 1))
case("diagonal.offset", lambda t: t.ab.diagonal(1, 0, 1))
case("diagonal.names", lambda t: t.ab.diagonal(outdim="D", dim1="A", dim2="B"))
case("diagonal.names_offset", lambda t: t.ab.diagonal(outdim="D", dim1="B", dim2="A", offset=1))
case("diagonal.outdim_index_dims", lambda t: t.ab.diagonal(outdim="D", dim1=0, dim2=1))
case("diagonal.outdim_unnamed", lambda t: t.ab.rename(None).diagonal(outdim="D", dim1="A", dim2="B"))
case("diagonal.names_no_outdim", lambda t: t.ab.diagonal(dim1="A", dim2="B"))
case("diagonal.duplicate_outdim", lambda t: t.nch.diagonal(outdim="N", dim1="C", dim2="H"))
case("unflatten.index_named", lambda t: t.nc.unflatten(1, (3, 1)))
case("unflatten.index_unnamed", lambda t: t.u.unflatten(1, (3, 1)))
case("unflatten.name", lambda t: t.nc.unflatten("C", (3, 1)))
case("as_strided.named", lambda t: t.nc.as_strided((3,), (1,)))
case("split.named", lambda t: t.nc.split(2, 1))
case("split_with_sizes.named", lambda t: t.nc.split([1, 2], 1))
case("chunk.named", lambda t: t.nc.chunk(2, 1))
case("tensor_split.sections", lambda t: t.nc.tensor_split(2, 1))
case("tensor_split.indices", lambda t: t.nc.tensor_split([1], 1))
case("hsplit.named", lambda t: t.nc.hsplit(3))
case("vsplit.named", lambda t: t.nc.vsplit(2))
case("unbind.index", lambda t: t.nc.unbind(0))
case("unbind.name", lambda t: t.nc.unbind("C"))
case("unbind.name_unnamed", lambda t: t.u.unbind("N"))
case("getitem.int", lambda t: t.nc[0])
case("getitem.int_slice", lambda t: t.nc[:, 0])
case("getitem.ellipsis", lambda t: t.nch[..., 0])
case("getitem.none", lambda t: t.nc[None])
case("getitem.tensor", lambda t: t.nc[torch.tensor([0])])
case("getitem.bool_mask", lambda t: t.nc[t.bu])
case("getitem.named_tensor_index", lambda t: t.u[t.idxn])

# ---- name ops -------------------------------------------------------------------------------

case("refine_names.ok", lambda t: t.n_.refine_names("N", "C"))
case("refine_names.ellipsis", lambda t: t.nch.rename(None).refine_names("N", "..."))
case("refine_names.different", lambda t: t.nc.refine_names("N", "D"))
case("refine_names.less_specific", lambda t: t.nc.refine_names("N", None))
case("refine_names.count", lambda t: t.nc.refine_names("N"))
case("refine_names.two_ellipses", lambda t: t.nc.refine_names("...", "..."))
case("rename.positional", lambda t: t.nc.rename("A", "B"))
case("rename.ellipsis", lambda t: t.nch.rename("A", "..."))
case("rename.none", lambda t: t.nc.rename(None))
case("rename.mapping", lambda t: t.nc.rename(C="D"))
case("rename.mapping_to_none", lambda t: t.nc.rename(C=None))
case("rename.mapping_swap", lambda t: t.nc.rename(N="C", C="N"))
case("rename.mapping_missing", lambda t: t.nc.rename(X="Y"))
case("rename.mapping_duplicate", lambda t: t.nc.rename(C="N"))
case("rename_.positional", lambda t: t.nc.rename_("A", "B"))
case("align_to.order", lambda t: t.nc.align_to("C", "X", "N"))
case("align_to.ellipsis", lambda t: t.abcd.align_to("D", "...", "A"))
case("align_to.unnamed_dim", lambda t: t.n_.align_to("N", "C"))
case("align_to.missing", lambda t: t.nc.align_to("C"))
case("align_to.unnamed", lambda t: t.u.align_to("N", "C"))
case("align_to.unnamed_ellipsis", lambda t: t.u.align_to("..."))
case("align_as.named", lambda t: t.c.align_as(t.nch))
case("flatten_named.indices", lambda t: t.nch.flatten(0, 1, "NC"))
case("flatten_named.names", lambda t: t.nch.flatten("C", "H", "CH"))
case("flatten_named.mixed", lambda t: t.nch.flatten(0, "C", "X"))
case("flatten_named.indices_unnamed", lambda t: t.u.flatten(0, 1, "X"))
case("flatten_named.names_unnamed", lambda t: t.u.flatten("A", "B", "X"))
case("flatten_dims.ok", lambda t: t.nch.flatten(["C", "H"], "CH"))
case("flatten_dims.not_consecutive", lambda t: t.nch.flatten(["N", "H"], "X"))
case("flatten_dims.indices", lambda t: t.nch.flatten([1, 2], "CH"))
case("flatten_dims.mixed", lambda t: t.nch.flatten(["C", 2], "CH"))
case("unflatten_named.ok", lambda t: t.nc.unflatten("C", (("X", 3), ("Y", 1))))
case("unflatten_named.minus_one", lambda t: t.nc.unflatten("C", (("X", -1), ("Y", 1))))
case("unflatten_named.bad_product", lambda t: t.nc.unflatten("C", (("X", 2), ("Y", 2))))
case("unflatten_named.duplicate", lambda t: t.nc.unflatten("C", (("N", 3), ("Y", 1))))
case("unflatten_named.index", lambda t: t.nc.unflatten(1, (("X", 3), ("Y", 1))))
case("unflatten_named.name_unnamed", lambda t: t.u.unflatten("C", (("X", 3), ("Y", 1))))

# ---- reductions -----------------------------------------------------------------------------

for op in ["sum", "mean", "logsumexp"]:
    fn = getattr(torch, op)
    if op != "logsumexp":
        case(f"{op}.all", lambda t, fn=fn: fn(t.nc))
    case(f"{op}.index", lambda t, fn=fn: fn(t.nc, 1))
    case(f"{op}.name", lambda t, fn=fn: fn(t.nc, "C"))
    case(f"{op}.name_keepdim", lambda t, fn=fn: fn(t.nc, "C", keepdim=True))
    case(f"{op}.index_keepdim", lambda t, fn=fn: fn(t.nc, 0, keepdim=True))
    case(f"{op}.names", lambda t, fn=fn: fn(t.nc, ("N", "C")))
    case(f"{op}.indices", lambda t, fn=fn: fn(t.nc, (0, 1)))
    case(f"{op}.missing_name", lambda t, fn=fn: fn(t.nc, "X"))
    case(f"{op}.partial", lambda t, fn=fn: fn(t.n_, 1))
    case(f"{op}.mixed", lambda t, fn=fn: fn(t.nc, ("N", 1)))
    case(f"{op}.name_unnamed", lambda t, fn=fn: fn(t.u, "C"))
case("sum.dtype", lambda t: torch.sum(t.nc, "C", dtype=torch.float64))
case("sum.int", lambda t: torch.sum(t.inc, "C"))
case("mean.dtype", lambda t: torch.mean(t.nc, "C", dtype=torch.float64))
for op in ["var", "std"]:
    fn = getattr(torch, op)
    case(f"{op}.all", lambda t, fn=fn: fn(t.nc))
    case(f"{op}.index", lambda t, fn=fn: fn(t.nc, 1))
    case(f"{op}.name", lambda t, fn=fn: fn(t.nc, "C"))
    case(f"{op}.name_keepdim", lambda t, fn=fn: fn(t.nc, "C", keepdim=True))
    case(f"{op}.names", lambda t, fn=fn: fn(t.nc, ("N", "C")))
    case(f"{op}.correction", lambda t, fn=fn: fn(t.nc, "N", correction=0))
    case(f"{op}.index_correction", lambda t, fn=fn: fn(t.nc, 0, correction=0, keepdim=True))
    case(f"{op}.mixed", lambda t, fn=fn: fn(t.nc, ("N", 1)))
case("prod.all", lambda t: torch.prod(t.nc))
case("prod.index", lambda t: torch.prod(t.nc, 1))
case("prod.name", lambda t: torch.prod(t.nc, "C"))
case("prod.name_keepdim", lambda t: torch.prod(t.nc, "C", keepdim=True))
case("prod.dtype", lambda t: torch.prod(t.nc, 0, dtype=torch.float64))
case("prod.name_unnamed", lambda t: torch.prod(t.u, "C"))
for op in ["amax", "amin"]:
    fn = getattr(torch, op)
    case(f"{op}.all", lambda t, fn=fn: fn(t.nc))
    case(f"{op}.index", lambda t, fn=fn: fn(t.nc, 1))
    case(f"{op}.keepdim", lambda t, fn=fn: fn(t.nc, 1, keepdim=True))
    case(f"{op}.unnamed", lambda t, fn=fn: fn(t.u, 1))
for op in ["max", "min"]:
    fn = getattr(torch, op)
    case(f"{op}.all", lambda t, fn=fn: fn(t.nc))
    case(f"{op}.index", lambda t, fn=fn: fn(t.nc, 1))
    case(f"{op}.name", lambda t, fn=fn: fn(t.nc, "C"))
    case(f"{op}.name_keepdim", lambda t, fn=fn: fn(t.nc, "C", keepdim=True))
    case(f"{op}.index_keepdim", lambda t, fn=fn: fn(t.nc, 0, keepdim=True))
    case(f"{op}.name_unnamed", lambda t, fn=fn: fn(t.u, "N"))
for op in ["argmax", "argmin"]:
    fn = getattr(torch, op)
    case(f"{op}.all", lambda t, fn=fn: fn(t.nc))
    case(f"{op}.index", lambda t, fn=fn: fn(t.nc, 1))
    case(f"{op}.keepdim", lambda t, fn=fn: fn(t.nc, 1, keepdim=True))
for op in ["all", "any"]:
    fn = getattr(torch, op)
    case(f"{op}.all", lambda t, fn=fn: fn(t.bnc))
    case(f"{op}.index", lambda t, fn=fn: fn(t.bnc, 1))
    case(f"{op}.index_keepdim", lambda t, fn=fn: fn(t.bnc, 1, keepdim=True))
    case(f"{op}.name", lambda t, fn=fn: fn(t.bnc, "C"))
    case(f"{op}.name_unnamed", lambda t, fn=fn: fn(t.bu, "C"))
    case(f"{op}.float", lambda t, fn=fn: fn(t.nc))
case("count_nonzero.all", lambda t: torch.count_nonzero(t.nc))
case("count_nonzero.index", lambda t: torch.count_nonzero(t.nc, 1))
for op in ["softmax", "log_softmax"]:
    fn = getattr(torch, op)
    case(f"{op}.index", lambda t, fn=fn: fn(t.nc, 1))
    case(f"{op}.name", lambda t, fn=fn: fn(t.nc, "C"))
    case(f"{op}.dtype", lambda t, fn=fn: fn(t.nc, "N", dtype=torch.float64))
    case(f"{op}.missing_name", lambda t, fn=fn: fn(t.nc, "X"))
    case(f"{op}.name_unnamed", lambda t, fn=fn: fn(t.u, "N"))
for op in ["cumsum", "cumprod"]:
    fn = getattr(torch, op)
    case(f"{op}.index", lambda t, fn=fn: fn(t.nc, 1))
    case(f"{op}.name", lambda t, fn=fn: fn(t.nc, "C"))
    case(f"{op}.dtype", lambda t, fn=fn: fn(t.nc, "N", dtype=torch.float64))
    case(f"{op}.int", lambda t, fn=fn: fn(t.inc, 0))
case("sort.index", lambda t: torch.sort(t.nc, 1))
case("sort.descending", lambda t: torch.sort(t.nc, 0, descending=True))

# ---- matmul ---------------------------------------------------------------------------------

case("mm.named", lambda t: torch.mm(t.ab23, t.xc34))
case("mm.one_named", lambda t: torch.mm(t.ab23, t.u34))
case("mm.duplicate", lambda t: torch.mm(t.ab23, t.ba32))
case("matmul.2d_2d", lambda t: torch.matmul(t.ab23, t.xc34))
case("matmul.1d_1d", lambda t: torch.matmul(t.k3, t.c))
case("matmul.1d_2d", lambda t: torch.matmul(t.k3, t.xc34))
case("matmul.2d_1d", lambda t: torch.matmul(t.ab23, t.k3))
case("matmul.3d_3d", lambda t: torch.matmul(t.nab, t._bc))
case("matmul.3d_2d", lambda t: torch.matmul(t.nab, t.bn32))
case("matmul.3d_2d_dup", lambda t: torch.matmul(t.nab, t.bc34))
case("matmul.2d_3d", lambda t: torch.matmul(t.ab23.rename(None).refine_names("X", "B"), t._bc))
case("matmul.batch_mismatch", lambda t: torch.matmul(t.nab, t.mbc))
case("matmul.unnamed", lambda t: torch.matmul(t.ab23.rename(None), t.u34))
case("bmm.named", lambda t: torch.bmm(t.nab, t._bc))
case("bmm.mismatch", lambda t: torch.bmm(t.nab, t.mbc))
case("mv.named", lambda t: torch.mv(t.ab23, t.k3))
case("dot.named", lambda t: torch.dot(t.k3, t.c))
case("dot.one_named", lambda t: torch.dot(t.k3, t.u3))
case("outer.named_self", lambda t: torch.outer(t.n, t.u3))
case("outer.named_other", lambda t: torch.outer(t.u3, t.n))
case("outer.both", lambda t: torch.outer(t.n, t.c))
case("addmm.named_bias", lambda t: torch.addmm(t.c4, t.ab23, t.xc34))
case("addmm.unnamed_bias", lambda t: torch.addmm(t.u4, t.ab23, t.xc34))
case("addmm.named_bias_unnamed_mats", lambda t: torch.addmm(t.c4, t.ab23.rename(None), t.u34))
case("addmm.mismatch", lambda t: torch.addmm(t.d4, t.ab23, t.xc34))
case("addmm.beta0", lambda t: torch.addmm(t.c4, t.ab23, t.xc34, beta=0))
case("addmm.alpha2", lambda t: torch.addmm(t.c4, t.ab23, t.xc34, alpha=2))
case("addmm.beta2", lambda t: torch.addmm(t.c4, t.ab23, t.xc34, beta=2))

# ---- masks ----------------------------------------------------------------------------------

case("masked_fill.named_self", lambda t: t.nc.masked_fill(t.bu, 0.0))
case("masked_fill.named_mask", lambda t: t.u.masked_fill(t.bnc, 0.0))
case("masked_fill.both", lambda t: t.nc.masked_fill(t.bnc, 0.0))
case("masked_fill.broadcast_mask", lambda t: t.nc.masked_fill(t.bc, 0.0))
case("masked_fill.unnamed_broadcast_mask", lambda t: t.nc.masked_fill(t.bu3, 0.0))
case("masked_fill.mismatch", lambda t: t.nc.masked_fill(t.bd, 0.0))
case("masked_fill.tensor_value", lambda t: t.nc.masked_fill(t.bu, torch.tensor(0.0)))
case("masked_fill_.named_self", lambda t: t.nc.masked_fill_(t.bu, 0.0))
case("masked_fill_.named_mask", lambda t: t.u.masked_fill_(t.b_c, 0.0))
case("masked_fill_.broadcast_mask", lambda t: t.nc.masked_fill_(t.bu3, 0.0))
case("masked_fill_.named_broadcast_mask", lambda t: t.u.masked_fill_(t.bc, 0.0))
case("masked_select.named_self", lambda t: t.nc.masked_select(t.bu))
case("masked_select.named_mask", lambda t: t.u.masked_select(t.bnc))
case("nonzero.named", lambda t: t.nc.nonzero())
case("nonzero_tuple.named", lambda t: t.nc.nonzero(as_tuple=True))
case("where_nonzero.named", lambda t: torch.where(t.bnc))

# ---- joins, gathers, shape ops --------------------------------------------------------------

case("cat.index", lambda t: torch.cat([t.nc, t.nc], 0))
case("cat.name", lambda t: torch.cat([t.nc, t.nc], "N"))
case("cat.mixed", lambda t: torch.cat([t.nc, t.u], 0))
case("cat.partial", lambda t: torch.cat([t.n_, t._c], 0))
case("cat.mismatch", lambda t: torch.cat([t.nc, t.nd], 0))
case("cat.unnamed_first_name", lambda t: torch.cat([t.u, t.nc], "N"))
case("cat.name_unnamed", lambda t: torch.cat([t.u, t.u], "N"))
case("stack.named", lambda t: torch.stack([t.nc, t.nc], 0))
case("stack.one_named", lambda t: torch.stack([t.u, t.nc], 0))
case("gather.named_self", lambda t: torch.gather(t.nc, 0, t.gi))
case("gather.named_index", lambda t: torch.gather(t.u, 0, t.gin))
case("gather.name", lambda t: torch.gather(t.nc, "N", t.gi))
case("gather.name_unnamed", lambda t: torch.gather(t.u, "N", t.gi))
case("index_select.named_self", lambda t: torch.index_select(t.nc, 0, t.idx))
case("index_select.named_index", lambda t: torch.index_select(t.u, 0, t.idxn))
case("index_select.name", lambda t: torch.index_select(t.nc, "N", t.idx))
case("take.named_self", lambda t: torch.take(t.nc, t.idx))
case("take.named_index", lambda t: torch.take(t.u, t.idxn))
case("flip.named", lambda t: torch.flip(t.nc, (0,)))
case("roll.named", lambda t: torch.roll(t.nc, 1, 0))
case("repeat.named", lambda t: t.nc.repeat(1, 1))
case("tril.named", lambda t: torch.tril(t.nc))
case("triu.named", lambda t: torch.triu(t.nc))

# ---- random ---------------------------------------------------------------------------------

case("uniform_.named", lambda t: t.nc.uniform_(0.0, 1.0))
case("normal_.named", lambda t: t.nc.normal_(0.0, 1.0))
case("exponential_.named", lambda t: t.nc.exponential_(1.0))
case("bernoulli_.named", lambda t: t.nc.bernoulli_(0.5))
case("random_.named", lambda t: t.inc.random_(0, 5))
case("bernoulli.named", lambda t: torch.bernoulli(t.nc / 10))
case("dropout.train", lambda t: torch.nn.functional.dropout(t.nc, 0.5, True))
case("dropout.eval", lambda t: torch.nn.functional.dropout(t.nc, 0.5, False))


def describe(r):
    if isinstance(r, torch.Tensor):
        return {
            "names": list(r.names),
            "shape": list(r.shape),
            "dtype": str(r.dtype).removeprefix("torch."),
        }
    if isinstance(r, (tuple, list)):
        return [describe(x) for x in r]
    raise TypeError(f"unexpected result {type(r)}")


def main():
    out = {"torch": torch.__version__, "cases": {}}
    inputs = Inputs()
    for cid, fn in CASES:
        torch.manual_seed(0)
        try:
            r = describe(fn(inputs))
            out["cases"][cid] = {"ok": r if isinstance(r, list) else [r]}
        except Exception as e:  # noqa: BLE001 - every refusal is an observation
            out["cases"][cid] = {"err": type(e).__name__, "msg": str(e).split("\n")[0]}
    lines = [json.dumps({"torch": out["torch"]})[:-1] + ', "cases": {']
    items = list(out["cases"].items())
    for i, (cid, v) in enumerate(items):
        sep = "," if i + 1 < len(items) else ""
        lines.append(f"  {json.dumps(cid)}: {json.dumps(v)}{sep}")
    lines.append("}}")
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
