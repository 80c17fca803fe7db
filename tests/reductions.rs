//! End-to-end tests of the reductions: values against hand-computed results, PyTorch's
//! dtype/layout/error rules, and bit-identical results whatever `SMELT_THREADS` says.

use smelt::prelude::*;

fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>()
}

fn kind<T: std::fmt::Debug>(r: Result<T>) -> ErrorKind {
    r.expect_err("the op must fail").kind
}

fn close(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= 1e-5 * w.abs().max(1.0),
            "{got:?} vs {want:?}"
        );
    }
}

#[test]
fn sum_mean_prod_values_dtypes_and_layouts() {
    let x = Tensor::new([[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]]);
    assert_eq!(f32s(&x.sum(&[0], false, None)), vec![5.0, 7.0, 9.0]);
    assert_eq!(f32s(&x.sum(&[-1], false, None)), vec![6.0, 15.0]);
    assert_eq!(f32s(&x.sum(&[], false, None)), vec![21.0]);
    let k = x.t().sum(&[1], true, None);
    assert_eq!((k.size(), k.stride()), (vec![3, 1], vec![1, 1]));
    assert_eq!(f32s(&k), vec![5.0, 7.0, 9.0]);
    assert_eq!(f32s(&x.mean(&[0, 1], false, None)), vec![3.5]);
    assert_eq!(f32s(&x.prod(Some(1), false, None)), vec![6.0, 120.0]);

    let i = Tensor::new([[1i32, -2], [3, 4]]);
    let s = i.sum(&[0], false, None);
    assert_eq!((s.dtype(), s.to_vec::<i64>()), (DType::I64, vec![4, 2]));
    assert_eq!(i.sum(&[], false, Some(DType::I32)).dtype(), DType::I32);
    assert_eq!(
        Tensor::new([true, true, false])
            .sum(&[], false, None)
            .to_vec::<i64>(),
        vec![2]
    );
    assert_eq!(kind(i.try_mean(&[], false, None)), ErrorKind::DType);
    assert_eq!(f32s(&i.mean(&[], false, Some(DType::F32))), vec![1.5]);
    assert_eq!(
        kind(x.try_mean(&[], false, Some(DType::I64))),
        ErrorKind::DType
    );

    let empty = Tensor::zeros(&[2, 0], None);
    assert_eq!(f32s(&empty.sum(&[1], false, None)), vec![0.0, 0.0]);
    assert_eq!(f32s(&empty.prod(Some(1), false, None)), vec![1.0, 1.0]);
    assert!(
        f32s(&empty.mean(&[1], false, None))
            .iter()
            .all(|v| v.is_nan())
    );

    assert_eq!(kind(x.try_sum(&[2], false, None)), ErrorKind::Index);
    assert_eq!(kind(x.try_sum(&[0, -2], false, None)), ErrorKind::Value);
}

#[test]
fn max_min_and_arg_reductions_follow_pytorch_ties_and_nan() {
    let x = Tensor::new([[1.0f32, 3.0, 3.0, 2.0], [f32::NAN, 0.0, f32::NAN, -1.0]]);
    let (v, i) = x.max_dim(1, false);
    close(&f32s(&v), &[3.0, f32::NAN]);
    assert_eq!((i.dtype(), i.to_vec::<i64>()), (DType::I64, vec![1, 0]));
    let (v, i) = x.min_dim(1, true);
    assert_eq!(v.size(), vec![2, 1]);
    close(&f32s(&v), &[1.0, f32::NAN]);
    assert_eq!(i.to_vec::<i64>(), vec![0, 0]);
    assert_eq!(x.argmax(None, false).to_vec::<i64>(), vec![4]);
    assert_eq!(x.argmin(Some(0), false).to_vec::<i64>(), vec![1, 1, 1, 1]);
    assert!(f32s(&x.max())[0].is_nan());
    close(&f32s(&x.amax(&[0], false)), &[f32::NAN, 3.0, f32::NAN, 2.0]);

    // Without a dim, argmax indexes the row-major flattening of the logical (permuted) tensor.
    let y = Tensor::new([[1i64, 9], [5, 9]]).t();
    assert_eq!(y.argmax(None, false).to_vec::<i64>(), vec![2]);
    assert_eq!(y.argmax(None, true).size(), vec![1, 1]);
    assert_eq!(y.argmin(Some(1), false).to_vec::<i64>(), vec![0, 0]);

    let e = Tensor::zeros(&[0, 3], None);
    assert_eq!(kind(e.try_max()), ErrorKind::Shape);
    assert_eq!(kind(e.try_amax(&[0], false)), ErrorKind::Shape);
    assert_eq!(kind(e.try_argmax(None, false)), ErrorKind::Shape);
    assert_eq!(e.amax(&[1], false).size(), vec![0]);
    assert_eq!(
        kind(Tensor::new([true]).try_argmax(None, false)),
        ErrorKind::DType
    );
}

#[test]
fn logical_reductions_and_count_nonzero() {
    let b = Tensor::new([[true, false], [true, true]]);
    assert_eq!(b.all(&[1], false).to_vec::<bool>(), vec![false, true]);
    assert_eq!(b.any(&[0], false).to_vec::<bool>(), vec![true, true]);
    let u = Tensor::new([[0u8, 7], [3, 0]]);
    let a = u.any(&[], false);
    assert_eq!((a.dtype(), a.to_vec::<u8>()), (DType::U8, vec![1]));
    assert_eq!(u.all(&[0], false).to_vec::<u8>(), vec![0, 0]);
    assert_eq!(
        Tensor::zeros(&[0], None).all(&[], false).to_vec::<bool>(),
        vec![true]
    );
    let c = Tensor::new([[0.0f32, f32::NAN, 2.0], [0.0, 0.0, -1.0]]).count_nonzero(&[1]);
    assert_eq!((c.dtype(), c.to_vec::<i64>()), (DType::I64, vec![2, 1]));
}

#[test]
fn var_std_logsumexp() {
    let x = Tensor::new([1.0f32, 2.0, 3.0, 4.0]);
    close(&f32s(&x.var(&[], 1.0, false)), &[5.0 / 3.0]);
    close(&f32s(&x.var(&[], 0.0, false)), &[1.25]);
    close(&f32s(&x.std(&[0], 0.0, true)), &[1.25f32.sqrt()]);
    assert!(f32s(&Tensor::new([2.0f32]).var(&[], 1.0, false))[0].is_nan());
    assert_eq!(
        kind(Tensor::new([1i64, 2]).try_std(&[], 1.0, false)),
        ErrorKind::DType
    );

    let l =
        Tensor::new([[0.0f32, 0.0], [f32::NEG_INFINITY, f32::NEG_INFINITY]]).logsumexp(&[1], false);
    close(&f32s(&l), &[2.0f32.ln(), f32::NEG_INFINITY]);
    let l = Tensor::new([f32::INFINITY, 1.0]).logsumexp(&[0], true);
    assert_eq!((l.size(), f32s(&l)), (vec![1], vec![f32::INFINITY]));
    assert_eq!(
        f32s(&Tensor::zeros(&[0], None).logsumexp(&[0], false)),
        vec![f32::NEG_INFINITY]
    );
}

#[test]
fn softmax_and_log_softmax_are_contiguous() {
    let x = Tensor::new([[1.0f32, 2.0], [1.0, 4.0]]).t(); // [[1, 1], [2, 4]]
    let s = x.softmax(1, None);
    assert_eq!(s.stride(), vec![2, 1]);
    close(
        &f32s(&s),
        &[
            0.5,
            0.5,
            1.0 / (1.0 + 2.0f32.exp()),
            1.0 / (1.0 + (-2.0f32).exp()),
        ],
    );
    let l = x.log_softmax(0, Some(DType::F64));
    assert_eq!((l.dtype(), l.stride()), (DType::F64, vec![2, 1]));
    // Column [1, 2]: lse = 2 + ln(1 + e^-1); column [1, 4]: lse = 4 + ln(1 + e^-3).
    let (a, b) = ((-1.0f64).exp().ln_1p(), (-3.0f64).exp().ln_1p());
    let want = [-1.0 - a, -3.0 - b, -a, -b];
    let l = l.to_vec::<f64>();
    assert_eq!(l.len(), want.len(), "{l:?}");
    for (g, w) in l.iter().zip(want) {
        assert!((g - w).abs() < 1e-12, "{g} vs {w}");
    }
    assert_eq!(
        kind(Tensor::new([1i64, 2]).try_softmax(0, None)),
        ErrorKind::DType
    );
    assert_eq!(
        f32s(&Tensor::new([1i64, 1]).softmax(0, Some(DType::F32))),
        vec![0.5, 0.5]
    );
}

#[test]
fn cumsum_cumprod_and_sort() {
    let x = Tensor::new([[1i32, 2, 3], [4, 5, 6]]);
    let c = x.cumsum(1, None);
    assert_eq!(
        (c.dtype(), c.to_vec::<i64>()),
        (DType::I64, vec![1, 3, 6, 4, 9, 15])
    );
    assert_eq!(
        x.t().cumprod(0, None).to_vec::<i64>(),
        vec![1, 4, 2, 20, 6, 120]
    );
    assert_eq!(x.t().cumsum(0, None).stride(), vec![2, 1]);
    assert_eq!(
        f32s(&x.cumsum(0, Some(DType::F32))),
        vec![1.0, 2.0, 3.0, 5.0, 7.0, 9.0]
    );
    assert_eq!(
        Tensor::new([true, true, false])
            .cumsum(0, None)
            .to_vec::<i64>(),
        vec![1, 2, 2]
    );

    let s = Tensor::new([3.0f32, f32::NAN, 1.0, 3.0]);
    let (v, i) = s.sort(-1, false);
    close(&f32s(&v), &[1.0, 3.0, 3.0, f32::NAN]);
    assert_eq!(i.to_vec::<i64>(), vec![2, 0, 3, 1]);
    let (v, i) = s.sort(0, true);
    close(&f32s(&v), &[f32::NAN, 3.0, 3.0, 1.0]);
    assert_eq!(i.to_vec::<i64>(), vec![1, 0, 3, 2]);
    let (v, i) = Tensor::new([[2i64, 1], [0, 5]]).t().sort(0, false); // [[2, 0], [1, 5]]
    assert_eq!(
        (v.to_vec::<i64>(), i.to_vec::<i64>()),
        (vec![1, 0, 2, 5], vec![1, 0, 0, 1])
    );
    assert_eq!(v.stride(), vec![1, 2]);
    assert_eq!(kind(s.try_sort(1, false)), ErrorKind::Index);
}

/// The bits of every result of a fixed reduction workload.
fn workload_bits() -> Vec<u64> {
    let mut g = Generator::new(7);
    let x = g.randn(&[64, 257], None);
    let xt = x.t();
    // Full reductions big enough to run as blocks in parallel.
    let big = g.randn(&[512, 300], None);
    let results = [
        big.sum(&[], false, None),
        big.t().mean(&[], false, None),
        big.amin(&[], false),
        x.sum(&[1], false, None),
        xt.sum(&[], false, None),
        x.mean(&[0], true, None),
        x.var(&[1], 1.0, false),
        x.std(&[0, 1], 1.0, false),
        x.logsumexp(&[1], false),
        xt.softmax(0, None),
        x.log_softmax(1, None),
        x.cumsum(1, None),
        x.prod(Some(0), false, None),
        x.amax(&[1], false),
        x.sort(1, true).0,
    ];
    let mut bits: Vec<u64> = results
        .iter()
        .flat_map(|t| f32s(t).into_iter().map(|v| v.to_bits() as u64))
        .collect();
    bits.extend(
        x.argmax(Some(1), false)
            .to_vec::<i64>()
            .into_iter()
            .map(|v| v as u64),
    );
    bits.extend(
        x.sort(0, false)
            .1
            .to_vec::<i64>()
            .into_iter()
            .map(|v| v as u64),
    );
    bits
}

/// Runs the workload in a child process (this very test) with `SMELT_THREADS` set to 1 and
/// to 2 and requires bit-identical results: the accumulation order is fixed.
#[test]
fn results_do_not_depend_on_thread_count() {
    if std::env::var_os("SMELT_REDUCTIONS_CHILD").is_some() {
        let bits = workload_bits();
        let text: Vec<String> = bits.iter().map(|b| format!("{b:x}")).collect();
        println!("BITS {}", text.join(","));
        return;
    }
    let exe = std::env::current_exe().expect("test binary path");
    let run = |threads: &str| -> String {
        let out = std::process::Command::new(&exe)
            .args([
                "results_do_not_depend_on_thread_count",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("SMELT_REDUCTIONS_CHILD", "1")
            .env("SMELT_THREADS", threads)
            .output()
            .expect("child test process runs");
        assert!(
            out.status.success(),
            "child failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        stdout
            .lines()
            .find_map(|l| l.find("BITS ").map(|at| l[at..].to_string()))
            .expect("child printed its bits")
    };
    let one = run("1");
    let two = run("2");
    assert!(one.len() > 1000, "the workload produced results");
    assert_eq!(one, two, "SMELT_THREADS=1 and =2 disagree");
    // And the in-process run agrees with both.
    let here: Vec<String> = workload_bits().iter().map(|b| format!("{b:x}")).collect();
    assert_eq!(one, format!("BITS {}", here.join(",")));
}

/// Rows of no elements broadcast back over themselves (found by `smelt_harness::fuzz`): `x − x.sum(-1)`
/// of a [0] or [3, 0] tensor of zeros is a kernel whose element-level store holds a row-level
/// value (the zeros fold to a constant); it ran once per row, into an empty output (a segfault
/// on the cpu backend, an index panic on the reference). And an input expanded along an empty
/// dim gave a dense output strides of 0, which `compose_views` divided by.
#[test]
fn reductions_over_empty_rows_broadcast_back_to_empty_outputs() {
    use smelt::{Target, realize_with};
    for backend in Target::HOST {
        for shape in [&[0][..], &[3, 0]] {
            let x = Tensor::zeros(&shape.iter().map(|&s| s as i64).collect::<Vec<_>>(), None);
            let s = x.sum(&[-1], true, None);
            let d = &x - x.sum(&[-1], true, None);
            realize_with(&[&s, &d], smelt::Mode::Fused, backend)
                .unwrap_or_else(|e| panic!("{shape:?} on {}: {e}", backend.name()));
            assert_eq!(
                s.to_vec::<f32>(),
                vec![0.0; shape[0..shape.len() - 1].iter().product()]
            );
            assert_eq!(d.to_vec::<f32>(), Vec::<f32>::new());
            assert_eq!(d.shape(), shape);
        }
        let e = Tensor::from_vec(Vec::<f32>::new(), &[4, 4, 0, 1]).expand(&[4, 4, 0, 7]);
        let c = (&e - e.mean(&[-1], true, None)).relu();
        realize_with(&[&c], smelt::Mode::Fused, backend)
            .unwrap_or_else(|e| panic!("expanded on {}: {e}", backend.name()));
        assert_eq!(c.shape(), &[4, 4, 0, 7]);
        assert_eq!(c.to_vec::<f32>(), Vec::<f32>::new());
    }
}

/// What follows a reduction over an empty row still runs once per row, and an output is never
/// stored from the loop of an empty one (both found by `smelt fuzz`; cases in
/// `tests/fuzz_cases/`): `prod` of an empty tensor masked in place kept its poisoned block, a
/// `where` after an empty sum and a value stored from the loop of an empty diagonal of it
/// were never written, and `logsumexp` over an empty row read outside its input.
#[test]
fn epilogues_of_empty_rows_and_outputs_beside_empty_loops_are_written() {
    use smelt::{DType, Scalar, Target, realize_with};
    for backend in Target::HOST {
        let on = |what: &str| format!("{what} on {}", backend.name());
        let p = Tensor::from_scalars(&[], &[0, 1], DType::I8).prod(None::<i64>, false, None);
        let no = Tensor::from_scalars(&[Scalar::Bool(false)], &[], DType::Bool);
        p.masked_fill_(&no, -1i64);
        let mask = Tensor::from_scalars(&[Scalar::Bool(true); 3], &[3, 1], DType::Bool);
        let w = Tensor::r#where(
            &mask,
            2.5,
            Tensor::zeros(&[3, 0], None).sum(&[-1], true, None),
        );
        let x = Tensor::from_vec(vec![1.0f32], &[1, 1, 1, 1]);
        let xor = x.logical_xor(-1.0);
        let empty = xor.diagonal(-1, 3, -4).gt(xor.diagonal(-1, 3, -4));
        let lse = Tensor::from_scalars(&[], &[2, 0], DType::I16)
            .rsqrt()
            .logsumexp(&[1], false);
        realize_with(&[&p, &w, &xor, &empty, &lse], smelt::Mode::Fused, backend)
            .unwrap_or_else(|e| panic!("{}: {e}", on("realising")));
        assert_eq!(p.to_vec::<i64>(), [1], "{}", on("prod"));
        assert_eq!(w.to_vec::<f32>(), [2.5; 3], "{}", on("where"));
        assert_eq!(xor.to_vec::<bool>(), [false], "{}", on("logical_xor"));
        assert_eq!(empty.shape(), &[1, 1, 0]);
        assert_eq!(
            lse.to_vec::<f32>(),
            [f32::NEG_INFINITY; 2],
            "{}",
            on("logsumexp")
        );
    }
}

/// `rows` rows of 64 f32 values, each row `first` at elements 0, 4, 8 and 12 (the four
/// elements that share lane 0 of a SIMD row pass's first trip) and zeros elsewhere.
fn trip_rows(rows: usize, first: [f32; 4]) -> Tensor {
    let mut v = vec![0.0f32; rows * 64];
    for row in v.chunks_mut(64) {
        for (j, x) in first.iter().enumerate() {
            row[4 * j] = *x;
        }
    }
    Tensor::from_vec(v, &[rows, 64])
}

/// The value of `program`'s tensor realised on `backend` (fused; built anew, as a realised
/// tensor keeps its values).
fn on(backend: smelt::Target, program: &dyn Fn() -> Tensor) -> Vec<f32> {
    let t = program();
    smelt::realize_with(&[&t], smelt::Mode::Fused, backend).expect("realises");
    f32s(&t)
}

/// A row sum whose terms are never negative (here squares) adds a trip's vectors in f32 on
/// the cpu backend before its f64 accumulators; any other sum stays in f64. Lane 0 of the
/// trip gets 1, 2⁻²⁴, 2⁻²⁴, 2⁻²⁴: the reference's exact sum rounds to 1 + 2⁻²² (a tie, to
/// even), the f32 tree `(1 + 2⁻²⁴) + (2⁻²⁴ + 2⁻²⁴)` gives 1 + 2⁻²³, one ulp away and within
/// the 2.5 ulps the rule allows. Lane 0 of the signed row gets 2²⁴, 1, 1, −2²⁴: in f32 that
/// tree gives 1, the f64 sum 2, which every backend must return.
#[test]
fn nonnegative_row_sums_add_a_trip_in_f32_and_signed_ones_stay_exact() {
    let eps = 2f32.powi(-12);
    let squares = || {
        trip_rows(8, [1.0, eps, eps, eps])
            .pow(2.0)
            .sum(&[1], false, None)
    };
    let exact = 1.0 + 2f32.powi(-22);
    assert_eq!(on(smelt::Target::Reference, &squares), vec![exact; 8]);
    assert_eq!(
        on(smelt::Target::Cpu, &squares),
        vec![1.0 + 2f32.powi(-23); 8]
    );
    let big = 2f32.powi(24);
    let signed = || trip_rows(8, [big, 1.0, 1.0, -big]).sum(&[1], false, None);
    for backend in smelt::Target::HOST {
        assert_eq!(on(backend, &signed), vec![2.0; 8], "{}", backend.name());
    }
}

/// The bound the f32 trips keep: on random rows (301 elements: 18 trips, then a lone vector
/// and a scalar tail) the cpu backend's sums of squares, of exponentials and of `|a − b|`
/// differ from the reference interpreter's exact sums by at most 3 ulps (the analysis gives
/// about 2.5), and sums with negative terms by nothing.
#[test]
fn nonnegative_row_sums_stay_within_three_ulps_of_the_exact_sum() {
    let data = |seed: u64| {
        let t = Generator::new(seed).randn(&[37, 301], Some(DType::F32));
        t.realize();
        t
    };
    let (x, y) = (data(11), data(12));
    let programs: [(&str, &dyn Fn() -> Tensor, u32); 4] = [
        ("x²", &|| (&x * &x).sum(&[1], false, None), 3),
        ("exp", &|| x.exp().sum(&[1], false, None), 3),
        ("|x − y|", &|| (&x - &y).abs().sum(&[1], false, None), 3),
        ("x", &|| x.sum(&[1], false, None), 0),
    ];
    for (name, program, ulps) in programs {
        let want = on(smelt::Target::Reference, program);
        let got = on(smelt::Target::Cpu, program);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let apart = (g.to_bits() as i64 - w.to_bits() as i64).unsigned_abs();
            assert!(apart <= u64::from(ulps), "{name} row {i}: {g} vs {w}");
        }
    }
}
