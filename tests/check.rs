//! `SMELT_CHECK=1` (this test binary sets it for its whole process): every realisation also
//! runs with every pass off and compares. Replays the conformance suite and the workloads
//! through that path, and random programs of views, broadcasts, reductions and in-place ops
//! whose several outputs are realised together (multi-output kernels).

use proptest::prelude::*;
use smelt::prelude::*;
use std::sync::Once;
mod common;
use common::{assert_no_jit_refusals, cases, ratchet};

fn enable_check() {
    static ONCE: Once = Once::new();
    // SAFETY: `set_var` races only with concurrent reads of the environment; the variable is
    // set once, under `Once`, and smelt reads it only while realizing, after this returns.
    ONCE.call_once(|| unsafe { std::env::set_var("SMELT_CHECK", "1") });
}

/// Every conformance file meets its floor (`common/ratchet.rs`) under `SMELT_CHECK` too: a
/// kernel that differs from the reference, or a fused run from the unfused one, fails its case.
#[test]
fn conformance_suite_passes_under_check() {
    enable_check();
    let broken: Vec<String> = ratchet::files()
        .iter()
        .filter_map(|path| {
            let r = smelt::conformance::run_file(path).expect("suite readable");
            ratchet::verdict(&r)
                .err()
                .map(|e| format!("under SMELT_CHECK: {e}"))
        })
        .collect();
    assert!(broken.is_empty(), "{}", broken.join("\n\n"));
    assert_no_jit_refusals();
}

#[test]
fn workloads_pass_under_check() {
    enable_check();
    for name in smelt::workloads::all_names() {
        let w = smelt::workloads::build(name, 32).expect("known workload");
        w.output
            .try_realize()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    assert_no_jit_refusals();
}

/// A random program: a chain of ops over a [4, 6] tensor mixing views, broadcasts,
/// reductions and in-place writes. Besides the chain's end it returns the intermediates the
/// program asks for (an op byte with its high bit set keeps the value before it) and sibling
/// outputs over the same space (two row sums, an elementwise op beside the chain), so that
/// realising them together exercises multi-output kernels.
fn program(ops: &[u8], data: &[i8]) -> Vec<Tensor> {
    let x = Tensor::from_vec(
        data.iter().map(|&v| v as f32 / 4.0).collect::<Vec<f32>>(),
        &[4, 6],
    );
    program_on(ops, x)
}

/// [`program`]'s chain of ops on any 2-D `x`: the first twelve ops of [`program_typed`]
/// (`op % 12`, the high bit kept).
fn program_on(ops: &[u8], x: Tensor) -> Vec<Tensor> {
    // 132 = 6 · 22: a byte with the high bit set that picks the same op of the 22.
    let typed: Vec<u8> = ops
        .iter()
        .map(|&op| if op & 0x80 != 0 { 132 } else { 0 } + op % 12)
        .collect();
    program_typed(&typed, x)
}

/// A 2-D input of `data` in one of several layouts: contiguous [4, 6], transposed storage, a
/// row expanded to four, rows flipped, or an [8, 1] column flipped or expanded. A copy of such
/// a view that an in-place write updates must keep the view (`eliminate_copies`).
fn strided_input(layout: u8, data: &[i8]) -> Tensor {
    let v = |n: usize| {
        data[..n]
            .iter()
            .map(|&v| v as f32 / 4.0)
            .collect::<Vec<f32>>()
    };
    match layout % 6 {
        0 => Tensor::from_vec(v(24), &[4, 6]),
        1 => Tensor::from_vec(v(24), &[6, 4]).t(),
        2 => Tensor::from_vec(v(6), &[1, 6]).expand(&[4, 6]),
        3 => Tensor::from_vec(v(24), &[4, 6]).flip(&[0]),
        4 => Tensor::from_vec(v(8), &[8, 1]).flip(&[0]),
        _ => Tensor::from_vec(v(1), &[1, 1]).expand(&[8, 1]),
    }
}

/// Realises the outputs `build` makes (afresh each time) together under every configuration:
/// all passes on, and each pass off in turn; `SMELT_CHECK` compares each realisation with the
/// every-pass-off run.
fn agree_under_every_config(build: &dyn Fn() -> Vec<Tensor>) -> Result<(), TestCaseError> {
    let mut configs: Vec<Vec<&str>> = vec![vec![]];
    configs.extend(smelt_passes::PIPELINE.iter().map(|(name, _)| vec![*name]));
    for disabled in configs {
        let outs = build();
        let refs: Vec<&Tensor> = outs.iter().collect();
        let r = smelt_passes::with_disabled(&disabled, || smelt::realize(&refs));
        prop_assert!(r.is_ok(), "{disabled:?}: {:?}", r.err());
    }
    assert_no_jit_refusals();
    Ok(())
}

proptest! {
    #![proptest_config(cases(12))]
    /// The same programs on [130, 264]: big enough for the code paths small tensors never
    /// take (column reductions in blocks of 256 rows, full reductions split into parallel
    /// blocks, transposed 4×4 blocks over whole tiles, rows split across threads).
    #[test]
    fn random_programs_agree_at_size(ops in proptest::collection::vec(any::<u8>(), 1..6), seed in any::<u64>()) {
        enable_check();
        let x = Generator::new(seed).randn(&[130, 264], None) * 0.5;
        x.realize();
        let mut outs = program_on(&ops, x.clone());
        let empty: &[i64] = &[];
        outs.push(outs[outs.len() - 1].sum(empty, false, None));
        outs.push(outs[outs.len() - 2].amax(&[0], false));
        let refs: Vec<&Tensor> = outs.iter().collect();
        let r = smelt::realize(&refs);
        prop_assert!(r.is_ok(), "{:?}", r.err());
        assert_no_jit_refusals();
    }
}

proptest! {
    #![proptest_config(cases(64))]
    #[test]
    fn random_programs_agree_fused_and_unfused(ops in proptest::collection::vec(any::<u8>(), 1..8), data in proptest::collection::vec(-8i8..8, 24)) {
        enable_check();
        agree_under_every_config(&|| program(&ops, &data))?;
    }
}

proptest! {
    #![proptest_config(cases(64))]
    /// The same chains on strided inputs ([`strided_input`]): transposed, expanded, flipped,
    /// and [8, 1] columns, where a copy's view composes with its readers' into one view.
    #[test]
    fn random_programs_agree_on_strided_inputs(ops in proptest::collection::vec(any::<u8>(), 1..8), data in proptest::collection::vec(-8i8..8, 24), layout in any::<u8>()) {
        enable_check();
        agree_under_every_config(&|| program_on(&ops, strided_input(layout, &data)))?;
    }
}

/// Shapes of [`typed_input`]: ranks 2 and 3, single rows and columns, a single element.
const SHAPES: &[&[usize]] = &[
    &[4, 6],
    &[3, 5],
    &[1, 7],
    &[8, 1],
    &[2, 3, 4],
    &[1, 1],
    &[5, 3],
    &[3, 1, 4],
];
const DTYPES: &[DType] = &[DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32];

/// An input of one of [`SHAPES`] and [`DTYPES`], its elements `data` repeated (quarters for
/// floats).
fn typed_input(shape: usize, dtype: usize, data: &[i8]) -> Tensor {
    let shape = SHAPES[shape % SHAPES.len()];
    let n: usize = shape.iter().product();
    let vals: Vec<i8> = (0..n).map(|i| data[i % data.len()]).collect();
    match DTYPES[dtype % DTYPES.len()] {
        DType::I32 => Tensor::from_vec(
            vals.iter().map(|&v| i32::from(v)).collect::<Vec<i32>>(),
            shape,
        ),
        DType::F64 => Tensor::from_vec(
            vals.iter()
                .map(|&v| f64::from(v) / 4.0)
                .collect::<Vec<f64>>(),
            shape,
        ),
        dt @ (DType::F32
        | DType::F16
        | DType::BF16
        | DType::Bool
        | DType::U8
        | DType::I8
        | DType::I16
        | DType::I64) => Tensor::from_vec(
            vals.iter()
                .map(|&v| f32::from(v) / 4.0)
                .collect::<Vec<f32>>(),
            shape,
        )
        .to_dtype(dt),
    }
}

/// [`program_on`]'s chain for any rank from 2 and for integer tensors, with ten more ops
/// (cumsum, roll, clamp, masked_fill, log_softmax or remainder, a write into a row of a
/// clone, amin beside logsumexp or a sum, square, sqrt, a transposed copy plus a column sum,
/// division or floor division).
fn program_typed(ops: &[u8], x: Tensor) -> Vec<Tensor> {
    let mut outs = vec![];
    let mut t = x.clone();
    for &op in ops {
        if op & 0x80 != 0 {
            outs.push(t.clone());
        }
        let int = !t.dtype().is_float();
        let last = *t.shape().last().expect("rank 2 or more") as i64;
        t = match op % 22 {
            0 if int => &t * 3 + 1,
            0 => &t * 1.5 + 0.25,
            1 => t.transpose(-2, -1).exp().transpose(-2, -1),
            2 if int => (&t - t.sum(&[-1], true, None)).relu(),
            2 => (&t - t.mean(&[-1], true, None)).relu(),
            3 if int => t.abs() * 3,
            3 => t.softmax(-1, None),
            4 => {
                let s = t.sum(&[0], true, None);
                &t + s
            }
            5 => t.sigmoid() * &x,
            6 => {
                let c = t.deep_clone();
                if int {
                    c.select(-1, 2.min(last - 1)).add_(1i64);
                } else {
                    c.select(-1, 2.min(last - 1)).add_(1.0);
                }
                c
            }
            7 => t.flip(&[-1]).tanh(),
            8 => {
                outs.push(t.sum(&[-1], false, None));
                outs.push((&t * &t).sum(&[-1], false, None));
                t.abs()
            }
            9 => {
                outs.push(t.exp());
                &t * 2
            }
            10 if int => {
                outs.push(t.amax(&[-1], true));
                &t - t.amax(&[0], true)
            }
            10 => {
                outs.push(t.var(&[-1], 1.0, true));
                &t - t.mean(&[-1], true, None)
            }
            11 => t.maximum(x.transpose(-2, -1).contiguous().transpose(-2, -1)),
            12 => t.cumsum(-1, None),
            13 => t.roll(&[1], &[-1]) + t.flip(&[0]),
            14 if int => t.clamp(Some((-2i64).into()), Some(3i64.into())),
            14 => t.clamp(Some((-0.5).into()), Some(1.0.into())),
            15 if int => t.masked_fill(&t.gt(0i64), 0i64),
            15 => t.masked_fill(&t.gt(0.0), 0.5),
            16 if int => t.remainder(3i64),
            16 => t.log_softmax(-1, None),
            17 => {
                let c = t.deep_clone();
                if int {
                    c.select(0, 0).mul_(2i64);
                } else {
                    c.select(0, 0).mul_(2.0);
                }
                c
            }
            18 => {
                outs.push(t.amin(&[0], false));
                if int {
                    outs.push(t.sum(&[0], false, None));
                } else {
                    outs.push(t.logsumexp(&[0], false));
                }
                t.square()
            }
            19 if int => &t * &t,
            19 => t.abs().sqrt(),
            20 => t.transpose(-2, -1).contiguous().transpose(-2, -1) + t.sum(&[-2], true, None),
            21 if int => t.floor_divide(2i64),
            _ => &t / (t.abs() + 1.0),
        };
    }
    outs.push(t);
    outs
}

proptest! {
    #![proptest_config(cases(64))]
    /// [`program_typed`] over [`SHAPES`] × [`DTYPES`], every pass configuration.
    #[test]
    fn random_programs_agree_across_shapes_and_dtypes(ops in proptest::collection::vec(any::<u8>(), 1..8), data in proptest::collection::vec(-8i8..8, 24), shape in 0usize..8, dtype in 0usize..5) {
        enable_check();
        agree_under_every_config(&|| program_typed(&ops, typed_input(shape, dtype, &data)))?;
    }
}
