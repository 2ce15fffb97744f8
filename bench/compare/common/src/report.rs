//! The command line, the timing and the JSON result line, shaped like `crashtest-bench`'s.
//!
//! A benchmark binary accepts `--workload NAME` (repeatable; default: all) and `--runs N`
//! (default 3), runs each chosen workload N times and prints one JSON line per workload
//! with the median wall time, and the first run's (the cold one: nothing the simulator
//! keeps between runs is there yet) beside it. The line has `crashtest-bench`'s fields plus `simulator`,
//! and `note` where the simulator cannot express the workload exactly.
//!
//! Peak memory is the process's high-water mark (`VmHWM`), which never goes down: run one
//! workload per process to read it per workload (`run.sh` does).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde::Serialize;

/// What the command line asked for.
#[derive(Debug)]
struct Args {
    /// Workload names, in the order to run them.
    workloads: Vec<String>,
    /// Runs of each workload; the median wall time is reported.
    runs: u32,
}

/// Why the command line was not run.
#[derive(Debug)]
enum ArgsError {
    /// `--help` was given: print this text and exit successfully.
    Help(String),
    /// The arguments were wrong: print this text and exit with status 2.
    Usage(String),
}

impl Args {
    /// Parses `args` (without the program name) for a benchmark of `simulator` that knows
    /// the workloads `known`.
    fn parse(
        simulator: &str,
        known: &[&str],
        args: impl IntoIterator<Item = String>,
    ) -> Result<Args, ArgsError> {
        let usage = format!(
            "Measure the {simulator} simulator on the comparison workloads; prints one JSON \
             line per workload.\n\n\
             Usage: {simulator}-bench [--workload NAME]... [--runs N]\n\n\
             Options:\n  \
             --workload NAME  run only these workloads (default: all) [possible values: {}]\n  \
             --runs N         runs of each workload, 1..=100; the median is reported [default: 3]\n  \
             -h, --help       print this help",
            known.join(", ")
        );
        let mut workloads = Vec::new();
        let mut runs = 3;
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((flag, value)) => (flag.to_owned(), Some(value.to_owned())),
                None => (arg, None),
            };
            let mut value = |name: &str| {
                inline
                    .clone()
                    .or_else(|| args.next())
                    .ok_or_else(|| ArgsError::Usage(format!("{name} needs a value\n\n{usage}")))
            };
            match flag.as_str() {
                "-h" | "--help" => return Err(ArgsError::Help(usage)),
                "--workload" => {
                    let name = value("--workload")?;
                    if !known.contains(&name.as_str()) {
                        return Err(ArgsError::Usage(format!(
                            "invalid value '{name}' for '--workload'\n\n{usage}"
                        )));
                    }
                    workloads.push(name);
                }
                "--runs" => {
                    let text = value("--runs")?;
                    runs = match text.parse::<u32>() {
                        Ok(n) if (1..=100).contains(&n) => n,
                        _ => {
                            return Err(ArgsError::Usage(format!(
                                "invalid value '{text}' for '--runs': 1..=100\n\n{usage}"
                            )));
                        }
                    };
                }
                other => {
                    return Err(ArgsError::Usage(format!(
                        "unexpected argument '{other}'\n\n{usage}"
                    )));
                }
            }
        }
        if workloads.is_empty() {
            workloads = known.iter().map(|name| (*name).to_owned()).collect();
        }
        Ok(Args { workloads, runs })
    }
}

/// A workload's fixed description.
#[derive(Clone, Copy, Debug)]
pub struct Workload {
    /// Its name, shared with `crashtest-bench`.
    pub name: &'static str,
    /// What one run does.
    pub what: &'static str,
    /// Units of work one run does (round trips, timer events, tasks, messages, seeds).
    pub units: u64,
    /// The rate's unit, shared with `crashtest-bench`.
    pub rate_unit: &'static str,
    /// How this simulator departs from the workload's definition, if it does.
    pub note: Option<&'static str>,
    /// Runs the workload once and returns the virtual time it covered.
    pub run: fn() -> Duration,
}

/// A benchmark binary's `main`: parses the command line, then measures and prints each
/// chosen workload of `workloads`.
pub fn main(simulator: &'static str, workloads: &[Workload]) -> ExitCode {
    let names: Vec<&str> = workloads.iter().map(|w| w.name).collect();
    match Args::parse(simulator, &names, std::env::args().skip(1)) {
        Err(ArgsError::Help(text)) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(ArgsError::Usage(text)) => {
            eprintln!("error: {text}");
            ExitCode::from(2)
        }
        Ok(args) => {
            for name in &args.workloads {
                let workload = workloads
                    .iter()
                    .find(|w| w.name == name)
                    .expect("the parser accepts only known names");
                print(&measure(simulator, workload, args.runs, workload.run));
            }
            ExitCode::SUCCESS
        }
    }
}

/// One workload's result line.
#[derive(Debug, Serialize)]
struct Line {
    /// The simulator measured.
    simulator: &'static str,
    /// The workload's name.
    workload: &'static str,
    /// What one run does.
    what: &'static str,
    /// Runs measured.
    runs: u32,
    /// Median wall time of one run, in seconds.
    median_wall_s: f64,
    /// Units of work per wall second at the median.
    rate: f64,
    /// The rate's unit.
    rate_unit: &'static str,
    /// Wall time of the first run, in seconds: cold, as a sweep's fresh thread is.
    cold_wall_s: f64,
    /// Units of work per wall second in the first run.
    cold_rate: f64,
    /// Virtual time one run covered, in seconds.
    virtual_s: f64,
    /// Virtual seconds per wall second at the median.
    virtual_per_wall: f64,
    /// The process's peak resident memory so far, in MiB.
    peak_rss_mib: Option<f64>,
    /// How this simulator departs from the workload's definition, if it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<&'static str>,
}

/// Runs `run` `runs` times (each returns the virtual time it covered) and reports the
/// median wall time.
fn measure(
    simulator: &'static str,
    workload: &Workload,
    runs: u32,
    run: impl Fn() -> Duration,
) -> Line {
    assert!(runs >= 1, "at least one run");
    let mut walls = Vec::with_capacity(runs as usize);
    let mut virtual_time = Duration::ZERO;
    for _ in 0..runs {
        #[allow(
            clippy::disallowed_methods,
            reason = "the benchmark measures real time, outside any simulation"
        )]
        let start = Instant::now();
        virtual_time = run();
        walls.push(start.elapsed());
    }
    let cold_s = walls[0].as_secs_f64();
    walls.sort();
    let wall_s = walls[walls.len() / 2].as_secs_f64();
    Line {
        simulator,
        workload: workload.name,
        what: workload.what,
        runs,
        median_wall_s: wall_s,
        rate: workload.units as f64 / wall_s,
        rate_unit: workload.rate_unit,
        cold_wall_s: cold_s,
        cold_rate: workload.units as f64 / cold_s,
        virtual_s: virtual_time.as_secs_f64(),
        virtual_per_wall: virtual_time.as_secs_f64() / wall_s,
        peak_rss_mib: peak_rss_mib(),
        note: workload.note,
    }
}

/// Prints `line` as one line of JSON on stdout.
fn print(line: &Line) {
    println!(
        "{}",
        serde_json::to_string(line).expect("a result line serializes")
    );
}

/// The process's peak resident memory, from Linux's `/proc/self/status` (`VmHWM`).
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Args, ArgsError> {
        Args::parse("sim", &["a", "b"], args.iter().map(|a| (*a).to_owned()))
    }

    #[test]
    fn no_arguments_run_every_workload_three_times() {
        let args = parse(&[]).expect("valid");
        assert_eq!(args.workloads, ["a", "b"]);
        assert_eq!(args.runs, 3);
    }

    #[test]
    fn workloads_and_runs_are_taken_in_both_spellings() {
        let args = parse(&["--workload", "b", "--runs=5", "--workload=a"]).expect("valid");
        assert_eq!(args.workloads, ["b", "a"]);
        assert_eq!(args.runs, 5);
    }

    #[test]
    fn unknown_workloads_bad_runs_and_help_are_refused() {
        assert!(matches!(
            parse(&["--workload", "c"]),
            Err(ArgsError::Usage(_))
        ));
        assert!(matches!(parse(&["--runs", "0"]), Err(ArgsError::Usage(_))));
        assert!(matches!(parse(&["--runs"]), Err(ArgsError::Usage(_))));
        assert!(matches!(parse(&["--help"]), Err(ArgsError::Help(_))));
    }

    #[test]
    fn measure_reports_the_median_wall_time_and_the_virtual_time() {
        let workload = Workload {
            name: "w",
            what: "nothing",
            units: 10,
            rate_unit: "things/s",
            note: None,
            run: || Duration::from_secs(2),
        };
        let line = measure("sim", &workload, 3, workload.run);
        assert_eq!(line.runs, 3);
        assert_eq!(line.virtual_s, 2.0);
        assert!(line.median_wall_s >= 0.0 && line.rate > 0.0);
        assert!(line.cold_wall_s >= 0.0 && line.cold_rate > 0.0);
    }
}
