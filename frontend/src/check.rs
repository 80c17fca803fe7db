//! `SMELT_CHECK=1`: every realisation also runs unoptimised (every pass off: one kernel per
//! op) on the same backend, each of those kernels also on the reference interpreter (the
//! oracle) with the same inputs; a kernel that differs from the reference, or a requested
//! output that differs between the two runs, is reported as an error naming the node, its op
//! and its source line.

use smelt_ir::{BinaryOp, DType, Error, ErrorKind, Graph, Op, ReduceOp, Result};
use smelt_runtime::{Buffer, Executable, HostBuffer, Target};

/// How zeros compare: by sign (a zero of the wrong sign is a wrong result, which 1/x, atan2
/// or copysign would show), or of either sign alike in a graph that picks among equal values
/// ([`zeros_in`]).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Zeros {
    Signed,
    EitherSign,
}

/// How the zeros `g` computes compare: by sign, unless `g` takes a maximum or minimum. Of
/// values that compare equal (`max(−0, +0)`, a row max over both zeros) PyTorch leaves the
/// choice to the instruction (its scalar loops keep the first operand, its AVX2 `max_ps` the
/// second), and smelt's backends differ too (the cpu backend's elementwise max follows
/// IEEE 754-2019, its SIMD reductions keep whichever lane the vector instruction keeps, the
/// reference whatever Rust's `f64::max` returns). Such a zero may flow on into any op, so the
/// whole graph's zeros then compare unsigned.
fn zeros_in(g: &Graph) -> Zeros {
    let picks = g.topo_order().into_iter().any(|id| {
        matches!(
            g.node(id).op,
            Op::Binary {
                op: BinaryOp::Maximum | BinaryOp::Minimum,
                ..
            } | Op::Reduce {
                op: ReduceOp::Max | ReduceOp::Min,
                ..
            }
        )
    });
    if picks {
        Zeros::EitherSign
    } else {
        Zeros::Signed
    }
}

/// Whether two end-to-end results agree: exactly for integers; for floats within
/// `1e-6 + 1e-5·|y|`, zeros by their sign as `zeros` says. The optimised and the
/// one-kernel-per-op runs compute the same math on the same backend (fusion changes neither
/// the ops nor the order of a row's reduction), so they differ by rounding noise at most.
fn close(a: &HostBuffer, b: &HostBuffer, zeros: Zeros) -> Option<usize> {
    (0..a.len().min(b.len())).find(|&i| differs(a, b, i, zeros))
}

/// Whether one kernel's output agrees with the reference interpreter's on the same inputs:
/// [`close`], or within 4 ulps of the output's own dtype (the inline f32 transcendentals are
/// within 3 ulps of libm, `docs/math.md`; an f16/bf16 result rounds from them). A zero of the
/// other sign is never an ulp away.
fn kernel_close(a: &HostBuffer, b: &HostBuffer, zeros: Zeros) -> Option<usize> {
    let dtype = a.dtype();
    (0..a.len().min(b.len())).find(|&i| {
        let (x, y) = (a.get(i).as_f64(), b.get(i).as_f64());
        differs(a, b, i, zeros) && (x == 0.0 && y == 0.0 || ulps_apart(x, y, dtype) > 4)
    })
}

/// Whether element `i` of `a` and `b` differ: exactly for integers, beyond `1e-6 + 1e-5·|y|`
/// for floats (NaN equals NaN; zeros of other signs differ where `zeros` says so).
fn differs(a: &HostBuffer, b: &HostBuffer, i: usize, zeros: Zeros) -> bool {
    let (x, y) = (a.get(i), b.get(i));
    if a.dtype().is_float() {
        let (x, y) = (x.as_f64(), y.as_f64());
        if x == 0.0 && y == 0.0 {
            return zeros == Zeros::Signed && x.is_sign_negative() != y.is_sign_negative();
        }
        !(x == y || x.is_nan() && y.is_nan() || (x - y).abs() <= 1e-6 + 1e-5 * y.abs())
    } else {
        x != y
    }
}

/// Representable values of `dtype` between `x` and `y` (integers: always far apart).
fn ulps_apart(x: f64, y: f64, dtype: DType) -> u64 {
    // Bits mapped so that the integer order is the float order.
    let ordered = |bits: u64, sign: u64| if bits & sign != 0 { !bits } else { bits | sign };
    let key = |v: f64| -> Option<u64> {
        Some(match dtype {
            DType::F64 => ordered(v.to_bits(), 1 << 63),
            DType::F32 => ordered(u64::from((v as f32).to_bits()), 1 << 31),
            DType::F16 => ordered(u64::from(half::f16::from_f64(v).to_bits()), 1 << 15),
            DType::BF16 => ordered(u64::from(half::bf16::from_f64(v).to_bits()), 1 << 15),
            // Buffers hold real parts only; integers are never an ulp apart.
            DType::Bool
            | DType::U8
            | DType::I8
            | DType::I16
            | DType::I32
            | DType::I64
            | DType::C64
            | DType::C128 => {
                return None;
            }
        })
    };
    match (key(x), key(y)) {
        (Some(a), Some(b)) if !x.is_nan() && !y.is_nan() => a.abs_diff(b),
        (Some(_), Some(_)) | (None, _) | (_, None) => u64::MAX,
    }
}

fn located(n: &smelt_ir::Node) -> String {
    n.location
        .map(|l| format!(" at {}:{}", l.file(), l.line()))
        .unwrap_or_default()
}

/// Runs `plain` with every pass disabled (one kernel per op) on `target`, each of its
/// kernels also on the reference interpreter with the same inputs, and compares: every
/// kernel with the reference ([`kernel_close`]), then the requested outputs of `optimized`
/// with the one-kernel-per-op run's ([`close`]). Fused equals unfused equals reference, each
/// step held to its own error.
pub(crate) fn compare_unfused(
    target: Target,
    plain: &mut Graph,
    inputs: Vec<Buffer>,
    optimized: &[Option<Buffer>],
) -> Result<()> {
    let all: Vec<String> = smelt_passes::PIPELINE
        .iter()
        .map(|(n, _)| n.to_string())
        .collect();
    smelt_passes::optimize_with(plain, &all);
    let zeros = zeros_in(plain);
    let exec = Executable::new(smelt_passes::schedule(plain));
    let (unfused, mismatch) =
        smelt_runtime::execute_audited(target, &exec, plain, inputs, &|a, b| {
            kernel_close(a, b, zeros)
        })?;
    if let Some(m) = mismatch {
        let n = plain.node(m.node);
        return Err(Error::new(
            ErrorKind::Compile,
            format!(
                "SMELT_CHECK: kernel {} computing node %{} ({}){} differs from the reference interpreter on the same inputs at element {}: {} vs {}",
                m.kernel,
                m.node.index(),
                n.op.name(),
                located(n),
                m.element,
                m.got,
                m.want
            ),
        ));
    }
    let order = plain.topo_order();
    for id in order.into_iter().filter(|id| plain.outputs.contains(id)) {
        let (Some(a), Some(b)) = (&optimized[id.index()], &unfused[id.index()]) else {
            continue;
        };
        let (a, b) = (a.to_host()?, b.to_host()?);
        if let Some(i) = close(&a, &b, zeros) {
            let n = plain.node(id);
            return Err(Error::new(
                ErrorKind::Compile,
                format!(
                    "SMELT_CHECK: node %{} ({}){} differs between the optimised and the one-kernel-per-op runs at element {i}: {} vs {}",
                    id.index(),
                    n.op.name(),
                    located(n),
                    a.get(i),
                    b.get(i)
                ),
            ));
        }
    }
    Ok(())
}
