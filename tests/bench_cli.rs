//! `smelt bench` end to end on shrunk workloads: each row is checked against the reference
//! backend before it is timed (a failure exits non-zero), one JSON object per line with the
//! documented keys, the bandwidth limit measured in the workload's own window. Nothing here
//! asserts a speed.

use std::process::Command;

/// The number after `"key":` in a JSON line.
fn number(line: &str, key: &str) -> f64 {
    let pattern = format!("\"{key}\":");
    let start = line
        .find(&pattern)
        .unwrap_or_else(|| panic!("no {key} in {line}"))
        + pattern.len();
    let rest = &line[start..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    rest[..end]
        .parse()
        .unwrap_or_else(|e| panic!("{key} in {line}: {e}"))
}

#[test]
fn bench_json_rows_carry_the_documented_keys_and_a_measured_limit() {
    let out = Command::new(env!("CARGO_BIN_EXE_smelt"))
        .args(["bench", "ew_chain", "layernorm", "--both", "--json"])
        .args(["--shrink", "16", "--reps", "2"])
        .output()
        .expect("the smelt binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "smelt bench failed: {stderr}");
    let text = String::from_utf8(out.stdout).expect("UTF-8 output");
    let lines: Vec<&str> = text.lines().collect();
    let want = [
        ("ew_chain", "fused", 1),
        ("ew_chain", "unfused", 5),
        ("layernorm", "fused", 1),
        ("layernorm", "unfused", 11),
    ];
    assert_eq!(lines.len(), want.len(), "{text}");
    for (line, (workload, mode, kernels)) in lines.iter().zip(want) {
        let head = format!("{{\"workload\":\"{workload}\",\"mode\":\"{mode}\",\"device\":\"cpu\",");
        assert!(line.starts_with(&head), "{line}");
        assert!(number(line, "median_ms") > 0.0, "{line}");
        assert!(number(line, "gbps") > 0.0, "{line}");
        assert!(number(line, "limit_gbps") > 0.0, "{line}");
        assert_eq!(number(line, "kernels"), kernels as f64, "{line}");
        if mode == "unfused" {
            assert!(number(line, "speedup") > 0.0, "{line}");
        }
    }
}

/// `smelt bench WORKLOAD --serve` checks the workload, says `ready`, answers each line of its
/// input with one realisation's milliseconds and exits when the input ends; without exactly
/// one workload it is a usage error.
#[test]
fn bench_serve_answers_each_request_with_a_time() {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_smelt"))
        .args(["bench", "sum_sq_diff", "--serve", "--shrink", "16"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the smelt binary runs");
    let mut stdin = child.stdin.take().expect("piped stdin");
    stdin.write_all(b"\n\n\n").expect("requests written");
    drop(stdin);
    let out = child.wait_with_output().expect("smelt exits");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "smelt bench --serve failed: {stderr}");
    let text = String::from_utf8(out.stdout).expect("UTF-8 output");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert_eq!(lines[0], "ready");
    for line in &lines[1..] {
        let ms: f64 = line.parse().unwrap_or_else(|e| panic!("{line}: {e}"));
        assert!(ms > 0.0 && ms.is_finite(), "{line}");
    }
    let two = Command::new(env!("CARGO_BIN_EXE_smelt"))
        .args(["bench", "sum_sq_diff", "layernorm", "--serve"])
        .output()
        .expect("the smelt binary runs");
    assert_eq!(two.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&two.stderr).contains("name one workload"),
        "{}",
        String::from_utf8_lossy(&two.stderr)
    );
}
