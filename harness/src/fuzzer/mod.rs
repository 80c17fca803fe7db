//! `smelt fuzz`: random programs over the conformance vocabulary, each realised in every mode
//! ([`exec::Mode`]: fused, unfused, the reference interpreter, CUDA where there is one) and
//! compared with the oracle value for value and metadata for metadata; a panic counts as a
//! failure. A failure is shrunk ([`shrink`]) and written as a conformance case ([`case`])
//! whose expectations are the oracle's, so it can become a regression test
//! (`tests/fuzz_cases/`). docs/testing.md describes the whole.

pub mod case;
pub mod exec;
pub mod generator;
pub mod num;
mod ops;
pub mod rng;
pub mod rules;
pub mod shrink;
pub mod supervise;

use exec::{Failure, Mode, compare, run};
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What to run.
#[derive(Clone, Debug)]
pub struct Config {
    pub seed: u64,
    /// The index of the first program.
    pub first: u64,
    /// Stop after this many programs…
    pub count: Option<u64>,
    /// …or after this long (whichever comes first; neither: 1000 programs).
    pub duration: Option<Duration>,
    /// Only this program of the run (to reproduce one).
    pub only: Option<u64>,
    /// One JSON object per failure and a summary line, instead of text.
    pub json: bool,
    /// Where shrunk cases go (`None`: not written).
    pub out: Option<PathBuf>,
    /// Time for shrinking one failure.
    pub shrink_budget: Duration,
    /// Failures shrunk at most (the later ones are written as they failed).
    pub max_shrinks: usize,
    pub modes: Vec<Mode>,
    /// Seconds between progress lines on stderr (0: none).
    pub progress_secs: u64,
}

impl Config {
    pub fn new(seed: u64) -> Config {
        Config {
            seed,
            first: 0,
            count: None,
            duration: None,
            only: None,
            json: false,
            out: None,
            shrink_budget: Duration::from_secs(60),
            max_shrinks: 5,
            modes: Mode::available(),
            progress_secs: 30,
        }
    }
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub programs: u64,
    pub passed: u64,
    pub failed: u64,
    /// Programs whose last step raised (in every mode alike).
    pub raised: u64,
    pub seconds: f64,
    /// Steps of every program run.
    pub steps: u64,
}

impl Summary {
    pub fn per_second(&self) -> f64 {
        self.programs as f64 / self.seconds.max(1e-9)
    }
}

/// One failing program, shrunk.
#[derive(Clone, Debug)]
pub struct Report {
    pub index: u64,
    pub failure: Failure,
    pub steps_before: usize,
    pub shrunk: shrink::Shrunk,
    /// The case written, if any.
    pub case: serde_json::Value,
    pub path: Option<PathBuf>,
}

/// Runs `program`'s steps in every mode of `modes` (the first is the oracle): the first
/// disagreement, or whether the program ended in an error (in every mode alike).
pub fn check(steps: &[serde_json::Value], modes: &[Mode]) -> Result<bool, Failure> {
    let tols = match generator::analyse(steps) {
        Ok(t) => t,
        // The generator only keeps programs its rules admit; one that breaks them is a
        // generator bug, reported as such.
        Err(why) => {
            return Err(Failure {
                kind: exec::FailureKind::Error,
                mode: modes[0],
                oracle: modes[0],
                detail: format!("the generator made a program its rules refuse: {why}"),
            });
        }
    };
    let oracle = run(steps, modes[0]);
    if let Some(f) = compare(&oracle, &oracle, &tols) {
        return Err(f);
    }
    match modes[1..]
        .iter()
        .find_map(|&m| compare(&oracle, &run(steps, m), &tols))
    {
        Some(f) => Err(f),
        None => Ok(oracle.stop.is_some()),
    }
}

/// Shrinks a failure of program `index` and builds its case (written under `out`).
pub fn report(
    config: &Config,
    index: u64,
    steps: Vec<serde_json::Value>,
    failure: Failure,
    shrink_it: bool,
) -> Report {
    let before = steps.len();
    let shrunk = if shrink_it {
        shrink::shrink(steps, failure.clone(), config.shrink_budget)
    } else {
        shrink::Shrunk {
            steps,
            failure: failure.clone(),
            tries: 0,
            complete: false,
        }
    };
    let id = format!("fuzz/s{}/p{index}", config.seed);
    let oracle = run(&shrunk.steps, shrunk.failure.oracle);
    let tols = generator::analyse(&shrunk.steps).unwrap_or_default();
    let note = format!(
        "smelt fuzz --seed {} (program {index}), shrunk from {before} to {} steps: {}. \
         Expectations are smelt's {} mode's (a differential case, not recorded from PyTorch).",
        config.seed,
        shrunk.steps.len(),
        shrunk.failure,
        shrunk.failure.oracle
    );
    let case = case::case(&id, &shrunk.steps, &oracle, &tols, &note);
    let path = config.out.as_ref().and_then(|dir| {
        std::fs::create_dir_all(dir).ok()?;
        let path = dir.join(format!("s{}-p{index}.jsonl", config.seed));
        std::fs::write(&path, format!("{case}\n")).ok()?;
        Some(path)
    });
    Report {
        index,
        failure,
        steps_before: before,
        shrunk,
        case,
        path,
    }
}

/// Runs the steps of each case of a `.jsonl` file in every mode of `config` (no generation):
/// how the modes compare on a written case, or on a program cut by hand. With `config.out`,
/// each program is written there again as a case expecting what the oracle observes now
/// (a hand-cut program becomes a differential case).
pub fn replay(
    config: &Config,
    path: &std::path::Path,
    out: &mut dyn Write,
) -> std::io::Result<Summary> {
    let text = std::fs::read_to_string(path)?;
    let mut summary = Summary::default();
    let start = Instant::now();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let case: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        let id = case.get("id").and_then(|v| v.as_str()).unwrap_or("?");
        let steps = case
            .get("steps")
            .and_then(|v| v.as_array())
            .cloned()
            .unwrap_or_default();
        summary.programs += 1;
        let verdict = check(&steps, &config.modes);
        match &verdict {
            Ok(_) => summary.passed += 1,
            Err(f) => {
                summary.failed += 1;
                writeln!(out, "FAIL {id}: {f}")?;
            }
        }
        if let Some(dir) = &config.out {
            let oracle = run(&steps, config.modes[0]);
            let tols = generator::analyse(&steps).unwrap_or_default();
            let note = match (&verdict, case.get("note").and_then(|n| n.as_str())) {
                (_, Some(note)) => note.to_string(),
                (Ok(_), None) => format!(
                    "Expectations are smelt's {} mode's (a differential case, not recorded from \
                     PyTorch).",
                    config.modes[0]
                ),
                (Err(f), None) => format!(
                    "{f}. Expectations are smelt's {} mode's (a differential case, not recorded \
                     from PyTorch).",
                    config.modes[0]
                ),
            };
            let written = case::case(id, &steps, &oracle, &tols, &note);
            std::fs::create_dir_all(dir)?;
            let name = id.replace('/', "-");
            std::fs::write(dir.join(format!("{name}.jsonl")), format!("{written}\n"))?;
        }
    }
    summary.seconds = start.elapsed().as_secs_f64();
    writeln!(out, "{} passed, {} failed", summary.passed, summary.failed)?;
    Ok(summary)
}

/// Runs the programs `config` asks for, printing each failure (and progress on stderr) to
/// `out`; ends with the summary (`N passed, M failed` in text mode).
pub fn fuzz(config: &Config, out: &mut dyn Write) -> std::io::Result<Summary> {
    let start = Instant::now();
    let mut summary = Summary::default();
    let mut last_progress = Instant::now();
    let mut shrinks = 0;
    // A panic inside smelt is a failure the report shows; keep its backtrace off the output
    // (`SMELT_FUZZ_PANICS=1` shows each where it happens).
    let quiet = !std::env::var("SMELT_FUZZ_PANICS").is_ok_and(|v| v == "1");
    let hook = quiet.then(|| {
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        hook
    });
    let indices: Box<dyn Iterator<Item = u64>> = match config.only {
        Some(i) => Box::new(std::iter::once(i)),
        None => Box::new(config.first..),
    };
    // A crash (a segfault in generated code) cannot be caught: SMELT_FUZZ_TRACE=1 names each
    // program before it runs.
    let trace = std::env::var("SMELT_FUZZ_TRACE").is_ok_and(|v| v == "1");
    // A stand-in crash for the tests of batches in child processes (`supervise`).
    let abort_at: Option<u64> = std::env::var("SMELT_FUZZ_ABORT_AT")
        .ok()
        .and_then(|v| v.parse().ok());
    let limit = match (config.count, config.duration) {
        (None, None) => Some(1000),
        (c, _) => c,
    };
    for index in indices {
        if limit.is_some_and(|n| summary.programs >= n)
            || config.duration.is_some_and(|d| start.elapsed() >= d)
        {
            break;
        }
        if trace {
            eprintln!("smelt fuzz: program {index}");
        }
        if abort_at == Some(index) {
            std::process::abort();
        }
        let program = generator::generate(config.seed, index);
        summary.programs += 1;
        summary.steps += program.steps.len() as u64;
        if config.only.is_some() && !config.json {
            for (i, step) in program.steps.iter().enumerate() {
                writeln!(out, "  {i:>2}: {step}")?;
            }
        }
        match check(&program.steps, &config.modes) {
            Ok(raised) => {
                summary.passed += 1;
                summary.raised += u64::from(raised);
            }
            Err(failure) => {
                summary.failed += 1;
                let shrink_it = shrinks < config.max_shrinks;
                shrinks += usize::from(shrink_it);
                let r = report(config, index, program.steps, failure, shrink_it);
                print_report(config, &r, out)?;
            }
        }
        if config.progress_secs > 0
            && last_progress.elapsed() >= Duration::from_secs(config.progress_secs)
        {
            last_progress = Instant::now();
            let secs = start.elapsed().as_secs_f64();
            eprintln!(
                "smelt fuzz: {:.0} s, {} programs ({:.1}/s), {} failed; {} kernels compiled",
                secs,
                summary.programs,
                summary.programs as f64 / secs,
                summary.failed,
                smelt_runtime::cpu::cached_kernels()
            );
        }
    }
    if let Some(hook) = hook {
        std::panic::set_hook(hook);
    }
    summary.seconds = start.elapsed().as_secs_f64();
    print_summary(config, &summary, out)?;
    Ok(summary)
}

/// The last lines of a run: a JSON summary, or the figures and `N passed, M failed`.
pub fn print_summary(
    config: &Config,
    summary: &Summary,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    if config.json {
        writeln!(
            out,
            "{}",
            json!({
                "summary": true,
                "seed": config.seed,
                "first": config.first,
                "programs": summary.programs,
                "passed": summary.passed,
                "failed": summary.failed,
                "raised": summary.raised,
                "steps": summary.steps,
                "seconds": summary.seconds,
                "programs_per_second": summary.per_second(),
                "modes": config.modes.iter().map(|m| m.name()).collect::<Vec<_>>(),
            })
        )
    } else {
        writeln!(
            out,
            "seed {}: {} programs ({} steps, {} ending in an error) in {:.1} s: {:.1} programs/s; modes {}",
            config.seed,
            summary.programs,
            summary.steps,
            summary.raised,
            summary.seconds,
            summary.per_second(),
            config
                .modes
                .iter()
                .map(|m| m.name())
                .collect::<Vec<_>>()
                .join(", ")
        )?;
        writeln!(out, "{} passed, {} failed", summary.passed, summary.failed)
    }
}

fn print_report(config: &Config, r: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    if config.json {
        writeln!(
            out,
            "{}",
            json!({
                "seed": config.seed,
                "program": r.index,
                "kind": r.failure.kind.name(),
                "mode": r.failure.mode.name(),
                "oracle": r.failure.oracle.name(),
                "detail": r.failure.detail,
                "steps": r.steps_before,
                "shrunk_steps": r.shrunk.steps.len(),
                "shrunk_detail": r.shrunk.failure.detail,
                "case_file": r.path.as_ref().map(|p| p.display().to_string()),
                "case": r.case,
            })
        )
    } else {
        writeln!(
            out,
            "FAIL seed {} program {}: {}",
            config.seed, r.index, r.failure
        )?;
        writeln!(
            out,
            "  shrunk from {} to {} steps ({} tries{}): {}",
            r.steps_before,
            r.shrunk.steps.len(),
            r.shrunk.tries,
            if r.shrunk.complete {
                ""
            } else {
                ", stopped early"
            },
            r.shrunk.failure
        )?;
        for (i, step) in r.shrunk.steps.iter().enumerate() {
            writeln!(out, "  {i:>2}: {step}")?;
        }
        match &r.path {
            Some(p) => writeln!(out, "  case written to {}", p.display()),
            None => writeln!(out, "  case: {}", r.case),
        }
    }
}

#[cfg(test)]
mod tests;
