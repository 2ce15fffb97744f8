//! `crashtest merge`: the results files of one sweep's parts (shards on machines, resumed
//! runs, CI jobs) read as one sweep.
//!
//! The files must hold the same test on the same code under the same environment: their
//! headers are compared, and any difference is refused with each one named, since seeds of
//! two programs summed together describe neither. A file without a header (written by an
//! older crashtest) is read with a warning, its test checked from its lines.
//!
//! A seed present in several files (a shard resumed after a partial copy, overlapping
//! ranges) is a free determinism sample: its runs on different processes and machines must
//! agree on status and fingerprint, and any that do not are reported. Each seed counts once
//! in the summary (its first line, in the order the files were given). When the headers name
//! shards of one range, the seeds of the range without any result are counted, with the
//! shards that are missing altogether.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::OpenOptions;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use crashtest_protocol::results::Header;
use crashtest_protocol::{Status, reproduce};

use crate::cli::MergeArgs;
use crate::results;
use crate::seeds::{SeedRange, Shard};
use crate::summary::Summary;

/// A seed's first run: where it was read, its status and fingerprint.
struct FirstRun {
    file: usize,
    status: Status,
    fingerprint: String,
}

/// A seed whose runs in two files disagree.
struct Disagreement {
    seed: u64,
    first: usize,
    second: usize,
    statuses: (Status, Status),
    fingerprints: (String, String),
}

/// Merges the files and prints the summary; with `--out`, writes the merged file.
pub(crate) fn run(args: &MergeArgs) -> anyhow::Result<ExitCode> {
    refuse_a_file_twice(&args.files)?;
    let headers = args
        .files
        .iter()
        .map(|path| results::read_header(path))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let header = common_header(&args.files, &headers)?;
    let mut writer = match &args.out {
        Some(path) => Some(create_out(path, header.as_ref(), &headers)?),
        None => None,
    };
    let mut summary = Summary::default();
    let mut first_runs: BTreeMap<u64, FirstRun> = BTreeMap::new();
    let mut differing = Vec::new();
    let mut samples = 0u64;
    let mut test: Option<String> = header.as_ref().map(|h| h.test.clone());
    let mut other_test = None;
    let mut write_error = None;
    for (index, path) in args.files.iter().enumerate() {
        let contents = results::read(path, |result| {
            match &test {
                Some(test) if *test != result.test => {
                    other_test.get_or_insert((index, result.test.clone()));
                    return;
                }
                Some(_) => {}
                None => test = Some(result.test.clone()),
            }
            match first_runs.get(&result.seed) {
                Some(first) => {
                    samples += 1;
                    if first.status != result.status || first.fingerprint != result.fingerprint {
                        differing.push(Disagreement {
                            seed: result.seed,
                            first: first.file,
                            second: index,
                            statuses: (first.status, result.status),
                            fingerprints: (first.fingerprint.clone(), result.fingerprint.clone()),
                        });
                    }
                }
                None => {
                    first_runs.insert(
                        result.seed,
                        FirstRun {
                            file: index,
                            status: result.status,
                            fingerprint: result.fingerprint.clone(),
                        },
                    );
                    summary.add(&result);
                    if let Some(out) = &mut writer {
                        let line = serde_json::to_string(&result).expect("a result serializes");
                        if let Err(error) = writeln!(out, "{line}") {
                            write_error.get_or_insert(error);
                        }
                    }
                }
            }
        })?;
        if let Some((_, tail)) = &contents.torn_tail {
            eprintln!(
                "crashtest: the last line of {} was cut short and is left out: {}",
                path.display(),
                tail.chars().take(60).collect::<String>()
            );
        }
    }
    if let Some((index, other)) = other_test {
        bail!(
            "{} holds results of test {other:?}, the other files of {:?}: merge the files of one test",
            args.files[index].display(),
            test.unwrap_or_default()
        );
    }
    if let Some(error) = write_error {
        return Err(error).context("cannot write the merged results file");
    }
    if let Some(mut out) = writer {
        out.flush()
            .context("cannot write the merged results file")?;
    }
    let test = test.unwrap_or_default();
    println!(
        "{} of {test}{}",
        crate::summary::counted(args.files.len() as u64, "file"),
        header
            .as_ref()
            .map(|h| format!(" (commit {}, environment {})", h.code(), h.env_text()))
            .unwrap_or_default()
    );
    println!("{}", summary.counts_line());
    if let Some(text) = missing_seeds(&headers, &first_runs) {
        println!("{text}");
    }
    print!(
        "{}",
        summary.failures_text_with(|seed| Some(match &header {
            Some(header) => header.reproduce(&reproduce::seed(seed)),
            None => format!(
                "{} with the test's cargo test command (the files have no header to say it)",
                reproduce::seed(seed)
            ),
        }))
    );
    print!("{}", summary.coverage_text());
    for d in &differing {
        println!(
            "NONDETERMINISTIC seed {}: {} {} in {}, {} {} in {}",
            d.seed,
            d.statuses.0,
            or_none(&d.fingerprints.0),
            args.files[d.first].display(),
            d.statuses.1,
            or_none(&d.fingerprints.1),
            args.files[d.second].display()
        );
    }
    if samples > 0 {
        println!(
            "determinism: {samples} runs of seeds already read from another file; {}",
            if differing.is_empty() {
                "every one agrees".to_owned()
            } else {
                format!("{} differ", differing.len())
            }
        );
    }
    if let Some(path) = &args.out {
        println!("merged results in {}", path.display());
    }
    Ok(if summary.failed() > 0 || !differing.is_empty() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// An error if one file is given twice (under one name or two): its every seed would count
/// as a second run of itself, and the determinism check would compare the file with itself.
fn refuse_a_file_twice(files: &[PathBuf]) -> anyhow::Result<()> {
    let mut seen: BTreeMap<PathBuf, &Path> = BTreeMap::new();
    for path in files {
        let real = std::fs::canonicalize(path)
            .with_context(|| format!("cannot read the results file {}", path.display()))?;
        if let Some(first) = seen.insert(real, path) {
            let names = if first == path.as_path() {
                format!("{} is given twice", path.display())
            } else {
                format!(
                    "{} and {} are the same file",
                    first.display(),
                    path.display()
                )
            };
            bail!(
                "{names}: its seeds would count as run twice and agree with themselves; give each file once"
            );
        }
    }
    Ok(())
}

fn or_none(fingerprint: &str) -> &str {
    if fingerprint.is_empty() {
        "(no fingerprint)"
    } else {
        fingerprint
    }
}

/// The header the files share (the first one found), or an error naming every file that
/// differs from it and how; `None` when no file has a header.
fn common_header(files: &[PathBuf], headers: &[Option<Header>]) -> anyhow::Result<Option<Header>> {
    let mut first: Option<(usize, &Header)> = None;
    let mut refusals = String::new();
    for (index, header) in headers.iter().enumerate() {
        let Some(header) = header else {
            eprintln!(
                "crashtest: {} has no header line (an older crashtest wrote it): its commit and environment cannot be checked",
                files[index].display()
            );
            continue;
        };
        match first {
            None => first = Some((index, header)),
            Some((at, reference)) => {
                let differences = reference.differences(header, false);
                if !differences.is_empty() {
                    refusals.push_str(&format!(
                        "{} and {}:\n{}",
                        files[at].display(),
                        files[index].display(),
                        crate::header::describe(&differences, "first", "second")
                    ));
                }
            }
        }
    }
    if !refusals.is_empty() {
        bail!(
            "the files come from different sweeps:\n{refusals}Seeds of different code, tests or environments must not be counted together: merge the files of each sweep separately."
        );
    }
    Ok(first.map(|(_, header)| header.clone()))
}

/// A new merged results file, headed by the common header (without a shard: it is the
/// whole), or an error if the file exists.
fn create_out(
    path: &Path,
    header: Option<&Header>,
    headers: &[Option<Header>],
) -> anyhow::Result<BufWriter<std::fs::File>> {
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| {
            format!(
                "cannot create {} (an existing file is never overwritten: choose another --out)",
                path.display()
            )
        })?;
    let mut out = BufWriter::new(file);
    if let Some(header) = header {
        let seeds: BTreeSet<&str> = headers.iter().flatten().map(|h| h.seeds.as_str()).collect();
        let merged = Header {
            shard: None,
            seeds: if seeds.len() == 1 {
                header.seeds.clone()
            } else {
                seeds.into_iter().collect::<Vec<_>>().join(",")
            },
            ..header.clone()
        };
        let line = serde_json::to_string(&merged).expect("a header serializes");
        writeln!(out, "{line}").context("cannot write the merged results file")?;
    }
    Ok(out)
}

/// When every file is a shard of one range, how many of its seeds have no result and which
/// shards are missing altogether.
fn missing_seeds(headers: &[Option<Header>], runs: &BTreeMap<u64, FirstRun>) -> Option<String> {
    let headers: Vec<&Header> = headers.iter().flatten().collect();
    let first = headers.first()?;
    if headers.iter().any(|h| h.seeds != first.seeds) {
        return None;
    }
    let range = SeedRange::parse(&first.seeds).ok()?;
    let shards: Vec<Shard> = headers
        .iter()
        .filter_map(|h| Shard::parse(h.shard.as_deref()?).ok())
        .collect();
    let have = runs.range(range.start..=range.last).count() as u64;
    let missing = range.len() - have;
    let mut text = if missing == 0 {
        format!("every seed of {range} has a result")
    } else {
        format!(
            "{missing} of the {} seeds of {range} have no result",
            range.len()
        )
    };
    if let Some(count) = shards.first().map(|s| s.count)
        && shards.iter().all(|s| s.count == count)
    {
        let present: BTreeSet<u64> = shards.iter().map(|s| s.index).collect();
        let absent: Vec<String> = (1..=count)
            .filter(|k| !present.contains(k))
            .map(|k| format!("{k}/{count}"))
            .collect();
        if !absent.is_empty() {
            text.push_str(&format!("; shards without a file: {}", absent.join(", ")));
        }
    }
    if missing > 0 {
        text.push_str(" (resume their sweeps with --resume to fill them in)");
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(shard: &str) -> Option<Header> {
        Some(Header {
            test: "t".into(),
            seeds: "0..10".into(),
            shard: Some(shard.into()),
            ..Header::default()
        })
    }

    #[test]
    fn a_file_given_twice_is_refused_under_any_name() {
        let dir = std::env::temp_dir().join(format!("crashtest-cli-twice-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let (one, two) = (dir.join("one.jsonl"), dir.join("two.jsonl"));
        std::fs::write(&one, "").unwrap();
        std::fs::write(&two, "").unwrap();
        assert!(refuse_a_file_twice(&[one.clone(), two.clone()]).is_ok());
        let twice = refuse_a_file_twice(&[one.clone(), two.clone(), one.clone()])
            .unwrap_err()
            .to_string();
        assert!(
            twice.starts_with(&format!("{} is given twice", one.display())),
            "{twice}"
        );
        let roundabout = dir.join("sub/../one.jsonl");
        let aliased = refuse_a_file_twice(&[one.clone(), roundabout])
            .unwrap_err()
            .to_string();
        assert!(aliased.contains("are the same file"), "{aliased}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn missing_shards_and_seeds_are_counted() {
        let runs: BTreeMap<u64, FirstRun> = (0..4)
            .map(|seed| {
                let run = FirstRun {
                    file: 0,
                    status: Status::Pass,
                    fingerprint: String::new(),
                };
                (seed, run)
            })
            .collect();
        let text = missing_seeds(&[header("1/3")], &runs).unwrap();
        assert_eq!(
            text,
            "6 of the 10 seeds of 0..10 have no result; shards without a file: 2/3, 3/3 (resume their sweeps with --resume to fill them in)"
        );
    }
}
