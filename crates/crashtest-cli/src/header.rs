//! The header line of a results file: what the sweep that wrote it ran.
//!
//! A seed's outcome depends on the code (the commit and any uncommitted changes), the test,
//! how it was built, the values of the variables the test declares (a planted bug, a
//! workload), and, for a shard, which block of which range it holds. The header records all
//! of them when a sweep starts a file, and `--resume` and `merge` refuse results whose header
//! says otherwise, naming each difference: mixed results would count seeds of one program as
//! seeds of another.

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use crashtest_protocol::env;
use crashtest_protocol::results::{Difference, Header};

use crate::seeds::{SeedRange, Shard};
use crate::target::Target;

/// The header of a sweep of `target` over `seeds` (shard `shard` of it, if given).
pub(crate) fn for_sweep(target: &Target, seeds: SeedRange, shard: Option<Shard>) -> Header {
    let (commit, dirty) = code_of(target).clone();
    Header {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        test: target.test.clone(),
        cargo_args: target.cargo_args.clone(),
        exe: target.exe.display().to_string(),
        commit,
        dirty,
        env: target.declared.iter().cloned().collect(),
        seeds: seeds.to_string(),
        shard: shard.map(|s| format!("{}/{}", s.index, s.count)),
        ..Header::default()
    }
}

/// The commit as a worker's failure report names it (`abc123`, `abc123-dirty`), handed to
/// every worker in `CRASHTEST_COMMIT`: a worker left to ask would run git in each of a
/// sweep's processes.
pub(crate) fn worker_commit(target: &Target) -> String {
    match code_of(target) {
        (commit, Some(_)) => format!("{commit}-dirty"),
        (commit, None) => commit.clone(),
    }
}

/// [`code`] for `target`'s package, asked once per run of the tool (which tests one target):
/// the header and every worker share the answer, and git runs (or the executable is read)
/// once.
fn code_of(target: &Target) -> &'static (String, Option<String>) {
    static CODE: OnceLock<(String, Option<String>)> = OnceLock::new();
    CODE.get_or_init(|| {
        let dir = target
            .dir
            .clone()
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| ".".into());
        code(&dir, &target.exe)
    })
}

/// The commit (`CRASHTEST_COMMIT`, else git's HEAD) and a digest of the uncommitted changes
/// to tracked files, if there are any. Untracked files are left out: the results file itself
/// is often one.
///
/// Outside a git repository, with no `CRASHTEST_COMMIT`, the code is named by a digest of the
/// test executable `exe` (`unknown commit, executable 0123...`): a bare `unknown` would let a
/// sweep resume, or a merge join, results of code changed since, counting its seeds as
/// seeds of the new code.
fn code(dir: &Path, exe: &Path) -> (String, Option<String>) {
    if let Ok(commit) = std::env::var(env::COMMIT) {
        return (commit, None);
    }
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .ok()
            .filter(|out| out.status.success())
            .map(|out| out.stdout)
    };
    let Some(head) = git(&["rev-parse", "HEAD"]) else {
        return (crashtest_protocol::code::unknown_commit(exe), None);
    };
    let head = String::from_utf8_lossy(&head).trim().to_owned();
    let dirty = git(&["diff", "HEAD", "--no-ext-diff", "--binary"])
        .filter(|diff| !diff.is_empty())
        .map(|diff| format!("{:016x}", crashtest_protocol::code::fnv1a(&diff)));
    (head, dirty)
}

/// The differences that forbid resuming a file with header `file` as a sweep with header
/// `now`: everything that decides outcomes, and the seeds (range and shard). A resume
/// continues the sweep the header describes: a wider range would leave the header naming
/// fewer seeds than the file holds, a narrower one a summary that leaves out seeds it holds.
/// More seeds go in a file of their own, which `merge` reads with this one.
pub(crate) fn resume_differences(file: &Header, now: &Header) -> Vec<Difference> {
    file.differences(now, true)
}

/// When a resume was refused for its seeds alone: how to run more seeds instead (the seeds
/// after the file's when the new range extends it, else `RANGE`), as a sentence to end the
/// refusal; empty otherwise.
pub(crate) fn more_seeds_hint(file: &Header, now: &Header) -> String {
    let only_seeds = file
        .differences(now, true)
        .iter()
        .all(|d| d.what == "seeds" || d.what == "shard");
    if !only_seeds || file.shard.is_some() || now.shard.is_some() {
        return String::new();
    }
    let (Ok(was), Ok(wanted)) = (SeedRange::parse(&file.seeds), SeedRange::parse(&now.seeds))
    else {
        return String::new();
    };
    let seeds = if wanted.start == was.start && wanted.last > was.last {
        SeedRange {
            start: was.last + 1,
            last: wanted.last,
        }
        .to_string()
    } else {
        "RANGE".to_owned()
    };
    format!(
        " To run more seeds, sweep them into a file of their own (--seeds {seeds} --out OTHER) and read both files as one with `crashtest merge`."
    )
}

/// The differences as indented lines, `was` named by `first` and `now` by `second`.
pub(crate) fn describe(differences: &[Difference], first: &str, second: &str) -> String {
    differences
        .iter()
        .map(|d| {
            format!(
                "  {}: {} ({first}) vs {} ({second})\n",
                d.what, d.was, d.now
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resume_must_run_the_same_seeds_and_is_told_how_to_run_more() {
        let file = Header {
            test: "t".into(),
            seeds: "0..100".into(),
            ..Header::default()
        };
        let wider = Header {
            seeds: "0..200".into(),
            ..file.clone()
        };
        let differences = resume_differences(&file, &wider);
        assert_eq!(differences.len(), 1, "{differences:?}");
        assert_eq!(differences[0].to_string(), "seeds: 0..100 vs 0..200");
        let hint = more_seeds_hint(&file, &wider);
        assert!(hint.contains("--seeds 100..200 --out OTHER"), "{hint}");
        let narrower = Header {
            seeds: "0..50".into(),
            ..file.clone()
        };
        assert_eq!(resume_differences(&file, &narrower)[0].what, "seeds");
        assert!(more_seeds_hint(&file, &narrower).contains("(--seeds RANGE --out OTHER)"));
        let other_commit = Header {
            commit: "def".into(),
            ..wider.clone()
        };
        assert_eq!(more_seeds_hint(&file, &other_commit), "");
    }

    #[test]
    fn a_shard_must_resume_as_the_same_shard_of_the_same_range() {
        let file = Header {
            test: "t".into(),
            seeds: "0..100".into(),
            ..Header::default()
        };
        let shard = |k: &str, seeds: &str| Header {
            shard: Some(k.into()),
            seeds: seeds.into(),
            ..file.clone()
        };
        assert!(resume_differences(&shard("1/2", "0..100"), &shard("1/2", "0..100")).is_empty());
        let moved = resume_differences(&shard("1/2", "0..100"), &shard("1/2", "0..200"));
        assert_eq!(moved[0].what, "seeds");
        let other = resume_differences(&shard("1/2", "0..100"), &shard("2/2", "0..100"));
        assert_eq!(other[0].what, "shard");
    }
}
