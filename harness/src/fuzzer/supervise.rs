//! Long runs in batches of child processes: each child runs a range of programs in process
//! (`smelt fuzz --in-process --from I --count N --json`), and the parent gathers their reports.
//! Two reasons: the cpu backend keeps every kernel it compiled for the life of the process
//! (a 20-minute run compiles several hundred thousand), and a crash in generated code (a
//! segfault cannot be caught) ends only its batch — the parent reports the program that was
//! running as failed (`crash`) and goes on after it.

use super::{Config, Summary, generator};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Programs per child process (about a minute of a release build).
pub const BATCH: u64 = 20_000;

/// Runs what `config` asks for in children of `exe` (this program: `exe fuzz …`), `batch`
/// programs each, reporting to `out` as [`super::fuzz`] does.
pub fn supervise(
    config: &Config,
    exe: &Path,
    batch: u64,
    out: &mut dyn Write,
) -> std::io::Result<Summary> {
    let start = Instant::now();
    let mut summary = Summary::default();
    let mut next = config.first;
    let limit = match (config.count, config.duration) {
        (None, None) => Some(1000),
        (c, _) => c,
    };
    let mut last_progress = Instant::now();
    loop {
        let done = summary.programs;
        let left_count = limit.map(|n| n.saturating_sub(done));
        let left_time = config.duration.map(|d| d.saturating_sub(start.elapsed()));
        if left_count == Some(0) || left_time.is_some_and(|t| t.is_zero()) {
            break;
        }
        let count = left_count.map_or(batch, |n| n.min(batch));
        let mut cmd = Command::new(exe);
        cmd.arg("fuzz")
            .arg("--in-process")
            .args(["--seed", &config.seed.to_string()])
            .args(["--from", &next.to_string()])
            .args(["--count", &count.to_string()])
            .args([
                "--shrink-secs",
                &config.shrink_budget.as_secs_f64().to_string(),
            ])
            .args([
                "--modes",
                &config
                    .modes
                    .iter()
                    .map(|m| m.name())
                    .collect::<Vec<_>>()
                    .join(","),
            ])
            .arg("--json")
            .env("SMELT_FUZZ_TRACE", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(t) = left_time {
            cmd.args(["--minutes", &(t.as_secs_f64() / 60.0).to_string()]);
        }
        if let Some(dir) = &config.out {
            cmd.arg("--out").arg(dir);
        }
        let mut child = cmd.spawn()?;
        // The child names each program on stderr before running it: the last one named is
        // the one that was running if it crashes.
        let running = Arc::new(Mutex::new(None::<u64>));
        let stderr = child.stderr.take().map(|e| {
            let running = Arc::clone(&running);
            std::thread::spawn(move || {
                for line in BufReader::new(e).lines().map_while(Result::ok) {
                    if let Some(i) = line
                        .strip_prefix("smelt fuzz: program ")
                        .and_then(|i| i.parse().ok())
                    {
                        *running.lock().unwrap_or_else(|p| p.into_inner()) = Some(i);
                    }
                }
            })
        });
        let mut child_summary = None;
        if let Some(stdout) = child.stdout.take() {
            for line in BufReader::new(stdout).lines() {
                let line = line?;
                let Ok(v) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if v.get("summary").is_some() {
                    child_summary = Some(v);
                } else {
                    print_failure(config, &v, out)?;
                }
            }
        }
        let status = child.wait()?;
        if let Some(t) = stderr {
            let _ = t.join();
        }
        let running = *running.lock().unwrap_or_else(|p| p.into_inner());
        match child_summary {
            Some(s) => {
                let n = |k: &str| s[k].as_u64().unwrap_or(0);
                summary.programs += n("programs");
                summary.passed += n("passed");
                summary.failed += n("failed");
                summary.raised += n("raised");
                summary.steps += n("steps");
                next += n("programs");
                if n("programs") == 0 {
                    break;
                }
            }
            None => {
                // The child died: the program it was running failed; the ones before passed
                // or were reported.
                let crashed = running.unwrap_or(next);
                let ran = crashed - next;
                summary.programs += ran + 1;
                summary.passed += ran;
                summary.failed += 1;
                report_crash(config, crashed, &status.to_string(), out)?;
                next = crashed + 1;
            }
        }
        if config.progress_secs > 0
            && last_progress.elapsed() >= Duration::from_secs(config.progress_secs)
        {
            last_progress = Instant::now();
            let secs = start.elapsed().as_secs_f64();
            eprintln!(
                "smelt fuzz: {:.0} s, {} programs ({:.1}/s), {} failed",
                secs,
                summary.programs,
                summary.programs as f64 / secs,
                summary.failed
            );
        }
    }
    summary.seconds = start.elapsed().as_secs_f64();
    super::print_summary(config, &summary, out)?;
    Ok(summary)
}

/// A failure a child reported (its JSON line), in the parent's format.
fn print_failure(config: &Config, v: &Value, out: &mut dyn Write) -> std::io::Result<()> {
    if config.json {
        return writeln!(out, "{v}");
    }
    let s = |k: &str| v[k].as_str().unwrap_or("?").to_string();
    writeln!(
        out,
        "FAIL seed {} program {}: {} ({} vs {}): {}",
        config.seed,
        v["program"],
        s("kind"),
        s("mode"),
        s("oracle"),
        s("detail")
    )?;
    writeln!(
        out,
        "  shrunk from {} to {} steps: {}",
        v["steps"],
        v["shrunk_steps"],
        s("shrunk_detail")
    )?;
    if let Some(steps) = v["case"]["steps"].as_array() {
        for (i, step) in steps.iter().enumerate() {
            writeln!(out, "  {i:>2}: {step}")?;
        }
    }
    if let Some(p) = v["case_file"].as_str() {
        writeln!(out, "  case written to {p}")?;
    }
    Ok(())
}

/// A program whose child process died (no shrinking: it would crash the parent).
fn report_crash(
    config: &Config,
    index: u64,
    status: &str,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let steps = generator::generate(config.seed, index).steps;
    let detail = format!("the process running it died ({status})");
    if config.json {
        writeln!(
            out,
            "{}",
            serde_json::json!({
                "seed": config.seed,
                "program": index,
                "kind": "crash",
                "detail": detail,
                "steps": steps.len(),
                "program_steps": steps,
            })
        )
    } else {
        writeln!(
            out,
            "FAIL seed {} program {index}: crash: {detail}",
            config.seed
        )?;
        for (i, step) in steps.iter().enumerate() {
            writeln!(out, "  {i:>2}: {step}")?;
        }
        writeln!(
            out,
            "  reproduce: smelt fuzz --seed {} --program {index} --modes reference,MODE",
            config.seed
        )
    }
}
