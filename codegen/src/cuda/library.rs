//! Render for library calls: a [`LibraryCall`] (gather, take, advanced indexing, argmax,
//! cumsum, sort, integer matmul …) as one CUDA C kernel, so every library routine but a float
//! matmul (cuBLAS) runs on the device where its buffers live. Pure, like [`super::render()`].
//!
//! Each kernel computes exactly what the host routine in `runtime/src/library/` computes, in
//! the same order where order matters: one thread per output element for reads (gather,
//! index_select, take, index); one thread per line for argmax/argmin, cumsum/cumprod and sort,
//! each walking its line in order (first occurrence wins ties, NaN the extreme; f64 or
//! wrapping i64 accumulators; a stable merge sort with NaN largest); one thread for an
//! `index_put`, whose repeated indices must keep the host's last-write-wins order. An index
//! out of range reads nothing and writes nothing (the output was zeroed), as on the host.
//!
//! Sizes, strides and offsets of every view are `long long` parameters; the source holds only
//! the structure (op, dtypes, ranks), so it is its own cache key, as for kernels.

mod sparse;

use super::render::{
    BLOCK, CudaKernel, blocks_for, cast_expr, load_expr, storage_type, store_expr, value_type,
};
use smelt_ir::{DType, LibraryCall, LibraryOp, View};
use std::fmt::Write as _;

/// A rendered library kernel and the scratch it needs.
#[derive(Clone, Debug, PartialEq)]
pub struct LibraryKernel {
    pub kernel: CudaKernel,
    /// Bytes of device scratch passed after the output (a sort's merge buffers); 0 for none.
    pub scratch: usize,
}

/// Whether `call` runs on cuBLAS rather than a rendered kernel: a matmul of one float or
/// complex dtype.
pub fn runs_on_cublas(call: &LibraryCall) -> bool {
    match call.op {
        LibraryOp::Matmul => {
            (call.dtype.is_float() || call.dtype.is_complex())
                && call.inputs.iter().all(|(d, _)| *d == call.dtype)
        }
        // Rendered: the product's rounding then the add, as the host routine does (the
        // `fold_bias` pass that makes these calls does not run for CUDA targets).
        LibraryOp::MatmulAdd { .. }
        | LibraryOp::Gather { .. }
        | LibraryOp::IndexSelect { .. }
        | LibraryOp::Take
        | LibraryOp::Index { .. }
        | LibraryOp::IndexPut { .. }
        | LibraryOp::ArgMax { .. }
        | LibraryOp::ArgMin { .. }
        | LibraryOp::CumSum { .. }
        | LibraryOp::CumProd { .. }
        | LibraryOp::Sort { .. }
        | LibraryOp::Segment { .. }
        | LibraryOp::SpMM => false,
    }
}

/// The kernel source being built: its `long long` parameters and body.
struct Lib {
    scalars: Vec<(String, i64)>,
    code: String,
}

/// The parameter names of one view: sizes, strides, offset.
struct ViewParams {
    sizes: Vec<String>,
    strides: Vec<String>,
    offset: String,
}

impl Lib {
    fn param(&mut self, name: String, value: i64) -> String {
        self.scalars.push((name.clone(), value));
        name
    }

    /// Registers `view`'s sizes, strides and offset as parameters named after `name`.
    fn view(&mut self, name: &str, view: &View) -> ViewParams {
        let sizes = (0..view.ndim())
            .map(|d| self.param(format!("{name}_n{d}"), view.shape[d] as i64))
            .collect();
        let strides = (0..view.ndim())
            .map(|d| self.param(format!("{name}_s{d}"), view.strides[d] as i64))
            .collect();
        let offset = self.param(format!("{name}_off"), view.offset as i64);
        ViewParams {
            sizes,
            strides,
            offset,
        }
    }

    fn line(&mut self, indent: usize, text: &str) {
        let _ = writeln!(self.code, "{}{text}", "  ".repeat(indent));
    }

    /// Declares `{var}0..{var}{r-1}` as the row-major unravelling of `flat` over `sizes`.
    fn unravel(&mut self, indent: usize, flat: &str, sizes: &[String], var: &str) {
        if sizes.is_empty() {
            return;
        }
        self.line(indent, &format!("long long {var}_rest = {flat};"));
        for d in (1..sizes.len()).rev() {
            let n = &sizes[d];
            self.line(
                indent,
                &format!("const long long {var}{d} = {var}_rest % {n}; {var}_rest /= {n};"),
            );
        }
        self.line(indent, &format!("const long long {var}0 = {var}_rest;"));
    }
}

/// `offset + Σ point[d]·stride[d]` with `point[d]` given per dim.
fn address(v: &ViewParams, point: &[String]) -> String {
    let mut a = v.offset.clone();
    for (p, s) in point.iter().zip(&v.strides) {
        let _ = write!(a, " + {p} * {s}");
    }
    a
}

/// `{var}0 .. {var}{n-1}`.
fn vars(var: &str, n: usize) -> Vec<String> {
    (0..n).map(|d| format!("{var}{d}")).collect()
}

fn product(sizes: &[String]) -> String {
    if sizes.is_empty() {
        "1LL".to_string()
    } else {
        sizes.join(" * ")
    }
}

/// The C expression of a wrapped or plain index check: declares nothing, yields a bool.
fn in_range(v: &str, size: &str) -> String {
    format!("({v} >= 0 && {v} < {size})")
}

fn entry_name(call: &LibraryCall) -> String {
    let clean: String = call
        .op
        .name()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("smelt_lib_{clean}")
}

/// Renders `call` as one kernel whose parameters are the inputs in order, the output, the
/// scratch (when it needs one), then the scalars. A float matmul normally runs on cuBLAS
/// ([`runs_on_cublas`]); rendered, it is the host's reference loop (f64 accumulators), for the
/// problems cuBLAS cannot take (sizes past its `int`).
pub fn render_library(call: &LibraryCall) -> LibraryKernel {
    let mut lib = Lib {
        scalars: vec![],
        code: String::new(),
    };
    let (items, serial, scratch) = match &call.op {
        LibraryOp::Gather { dim } => gather(&mut lib, call, *dim),
        LibraryOp::IndexSelect { dim } => index_select(&mut lib, call, *dim),
        LibraryOp::Take => take(&mut lib, call),
        LibraryOp::Index { indices } => index(&mut lib, call, *indices),
        LibraryOp::IndexPut { indices } => index_put(&mut lib, call, *indices),
        LibraryOp::ArgMax { axes } => argreduce(&mut lib, call, *axes, true),
        LibraryOp::ArgMin { axes } => argreduce(&mut lib, call, *axes, false),
        LibraryOp::CumSum { dim } => scan(&mut lib, call, *dim, false),
        LibraryOp::CumProd { dim } => scan(&mut lib, call, *dim, true),
        LibraryOp::Sort {
            dim,
            descending,
            indices,
        } => sort(&mut lib, call, *dim, *descending, *indices),
        LibraryOp::Matmul | LibraryOp::MatmulAdd { .. } => matmul(&mut lib, call),
        LibraryOp::Segment { first } => sparse::segment(&mut lib, call, *first),
        LibraryOp::SpMM => sparse::spmm(&mut lib, call),
    };
    let entry = entry_name(call);
    let mut params: Vec<String> = call
        .inputs
        .iter()
        .enumerate()
        .map(|(i, (d, _))| format!("const {}* __restrict__ in{i}", storage_type(*d)))
        .collect();
    // The output as its view writes it (an `index_put` through `z.real` writes parts).
    let out_dtype = call.out.read.dtype(call.dtype);
    params.push(format!("{}* __restrict__ out", storage_type(out_dtype)));
    if scratch > 0 {
        params.push("long long* __restrict__ scratch".to_string());
    }
    params.push("const long long items".to_string());
    params.extend(
        lib.scalars
            .iter()
            .map(|(n, _)| format!("const long long {n}")),
    );
    let loop_head = if serial {
        // One thread walks every item in order.
        "  for (long long t = 0; t < items; ++t) {"
    } else {
        "  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < items; \
         t += (long long)gridDim.x * blockDim.x) {"
    };
    let body = format!(
        "extern \"C\" __global__ void __launch_bounds__({BLOCK}) {entry}(\n    {}) {{\n\
         {loop_head}\n{}  }}\n}}\n",
        params.join(",\n    "),
        lib.code
    );
    let mut scalars = vec![("items".to_string(), items as i64)];
    scalars.extend(lib.scalars);
    let (grid, block) = match (items, serial) {
        (0, _) => (0, BLOCK),
        (_, true) => (1, 1),
        (_, false) => (blocks_for(items as u64, BLOCK as u64), BLOCK),
    };
    LibraryKernel {
        kernel: CudaKernel {
            entry,
            body,
            scalars,
            grid,
            block,
            vectorized: false,
        },
        scratch,
    }
}

/// Copies the element at `src` of `in0` to `dst` of `out` (one dtype: a raw copy).
fn copy_element(call: &LibraryCall, dst: &str, src: &str) -> String {
    assert_eq!(
        call.inputs[0].0, call.dtype,
        "invariant: a gathering read keeps its source's dtype"
    );
    format!("out[{dst}] = in0[{src}];")
}

fn gather(lib: &mut Lib, call: &LibraryCall, dim: usize) -> (usize, bool, usize) {
    let (sv, iv, ov) = (&call.inputs[0].1, &call.inputs[1].1, &call.out);
    let s = lib.view("x", sv);
    let i = lib.view("idx", iv);
    let o = lib.view("o", ov);
    let r = ov.ndim();
    lib.unravel(2, "t", &o.sizes, "p");
    let p = vars("p", r);
    lib.line(
        2,
        &format!("const long long i = (long long)in1[{}];", address(&i, &p)),
    );
    if sv.ndim() == 0 {
        // A 0-dim self reads like a one-element vector.
        let copy = copy_element(call, &address(&o, &p), &s.offset);
        lib.line(2, &format!("if (i == 0) {copy}"));
        return (ov.numel(), false, 0);
    }
    let mut checks = vec![in_range("i", &s.sizes[dim])];
    let mut sp = p.clone();
    sp[dim] = "i".to_string();
    for (d, size) in s.sizes.iter().enumerate() {
        if d != dim {
            checks.push(format!("p{d} < {size}"));
        }
    }
    let copy = copy_element(call, &address(&o, &p), &address(&s, &sp));
    lib.line(2, &format!("if ({}) {copy}", checks.join(" && ")));
    (ov.numel(), false, 0)
}

fn index_select(lib: &mut Lib, call: &LibraryCall, dim: usize) -> (usize, bool, usize) {
    let (sv, iv, ov) = (&call.inputs[0].1, &call.inputs[1].1, &call.out);
    let s = lib.view("x", sv);
    let i = lib.view("idx", iv);
    let o = lib.view("o", ov);
    if sv.ndim() == 0 {
        lib.line(
            2,
            &format!("const long long i = (long long)in1[{}];", i.offset),
        );
        let copy = copy_element(call, &o.offset, &s.offset);
        lib.line(2, &format!("if (i == 0) {copy}"));
        return (ov.numel(), false, 0);
    }
    lib.unravel(2, "t", &o.sizes, "p");
    let p = vars("p", ov.ndim());
    lib.line(
        2,
        &format!(
            "const long long i = (long long)in1[{}];",
            address(&i, &[format!("p{dim}")])
        ),
    );
    let mut sp = p.clone();
    sp[dim] = "i".to_string();
    let copy = copy_element(call, &address(&o, &p), &address(&s, &sp));
    lib.line(2, &format!("if ({}) {copy}", in_range("i", &s.sizes[dim])));
    (ov.numel(), false, 0)
}

fn take(lib: &mut Lib, call: &LibraryCall) -> (usize, bool, usize) {
    let (sv, iv, ov) = (&call.inputs[0].1, &call.inputs[1].1, &call.out);
    let s = lib.view("x", sv);
    let i = lib.view("idx", iv);
    let o = lib.view("o", ov);
    lib.unravel(2, "t", &o.sizes, "p");
    let p = vars("p", ov.ndim());
    let numel = product(&s.sizes);
    lib.line(
        2,
        &format!("long long i = (long long)in1[{}];", address(&i, &p)),
    );
    lib.line(2, &format!("if (i < 0) i += {numel};"));
    lib.line(2, &format!("if (!{}) continue;", in_range("i", &numel)));
    lib.unravel(2, "i", &s.sizes, "q");
    let q = vars("q", sv.ndim());
    lib.line(2, &copy_element(call, &address(&o, &p), &address(&s, &q)));
    (ov.numel(), false, 0)
}

/// Declares `v0..v{k-1}`, each index `j` read at point `b` from input `first + j` and wrapped
/// against `target`'s dim `j`, and `ok` (all in range).
fn read_indices(
    lib: &mut Lib,
    call: &LibraryCall,
    first: usize,
    k: usize,
    b: &[String],
    target: &ViewParams,
) {
    lib.line(2, "bool ok = true;");
    for j in 0..k {
        let iv = lib.view(&format!("i{j}"), &call.inputs[first + j].1);
        let size = &target.sizes[j];
        lib.line(
            2,
            &format!(
                "long long v{j} = (long long)in{}[{}];",
                first + j,
                address(&iv, b)
            ),
        );
        lib.line(2, &format!("if (v{j} < 0) v{j} += {size};"));
        lib.line(
            2,
            &format!("ok = ok && {};", in_range(&format!("v{j}"), size)),
        );
    }
}

fn index(lib: &mut Lib, call: &LibraryCall, k: usize) -> (usize, bool, usize) {
    let (sv, ov) = (&call.inputs[0].1, &call.out);
    let rest = sv.ndim() - k;
    let b_rank = ov.ndim() - rest;
    let s = lib.view("x", sv);
    let o = lib.view("o", ov);
    lib.unravel(2, "t", &o.sizes, "p");
    let p = vars("p", ov.ndim());
    read_indices(lib, call, 1, k, &p[..b_rank], &s);
    let mut sp = vars("v", k);
    sp.extend_from_slice(&p[b_rank..]);
    let copy = copy_element(call, &address(&o, &p), &address(&s, &sp));
    lib.line(2, &format!("if (ok) {copy}"));
    (ov.numel(), false, 0)
}

fn index_put(lib: &mut Lib, call: &LibraryCall, k: usize) -> (usize, bool, usize) {
    let ((vd, vv), tv) = (&call.inputs[1], &call.out);
    let rest = tv.ndim() - k;
    let b_rank = vv.ndim() - rest;
    let v = lib.view("v", vv);
    let target = lib.view("o", tv);
    lib.unravel(2, "t", &v.sizes, "p");
    let p = vars("p", vv.ndim());
    read_indices(lib, call, 2, k, &p[..b_rank], &target);
    let mut tp = vars("v", k);
    tp.extend_from_slice(&p[b_rank..]);
    let value = load_expr(&format!("in1[{}]", address(&v, &p)), *vd);
    let dtype = tv.read.dtype(call.dtype);
    let value = store_expr(&cast_expr(&value, *vd, dtype), dtype);
    lib.line(
        2,
        &format!("if (ok) out[{}] = {value};", address(&target, &tp)),
    );
    // One thread, in order: with repeated indices the last write wins, as on the host.
    (vv.numel(), true, 0)
}

/// `isnan` for a value of `dtype` (always false for integers and bools).
fn is_nan(v: &str, dtype: DType) -> String {
    if dtype.is_float() {
        format!("({v} != {v})")
    } else {
        "false".to_string()
    }
}

/// The kept point (`p*`) and the walk over one line's trailing `axes` dims (`q*`, flat `at`).
fn argreduce(lib: &mut Lib, call: &LibraryCall, axes: usize, max: bool) -> (usize, bool, usize) {
    let ((xd, xv), ov) = (&call.inputs[0], &call.out);
    let kept = xv.ndim() - axes;
    let x = lib.view("x", xv);
    let o = lib.view("o", ov);
    let inner = product(&x.sizes[kept..]);
    let t = value_type(*xd);
    lib.unravel(2, "t", &x.sizes[..kept], "p");
    lib.line(2, &format!("{t} best = ({t})0;"));
    lib.line(2, "long long best_at = 0;");
    lib.line(2, &format!("for (long long at = 0; at < {inner}; ++at) {{"));
    lib.unravel(3, "at", &x.sizes[kept..], "q");
    let mut point = vars("p", kept);
    point.extend(vars("q", axes));
    let v = load_expr(&format!("in0[{}]", address(&x, &point)), *xd);
    lib.line(3, &format!("const {t} v = {v};"));
    let better = if max { "v > best" } else { "v < best" };
    // The first element starts; a NaN best is never beaten; a NaN or a strictly more extreme
    // value replaces the best.
    lib.line(
        3,
        &format!(
            "if (at == 0 || (!{} && ({} || {better}))) {{ best = v; best_at = at; }}",
            is_nan("best", *xd),
            is_nan("v", *xd)
        ),
    );
    lib.line(2, "}");
    let out = store_expr(&cast_expr("best_at", DType::I64, call.dtype), call.dtype);
    lib.line(
        2,
        &format!("out[{}] = {out};", address(&o, &vars("p", kept))),
    );
    (ov.numel(), false, 0)
}

/// Declares `p*` as the point of line `t` along `dim` (`p{dim}` is set by the caller's loop).
fn line_point(lib: &mut Lib, x: &ViewParams, dim: usize) -> Vec<String> {
    let mut outer = x.sizes.clone();
    outer.remove(dim);
    lib.unravel(2, "t", &outer, "u");
    let mut point = vars("u", outer.len());
    point.insert(dim, "i".to_string());
    point
}

fn scan(lib: &mut Lib, call: &LibraryCall, dim: usize, product_scan: bool) -> (usize, bool, usize) {
    let ((xd, xv), ov) = (&call.inputs[0], &call.out);
    let out_dtype = call.dtype;
    let x = lib.view("x", xv);
    let o = lib.view("o", ov);
    let point = line_point(lib, &x, dim);
    let n = &x.sizes[dim];
    if out_dtype.is_complex() {
        // Two f64 parts, products as (ac − bd) + (ad + bc)i, as the host's complex scan.
        let init = if product_scan { "1.0" } else { "0.0" };
        lib.line(2, &format!("double re = {init}, im = 0.0;"));
        lib.line(2, &format!("for (long long i = 0; i < {n}; ++i) {{"));
        let v = cast_expr(&format!("in0[{}]", address(&x, &point)), *xd, out_dtype);
        lib.line(3, &format!("const {} v = {v};", storage_type(out_dtype)));
        lib.line(3, "const double a = (double)v.x, b = (double)v.y;");
        if product_scan {
            lib.line(
                3,
                "const double t = re * a - im * b; im = re * b + im * a; re = t;",
            );
        } else {
            lib.line(3, "re = re + a; im = im + b;");
        }
        let out = cast_expr("make_double2(re, im)", DType::C128, out_dtype);
        lib.line(3, &format!("out[{}] = {out};", address(&o, &point)));
        lib.line(2, "}");
        let lines = xv.numel().checked_div(xv.shape[dim]).unwrap_or(0);
        return (lines, false, 0);
    }
    let float = out_dtype.is_float();
    let (acc_t, acc_dtype) = if float {
        ("double", DType::F64)
    } else {
        ("long long", DType::I64)
    };
    let init = if product_scan { "1" } else { "0" };
    lib.line(2, &format!("{acc_t} acc = ({acc_t}){init};"));
    lib.line(2, &format!("for (long long i = 0; i < {n}; ++i) {{"));
    let v = load_expr(&format!("in0[{}]", address(&x, &point)), *xd);
    // Each element is cast to the output dtype first, then accumulated.
    let v = cast_expr(&v, *xd, out_dtype);
    lib.line(3, &format!("const {} v = {v};", value_type(out_dtype)));
    let step = match (float, product_scan) {
        (true, false) => "acc = acc + (double)v;",
        (true, true) => "acc = acc * (double)v;",
        (false, false) => "acc = sm_i_add(acc, (long long)v);",
        (false, true) => "acc = sm_i_mul(acc, (long long)v);",
    };
    lib.line(3, step);
    let out = store_expr(&cast_expr("acc", acc_dtype, out_dtype), out_dtype);
    lib.line(3, &format!("out[{}] = {out};", address(&o, &point)));
    lib.line(2, "}");
    let lines = xv.numel().checked_div(xv.shape[dim]).unwrap_or(0);
    (lines, false, 0)
}

/// Whether value `a` sorts strictly before `b`: NaN above every number, and descending
/// reverses the comparison (not the result), so ties keep their order either way.
fn sorts_before(a: &str, b: &str, dtype: DType, descending: bool) -> String {
    let (lo, hi) = if descending { (b, a) } else { (a, b) };
    format!(
        "((!{} && {}) || {lo} < {hi})",
        is_nan(lo, dtype),
        is_nan(hi, dtype)
    )
}

fn sort(
    lib: &mut Lib,
    call: &LibraryCall,
    dim: usize,
    descending: bool,
    indices: bool,
) -> (usize, bool, usize) {
    let ((xd, xv), ov) = (&call.inputs[0], &call.out);
    let x = lib.view("x", xv);
    let o = lib.view("o", ov);
    let point = line_point(lib, &x, dim);
    let n = x.sizes[dim].clone();
    let t = value_type(*xd);
    // The line's element at position `i`.
    let element = load_expr(&format!("in0[{}]", address(&x, &point)), *xd);
    lib.line(2, &format!("long long* a = scratch + t * 2 * {n};"));
    lib.line(2, &format!("long long* b = a + {n};"));
    lib.line(2, &format!("for (long long i = 0; i < {n}; ++i) a[i] = i;"));
    lib.line(
        2,
        &format!("for (long long width = 1; width < {n}; width *= 2) {{"),
    );
    lib.line(
        3,
        &format!("for (long long lo = 0; lo < {n}; lo += 2 * width) {{"),
    );
    lib.line(
        4,
        &format!(
            "const long long mid = lo + width < {n} ? lo + width : {n};\n          \
             const long long hi = lo + 2 * width < {n} ? lo + 2 * width : {n};"
        ),
    );
    lib.line(4, "long long l = lo, r = mid, k = lo;");
    lib.line(4, "while (l < mid && r < hi) {");
    lib.line(5, "long long i = a[r];");
    lib.line(5, &format!("const {t} w = {element};"));
    lib.line(5, "i = a[l];");
    lib.line(5, &format!("const {t} u = {element};"));
    // Stable: the right run's element goes first only when it sorts strictly before.
    let right_first = sorts_before("w", "u", *xd, descending);
    lib.line(
        5,
        &format!("if ({right_first}) b[k++] = a[r++]; else b[k++] = a[l++];"),
    );
    lib.line(4, "}");
    lib.line(4, "while (l < mid) b[k++] = a[l++];");
    lib.line(4, "while (r < hi) b[k++] = a[r++];");
    lib.line(3, "}");
    lib.line(3, "long long* swap = a; a = b; b = swap;");
    lib.line(2, "}");
    lib.line(2, &format!("for (long long j = 0; j < {n}; ++j) {{"));
    lib.line(3, "const long long i = a[j];");
    let mut out_point = point.clone();
    out_point[dim] = "j".to_string();
    let dst = address(&o, &out_point);
    if indices {
        let v = store_expr(&cast_expr("i", DType::I64, call.dtype), call.dtype);
        lib.line(3, &format!("out[{dst}] = {v};"));
    } else {
        lib.line(3, &format!("out[{dst}] = in0[{}];", address(&x, &point)));
    }
    lib.line(2, "}");
    let lines = xv.numel().checked_div(xv.shape[dim]).unwrap_or(0);
    // Two buffers of positions per line (never none: the parameter is always there).
    (lines, false, (2 * xv.numel() * 8).max(8))
}

/// A matmul as the host's reference loop: one thread per output element, an f64 accumulator
/// for floats (`acc += x·y`, no fused multiply-add: NVRTC compiles with `--fmad=false`) or a
/// wrapping i64 one for integers and bools, rounded once to the output dtype.
fn matmul(lib: &mut Lib, call: &LibraryCall) -> (usize, bool, usize) {
    let ((ad, av), (bd, bv), ov) = (&call.inputs[0], &call.inputs[1], &call.out);
    let r = ov.ndim();
    let a = lib.view("a", av);
    let b = lib.view("b", bv);
    let o = lib.view("o", ov);
    // `MatmulAdd`'s third input, read at the output's index, and whether a relu follows.
    let (addend, relu) = if let LibraryOp::MatmulAdd { relu } = call.op {
        (Some(lib.view("c", &call.inputs[2].1)), relu)
    } else {
        (None, false)
    };
    lib.unravel(2, "t", &o.sizes, "p");
    let p = vars("p", r);
    let k = &a.sizes[r - 1];
    if call.dtype.is_complex() {
        assert!(!relu, "invariant: relu is not defined on complex values");
        // As the host's complex reference loop: two f64 parts, rounded once.
        let mut ap = p.clone();
        ap[r - 1] = "k".to_string();
        let mut bp = p.clone();
        bp[r - 2] = "k".to_string();
        lib.line(2, "double re = 0.0, im = 0.0;");
        lib.line(2, &format!("for (long long k = 0; k < {k}; ++k) {{"));
        let x = cast_expr(&format!("in0[{}]", address(&a, &ap)), *ad, DType::C128);
        let y = cast_expr(&format!("in1[{}]", address(&b, &bp)), *bd, DType::C128);
        lib.line(3, &format!("const double2 x = {x}, y = {y};"));
        lib.line(3, "re = re + (x.x * y.x - x.y * y.y);");
        lib.line(3, "im = im + (x.x * y.y + x.y * y.x);");
        lib.line(2, "}");
        let mut out = cast_expr("make_double2(re, im)", DType::C128, call.dtype);
        if let Some(c) = &addend {
            // The product rounded to the dtype, then `+ c` in complex128, rounded again.
            let prod = cast_expr(&out, call.dtype, DType::C128);
            let (cd, _) = call.inputs[2];
            let cv = cast_expr(&format!("in2[{}]", address(c, &p)), cd, DType::C128);
            lib.line(2, &format!("const double2 pc = {prod}, cc = {cv};"));
            out = cast_expr(
                "make_double2(pc.x + cc.x, pc.y + cc.y)",
                DType::C128,
                call.dtype,
            );
        }
        lib.line(2, &format!("out[{}] = {out};", address(&o, &p)));
        return (ov.numel(), false, 0);
    }
    // As `matmul_reference`: floats in f64, everything else (bools too) in wrapping i64.
    let acc = if call.dtype.is_float() {
        DType::F64
    } else {
        DType::I64
    };
    lib.line(2, &format!("{} acc = 0;", storage_type(acc)));
    lib.line(2, &format!("for (long long k = 0; k < {k}; ++k) {{"));
    let mut ap = p.clone();
    ap[r - 1] = "k".to_string();
    let mut bp = p.clone();
    bp[r - 2] = "k".to_string();
    let x = cast_expr(
        &load_expr(&format!("in0[{}]", address(&a, &ap)), *ad),
        *ad,
        acc,
    );
    let y = cast_expr(
        &load_expr(&format!("in1[{}]", address(&b, &bp)), *bd),
        *bd,
        acc,
    );
    if acc == DType::F64 {
        lib.line(3, &format!("acc = acc + {x} * {y};"));
    } else {
        lib.line(3, &format!("acc = sm_i_add(acc, sm_i_mul({x}, {y}));"));
    }
    lib.line(2, "}");
    let mut sum = cast_expr("acc", acc, call.dtype);
    if let Some(c) = &addend {
        // The product rounded to the dtype, then `+ c` in the dtype's compute type (f32 for
        // f16/bf16, wrapping i64 for integers), rounded again.
        let (cd, _) = call.inputs[2];
        let compute = if call.dtype.is_float() {
            call.dtype.compute_dtype()
        } else {
            DType::I64
        };
        let prod = cast_expr(&sum, call.dtype, compute);
        let cv = cast_expr(
            &load_expr(&format!("in2[{}]", address(c, &p)), cd),
            cd,
            compute,
        );
        let added = if compute == DType::I64 {
            format!("sm_i_add({prod}, {cv})")
        } else {
            format!("({prod} + {cv})")
        };
        sum = cast_expr(&added, compute, call.dtype);
        if relu {
            // The graph's relu: a NaN stays, anything not above zero becomes +0.
            let v = cast_expr(&sum, call.dtype, compute);
            lib.line(2, &format!("const {} sum = {v};", storage_type(compute)));
            let keep = if compute == DType::I64 {
                "sum > 0"
            } else {
                "sum > 0 || sum != sum"
            };
            sum = cast_expr(&format!("(({keep}) ? sum : 0)"), compute, call.dtype);
        }
    }
    let out = store_expr(&sum, call.dtype);
    lib.line(2, &format!("out[{}] = {out};", address(&o, &p)));
    (ov.numel(), false, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(op: LibraryOp, inputs: Vec<(DType, View)>, dtype: DType, out: View) -> LibraryCall {
        LibraryCall {
            op,
            inputs,
            dtype,
            len: out.numel(),
            out,
        }
    }

    #[test]
    fn sizes_are_parameters_and_the_structure_is_the_source() {
        let c = |n: usize| {
            call(
                LibraryOp::CumSum { dim: 1 },
                vec![(DType::F32, View::contiguous(&[3, n]))],
                DType::F32,
                View::contiguous(&[3, n]),
            )
        };
        let (a, b) = (render_library(&c(4)), render_library(&c(9)));
        assert_eq!(a.kernel.body, b.kernel.body);
        assert_ne!(a.kernel.scalars, b.kernel.scalars);
        assert_eq!(a.kernel.scalars[0], ("items".to_string(), 3));
        assert!(a.kernel.body.contains("double acc"), "{}", a.kernel.body);
    }

    #[test]
    fn index_put_runs_in_order_on_one_thread_and_sort_takes_scratch() {
        let put = call(
            LibraryOp::IndexPut { indices: 1 },
            vec![
                (DType::F32, View::contiguous(&[5])),
                (DType::F32, View::contiguous(&[3])),
                (DType::I64, View::contiguous(&[3])),
            ],
            DType::F32,
            View::contiguous(&[5]),
        );
        let k = render_library(&put);
        assert_eq!((k.kernel.grid, k.kernel.block, k.scratch), (1, 1, 0));
        let sort = call(
            LibraryOp::Sort {
                dim: 0,
                descending: true,
                indices: true,
            },
            vec![(DType::F16, View::contiguous(&[10]))],
            DType::I64,
            View::contiguous(&[10]),
        );
        let k = render_library(&sort);
        assert_eq!(k.scratch, 2 * 10 * 8);
        assert!(
            k.kernel.body.contains("long long* __restrict__ scratch"),
            "{}",
            k.kernel.body
        );
        let empty = call(
            LibraryOp::Sort {
                dim: 0,
                descending: false,
                indices: false,
            },
            vec![(DType::F32, View::contiguous(&[0]))],
            DType::F32,
            View::contiguous(&[0]),
        );
        assert!(render_library(&empty).kernel.is_empty_launch());
    }

    #[test]
    fn only_float_matmuls_go_to_cublas() {
        let mm = |d: DType| {
            call(
                LibraryOp::Matmul,
                vec![
                    (d, View::contiguous(&[2, 3])),
                    (d, View::contiguous(&[3, 4])),
                ],
                d,
                View::contiguous(&[2, 4]),
            )
        };
        for d in [DType::F16, DType::BF16, DType::F32, DType::F64] {
            assert!(runs_on_cublas(&mm(d)), "{d}");
            // Rendered (sizes past cuBLAS's `int`), it accumulates in f64 as the host does.
            assert!(
                render_library(&mm(d)).kernel.body.contains("double acc"),
                "{d}"
            );
        }
        for d in [DType::I32, DType::I64, DType::U8] {
            assert!(!runs_on_cublas(&mm(d)), "{d}");
            assert!(render_library(&mm(d)).kernel.body.contains("sm_i_mul"));
        }
    }
}
