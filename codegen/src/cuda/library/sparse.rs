//! The sparse COO routines as CUDA C: `segment` (the runs of equal sorted keys that
//! coalescing sums and densifying scatters) and `spmm` (sparse × dense). Both compute exactly
//! what the host routines in `runtime/src/library/{segment,spmm}.rs` compute, folding the same
//! values in the same order, so the backends agree bit for bit (NVRTC compiles with
//! `--fmad=false`, so `acc + a * b` rounds twice, as on the host).

use super::{Lib, address, copy_element, vars};
use crate::cuda::render::{cast_expr, load_expr, store_expr};
use smelt_ir::{DType, LibraryCall};

/// The accumulator of a sum into `dtype`: double for floats, wrapping `long long` for
/// integers and bools (a bool output is `acc != 0`, the host's or).
fn sum_acc(dtype: DType) -> DType {
    if dtype.is_float() {
        DType::F64
    } else {
        DType::I64
    }
}

/// One thread per (position, trailing element): the thread at the first position of a run of
/// equal keys folds the run and writes the row its slot names; other threads return.
pub(super) fn segment(lib: &mut Lib, call: &LibraryCall, first: bool) -> (usize, bool, usize) {
    let ((sd, sv), (_, kv), (_, lv), ov) =
        (&call.inputs[0], &call.inputs[1], &call.inputs[2], &call.out);
    let r = sv.ndim();
    let s = lib.view("x", sv);
    let k = lib.view("key", kv);
    let l = lib.view("slot", lv);
    let o = lib.view("o", ov);
    lib.unravel(2, "t", &s.sizes, "p");
    let p = vars("p", r);
    let n = s.sizes[0].clone();
    let key_at = |at: &str| format!("(long long)in1[{}]", address(&k, &[at.to_string()]));
    lib.line(2, &format!("const long long k = {};", key_at("p0")));
    lib.line(
        2,
        &format!("if (p0 > 0 && {} == k) continue;", key_at("p0 - 1")),
    );
    lib.line(
        2,
        &format!(
            "const long long slot = (long long)in2[{}];",
            address(&l, &["p0".to_string()])
        ),
    );
    lib.line(
        2,
        &format!("if (slot < 0 || slot >= {}) continue;", o.sizes[0]),
    );
    let mut dst = p.clone();
    dst[0] = "slot".to_string();
    let dst = address(&o, &dst);
    if first {
        lib.line(2, &copy_element(call, &dst, &address(&s, &p)));
        return (sv.numel(), false, 0);
    }
    let acc = sum_acc(call.dtype);
    let acc_t = if acc == DType::F64 {
        "double"
    } else {
        "long long"
    };
    lib.line(2, &format!("{acc_t} acc = 0;"));
    lib.line(
        2,
        &format!(
            "for (long long q = p0; q < {n} && {} == k; ++q) {{",
            key_at("q")
        ),
    );
    let mut src = p.clone();
    src[0] = "q".to_string();
    let v = cast_expr(
        &load_expr(&format!("in0[{}]", address(&s, &src)), *sd),
        *sd,
        acc,
    );
    if acc == DType::F64 {
        lib.line(3, &format!("acc = acc + {v};"));
    } else {
        lib.line(3, &format!("acc = sm_i_add(acc, {v});"));
    }
    lib.line(2, "}");
    let out = store_expr(&cast_expr("acc", acc, call.dtype), call.dtype);
    lib.line(2, &format!("out[{dst}] = {out};"));
    (sv.numel(), false, 0)
}

/// The accumulator of a sparse × dense product into `dtype`: the dtype itself for f32/f64,
/// float for f16/bf16, wrapping `long long` for integers and bools.
fn product_acc(dtype: DType) -> DType {
    match dtype {
        DType::F64 => DType::F64,
        DType::F32 | DType::F16 | DType::BF16 => DType::F32,
        DType::Bool | DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => DType::I64,
        DType::C64 | DType::C128 => {
            unreachable!("invariant: the frontend refuses complex sparse products")
        }
    }
}

/// One thread per output element `(m, n)`: binary searches find row `m`'s entries (the rows
/// are sorted), then the thread folds `value · dense[col, n]` over them in order.
pub(super) fn spmm(lib: &mut Lib, call: &LibraryCall) -> (usize, bool, usize) {
    let ((_, rv), (_, cv), (vd, vv), (dd, dv), ov) = (
        &call.inputs[0],
        &call.inputs[1],
        &call.inputs[2],
        &call.inputs[3],
        &call.out,
    );
    let rows = lib.view("row", rv);
    let cols = lib.view("col", cv);
    let vals = lib.view("val", vv);
    let d = lib.view("d", dv);
    let o = lib.view("o", ov);
    lib.unravel(2, "t", &o.sizes, "p");
    let nnz = rows.sizes[0].clone();
    let row_at = |at: &str| format!("(long long)in0[{}]", address(&rows, &[at.to_string()]));
    // The first entry whose row is at least `bound`: `start` for p0, `end` for p0 + 1.
    for (var, bound) in [("start", "p0"), ("end", "p0 + 1")] {
        lib.line(2, &format!("long long {var} = 0;"));
        lib.line(2, "{");
        lib.line(3, &format!("long long hi = {nnz};"));
        lib.line(3, &format!("while ({var} < hi) {{"));
        lib.line(
            4,
            &format!("const long long mid = {var} + (hi - {var}) / 2;"),
        );
        lib.line(
            4,
            &format!(
                "if ({} < {bound}) {var} = mid + 1; else hi = mid;",
                row_at("mid")
            ),
        );
        lib.line(3, "}");
        lib.line(2, "}");
    }
    let acc = product_acc(call.dtype);
    let acc_t = match acc {
        DType::F64 => "double",
        DType::F32 => "float",
        DType::Bool
        | DType::U8
        | DType::I8
        | DType::I16
        | DType::I32
        | DType::I64
        | DType::F16
        | DType::BF16 => "long long",
        DType::C64 | DType::C128 => {
            unreachable!("invariant: the frontend refuses complex sparse products")
        }
    };
    lib.line(2, &format!("{acc_t} acc = 0;"));
    lib.line(2, "for (long long e = start; e < end; ++e) {");
    lib.line(
        3,
        &format!(
            "const long long c = (long long)in1[{}];",
            address(&cols, &["e".to_string()])
        ),
    );
    lib.line(3, &format!("if (c < 0 || c >= {}) continue;", d.sizes[0]));
    let a = cast_expr(
        &load_expr(&format!("in2[{}]", address(&vals, &["e".to_string()])), *vd),
        vd.compute_dtype(),
        acc,
    );
    let b = cast_expr(
        &load_expr(
            &format!("in3[{}]", address(&d, &["c".to_string(), "p1".to_string()])),
            *dd,
        ),
        dd.compute_dtype(),
        acc,
    );
    if acc == DType::I64 {
        lib.line(3, &format!("acc = sm_i_add(acc, sm_i_mul({a}, {b}));"));
    } else {
        lib.line(3, &format!("acc = acc + {a} * {b};"));
    }
    lib.line(2, "}");
    let out = store_expr(&cast_expr("acc", acc, call.dtype), call.dtype);
    lib.line(2, &format!("out[{}] = {out};", address(&o, &vars("p", 2))));
    (ov.numel(), false, 0)
}

#[cfg(test)]
mod tests {
    use super::super::render_library;
    use smelt_ir::{DType, LibraryCall, LibraryOp, View};

    fn segment(first: bool, dtype: DType) -> LibraryCall {
        LibraryCall {
            op: LibraryOp::Segment { first },
            inputs: vec![
                (dtype, View::contiguous(&[6, 2])),
                (DType::I64, View::contiguous(&[6])),
                (DType::I64, View::contiguous(&[6])),
            ],
            dtype,
            len: 8,
            out: View::contiguous(&[4, 2]),
        }
    }

    #[test]
    fn segment_runs_fold_in_f64_or_wrapping_ints_and_firsts_copy() {
        let f = render_library(&segment(false, DType::F32)).kernel;
        assert!(f.body.contains("double acc = 0;"), "{}", f.body);
        assert!(f.body.contains("continue;"), "{}", f.body);
        assert_eq!(f.scalars[0], ("items".to_string(), 12));
        let i = render_library(&segment(false, DType::I32)).kernel;
        assert!(i.body.contains("sm_i_add"), "{}", i.body);
        let b = render_library(&segment(false, DType::Bool)).kernel;
        assert!(b.body.contains("!= 0"), "{}", b.body);
        let first = render_library(&segment(true, DType::F16)).kernel;
        assert!(!first.body.contains("acc"), "{}", first.body);
    }

    #[test]
    fn spmm_is_one_thread_per_output_element_with_the_host_accumulators() {
        let call = |dtype: DType| LibraryCall {
            op: LibraryOp::SpMM,
            inputs: vec![
                (DType::I64, View::contiguous(&[5])),
                (DType::I64, View::new(vec![5], vec![1], 5)),
                (dtype, View::contiguous(&[5])),
                (dtype, View::new(vec![3, 4], vec![1, 3], 0)),
            ],
            dtype,
            len: 8,
            out: View::contiguous(&[2, 4]),
        };
        for (dtype, acc) in [
            (DType::F32, "float acc"),
            (DType::F64, "double acc"),
            (DType::BF16, "float acc"),
            (DType::I64, "long long acc"),
        ] {
            let k = render_library(&call(dtype)).kernel;
            assert!(k.body.contains(acc), "{dtype}: {}", k.body);
            assert_eq!(k.scalars[0], ("items".to_string(), 8));
        }
    }
}
