//! `crashtest hunt`: a guided search for a failing timeline.
//!
//! The search runs inside one worker process (`CRASHTEST_HUNT=RUNS`), which forks its
//! branches itself, `--jobs` at a time: a corpus lives in one process's memory, and a branch
//! is a fork of it. Shards (`--shard K/N`) each search from their own seeds, with their own
//! corpus, so a CI matrix or an indexed Job runs them unchanged; their `--out` lines append
//! to one file. A failure is printed with the one line that replays it (the seed and its
//! branch path), and `replay`, `minimize` and `view` take the same timeline with `--branch`.
//! While it runs, the worker writes its progress to the results file every half second, and
//! the tool shows it as a sweep shows its seeds.

use std::fs::File;
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};
use crashtest_protocol::{env, reproduce};
use serde_json::Value;

use crate::cli::HuntArgs;
use crate::progress::Progress;
use crate::single::Scratch;

/// How many runs a search makes before its lack of anything to steer by is worth a note.
const STEERING_RUNS: u64 = 10;

/// How far apart the shards' first seeds are: each shard's fresh seeds are its own.
const SHARD_SEEDS: u64 = 1 << 40;

/// Runs the search and prints what it found.
pub(crate) fn run(args: &HuntArgs) -> anyhow::Result<ExitCode> {
    let target = crate::target::resolve(&args.target.select, &args.target.test)?;
    let jobs = args.jobs.unwrap_or_else(crate::cores);
    let start = match &args.shard {
        Some(shard) => (shard.index - 1)
            .checked_mul(SHARD_SEEDS)
            .and_then(|offset| offset.checked_add(args.seed_start))
            .context("the shard's first seed overflows u64: lower --seed-start")?,
        None => args.seed_start,
    };
    let scratch = Scratch::new()?;
    let results = scratch.path("hunt.jsonl");
    let log_path = scratch.path("hunt.log");
    let log = File::create(&log_path).context("cannot create the hunt's log")?;
    let mut command = target.command();
    for name in env::WORKER {
        command.env_remove(name);
    }
    command
        .env(env::HUNT, args.runs.to_string())
        .env(env::SEED_START, start.to_string())
        .env(env::THREADS, jobs.to_string())
        .env(env::RESULTS, &results)
        .stdin(Stdio::null())
        .stdout(log.try_clone().context("cannot share the hunt's log")?)
        .stderr(log);
    println!(
        "hunting in {} with {} runs from seed {start}, {jobs} at a time",
        target.test, args.runs
    );
    let mut child = command
        .spawn()
        .with_context(|| format!("cannot start {}", target.exe.display()))?;
    let mut progress = Progress::counting("runs", args.runs, 0);
    let status = loop {
        if let Some(status) = child.try_wait().context("cannot wait for the search")? {
            break status;
        }
        std::thread::sleep(POLL);
        let text = std::fs::read_to_string(&results).unwrap_or_default();
        if let Some(tally) = text.lines().rev().find_map(progress_of) {
            progress.reached(tally.0, tally.1);
        }
        progress.tick();
    };
    progress.finish();
    let text = std::fs::read_to_string(&results).unwrap_or_default();
    // A progress line cut short by a worker that died is no summary either.
    let summary = |line: &&str| !line.starts_with(r#"{"progress""#);
    let Some(line) = text.lines().rev().find(summary) else {
        let output = std::fs::read_to_string(&log_path).unwrap_or_default();
        let tail: String = output
            .chars()
            .skip(output.chars().count().saturating_sub(2000))
            .collect();
        bail!(
            "the search in {} ended ({status}) without a summary; is it a #[crashtest::test]? \
             Its output ends:\n{tail}",
            target.test
        );
    };
    let mut summary: Value = serde_json::from_str(line).context("a malformed hunt summary")?;
    if let Some(shard) = &args.shard {
        summary["shard"] = format!("{}/{}", shard.index, shard.count).into();
    }
    let reproduce = reproduce_line(&target, &summary);
    if let Some(line) = &reproduce {
        summary["reproduce"] = line.clone().into();
        // The search replayed the failure in its own process, which has forked and run
        // other seeds; the printed line runs in a fresh one, so that is where it is checked.
        match fresh_fingerprint(&target, &summary, args, &scratch) {
            Ok(fresh) => {
                summary["replayed_fresh"] =
                    (fresh.as_deref() == summary["fingerprint"].as_str()).into();
                if let Some(fingerprint) = fresh {
                    summary["fresh_fingerprint"] = fingerprint.into();
                }
            }
            // The search's finding stands and is printed and saved; only the check is lost.
            Err(error) => eprintln!(
                "crashtest: could not run the failure again in a fresh process to check its \
                 line: {error:#}"
            ),
        }
    }
    if let Some(out) = &args.out {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(out)
            .with_context(|| format!("cannot open {}", out.display()))?;
        writeln!(file, "{summary}").with_context(|| format!("cannot write {}", out.display()))?;
    }
    print!("{}", describe(&summary));
    if let Some(line) = reproduce {
        println!("reproduce: {line}");
        if let Some(see) = see_it_line(&target, &summary) {
            println!("see it:    {see}");
            println!("           (or view, minimize: the same line with that command)");
        }
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// How often the search's results file is read for its progress.
const POLL: Duration = Duration::from_millis(200);

/// The runs done and what the search reached, from a progress line of the results file;
/// `None` for any other line (the summary).
fn progress_of(line: &str) -> Option<(u64, String)> {
    let value: Value = serde_json::from_str(line).ok()?;
    let tally = value.get("progress")?;
    let count = |key: &str| tally[key].as_u64().unwrap_or_default();
    Some((
        count("runs"),
        format!(
            "{} fresh seeds, {} branch points, corpus {}, {} features",
            count("fresh_seeds"),
            count("branch_points"),
            count("corpus"),
            count("features")
        ),
    ))
}

/// The fingerprint of the found failure's timeline run alone in a fresh process, as its
/// reproduce line runs it; `None` if that run passed or its process died.
fn fresh_fingerprint(
    target: &crate::target::Target,
    summary: &Value,
    args: &HuntArgs,
    scratch: &Scratch,
) -> anyhow::Result<Option<String>> {
    let seed = summary["seed"]
        .as_u64()
        .context("a hunt summary without its seed")?;
    let mut env = Vec::new();
    if let Some(path) = summary["branch_path"].as_str().filter(|p| !p.is_empty()) {
        env.push((env::EXPLORE, path.to_owned()));
    }
    let request = crate::single::Request { seed, env };
    let run =
        crate::single::run_all(target, &[request], 1, args.target.seed_timeout, scratch)?.remove(0);
    Ok((run.status == crashtest_protocol::Status::Fail).then_some(run.fingerprint))
}

/// The line that replays the failure, for this target (cargo's or the executable's form).
fn reproduce_line(target: &crate::target::Target, summary: &Value) -> Option<String> {
    let seed = summary["seed"].as_u64()?;
    let mut variables = vec![(env::SEED, seed.to_string())];
    if let Some(path) = summary["branch_path"].as_str().filter(|p| !p.is_empty()) {
        variables.push((env::EXPLORE, path.to_owned()));
    }
    Some(target.reproduce(&reproduce::assignments(variables)))
}

/// The `crashtest replay` line of the failure: the test's declared variables and the flags
/// that select its executable, as for a sweep's follow-ups, then the branch path, so that it
/// pasted into a fresh shell replays the very timeline.
fn see_it_line(target: &crate::target::Target, summary: &Value) -> Option<String> {
    let seed = summary["seed"].as_u64()?;
    let mut line = target.follow_up("replay", seed);
    if let Some(path) = summary["branch_path"].as_str().filter(|p| !p.is_empty()) {
        line.push_str(&format!(" --branch {path}"));
    }
    Some(line)
}

/// The summary as the user reads it.
fn describe(summary: &Value) -> String {
    let mut out = format!(
        "{} runs ({} fresh seeds, {} branch points), corpus {}, {} features, {} CPU-seconds\n",
        summary["runs"],
        summary["fresh_seeds"],
        summary["branch_points"],
        summary["corpus"],
        summary["features"],
        summary["cpu_seconds"],
    );
    if summary["found"].as_bool() == Some(true) {
        let path = summary["branch_path"].as_str().unwrap_or_default();
        let timeline = if path.is_empty() {
            String::new()
        } else {
            format!(" along branch {path}")
        };
        out.push_str(&format!(
            "FAILED at seed {}{timeline}: {}\n",
            summary["seed"],
            summary["failure"].as_str().unwrap_or_default(),
        ));
        if summary["replayed"].as_bool() == Some(false) {
            out.push_str(
                "warning: a fresh replay of it did not match the search's run (a determinism \
                 bug: report it)\n",
            );
        } else if summary["replayed_fresh"].as_bool() == Some(false) {
            let fresh = match summary["fresh_fingerprint"].as_str() {
                Some(fingerprint) => format!("fails with fingerprint {fingerprint}"),
                None => "does not fail".to_owned(),
            };
            out.push_str(&format!(
                "warning: the line below, run in a fresh process, {fresh}, where the search's \
                 run had {}: the test depends on its process's history, not only on the seed \
                 (a static kept between runs, or a fork handler that changes what the program \
                 draws); `crashtest sweep --check-determinism` and `CRASHTEST_SEED` runs show \
                 what a fresh process does\n",
                summary["fingerprint"].as_str().unwrap_or("no fingerprint")
            ));
        }
    } else {
        out.push_str("no failure found\n");
    }
    // Said once the search had runs enough to steer, not of a failure found at once.
    if summary["features"].as_u64() == Some(0) && summary["runs"].as_u64() >= Some(STEERING_RUNS) {
        out.push_str(
            "note: the runs reached no probe, `sometimes!`, `buggify!` or declared state, so the \
             search had nothing to steer by and ran as a random search; mark what is worth \
             reaching with `crashtest::probe!` or `sometimes!`, or declare the state that \
             matters with `crashtest::explore::state`\n",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_found_failure_reads_with_its_branch_path() {
        let summary: Value = serde_json::json!({
            "found": true, "runs": 40, "fresh_seeds": 8, "branch_points": 4, "corpus": 5,
            "features": 30, "cpu_seconds": 1.5, "seed": 3, "branch_path": "100:1,200:9",
            "failure": "lost a write", "replayed": true,
        });
        let text = describe(&summary);
        assert!(
            text.starts_with("40 runs (8 fresh seeds, 4 branch points)"),
            "{text}"
        );
        assert!(text.contains("FAILED at seed 3 along branch 100:1,200:9: lost a write"));
    }

    #[test]
    fn a_failure_a_fresh_process_does_not_repeat_is_said() {
        let summary: Value = serde_json::json!({
            "found": true, "runs": 48, "fresh_seeds": 40, "branch_points": 1, "corpus": 4,
            "features": 5, "cpu_seconds": 0.3, "seed": 39, "branch_path": "",
            "failure": "index 12 applied differently", "replayed": true,
            "fingerprint": "00000000000000aa", "replayed_fresh": false,
        });
        let text = describe(&summary);
        assert!(
            text.contains(
                "warning: the line below, run in a fresh process, does not fail, where the \
                 search's run had 00000000000000aa"
            ),
            "{text}"
        );
        assert!(!text.contains("nothing to steer by"), "{text}");
    }

    #[test]
    fn a_search_with_nothing_to_steer_by_says_so() {
        let summary: Value = serde_json::json!({
            "found": false, "runs": 80, "fresh_seeds": 80, "branch_points": 0, "corpus": 0,
            "features": 0, "cpu_seconds": 0.3,
        });
        let text = describe(&summary);
        assert!(text.contains("no failure found"), "{text}");
        assert!(text.contains("nothing to steer by"), "{text}");
        let at_once: Value = serde_json::json!({
            "found": true, "runs": 1, "fresh_seeds": 1, "branch_points": 0, "corpus": 0,
            "features": 0, "cpu_seconds": 0.1, "seed": 1, "branch_path": "",
            "failure": "lost a write", "replayed": true,
        });
        assert!(!describe(&at_once).contains("nothing to steer by"));
    }

    #[test]
    fn the_see_it_line_carries_the_environment_the_build_flags_and_the_branch() {
        let target = crate::target::Target {
            exe: "/build/cluster-0123".into(),
            test: "agree".to_owned(),
            dir: None,
            cargo_args: Some("-p db --test cluster --release".to_owned()),
            declared: vec![("DB_BUG".to_owned(), Some("lost_ack".to_owned()))],
        };
        let summary = serde_json::json!({ "seed": 3, "branch_path": "100:1,200:9" });
        assert_eq!(
            see_it_line(&target, &summary).as_deref(),
            Some(
                "DB_BUG=lost_ack crashtest replay agree 3 -p db --test cluster --release \
                 --branch 100:1,200:9"
            )
        );
        let fresh = serde_json::json!({ "seed": 3, "branch_path": "" });
        assert!(!see_it_line(&target, &fresh).unwrap().contains("--branch"));
    }
}
