//! Results files: a header line saying what the sweep ran (`crashtest_protocol::Header`), then
//! one line per finished seed (`crashtest_protocol::SeedResult`), as test binaries write them,
//! plus the lines this tool writes for seeds that took their worker process down (`crashed`,
//! `hung`).
//!
//! Reading is strict in the middle and forgiving at the end: a process killed mid-write can
//! leave a partial last line (one without its newline), which is reported and set aside (moved
//! to `<file>.corrupt`, never deleted); a bad line anywhere else, a complete last line
//! included, means the file is not what it claims to be, and is an error that names the line.
//!
//! A file holds one line per seed. A resumed sweep that runs seeds again (hung under a shorter
//! `--seed-timeout`) first replaces the file with a copy without their lines ([`copy_without`]).

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
pub(crate) use crashtest_protocol::SeedResult;
use crashtest_protocol::results::Header;

/// What reading a results file found besides its results.
#[derive(Debug, Default)]
pub(crate) struct Contents {
    /// Its header line, if it has one (files of older sweeps do not).
    pub(crate) header: Option<Header>,
    /// How many results it holds.
    pub(crate) results: u64,
    /// A partial last line: its byte offset and text.
    pub(crate) torn_tail: Option<(u64, String)>,
    /// Whether the last complete line lacks its newline.
    pub(crate) missing_newline: bool,
}

/// Reads a results file line by line (it may hold millions), handing each result to `each`;
/// see the module docs for what is an error.
pub(crate) fn read(path: &Path, each: impl FnMut(SeedResult)) -> anyhow::Result<Contents> {
    let file = File::open(path)
        .with_context(|| format!("cannot read the results file {}", path.display()))?;
    parse(BufReader::new(file), each)
        .with_context(|| format!("corrupt results file {}", path.display()))
}

fn parse(mut input: impl BufRead, mut each: impl FnMut(SeedResult)) -> anyhow::Result<Contents> {
    let mut contents = Contents::default();
    let mut offset = 0u64;
    let mut number = 0;
    // A line is judged once the next one is read: only the last may be cut short.
    let mut pending: Option<(u64, usize, Vec<u8>)> = None;
    loop {
        let mut line = Vec::new();
        let read = input.read_until(b'\n', &mut line)?;
        let at_end = read == 0;
        if let Some((start, index, text)) = pending.take() {
            judge(&mut contents, start, index, &text, at_end, &mut each)?;
        }
        if at_end {
            return Ok(contents);
        }
        number += 1;
        pending = Some((offset, number, line));
        offset += read as u64;
    }
}

/// Takes one line of a results file: a result, a blank, a torn last line, or an error.
fn judge(
    contents: &mut Contents,
    start: u64,
    number: usize,
    line: &[u8],
    is_last: bool,
    each: &mut impl FnMut(SeedResult),
) -> anyhow::Result<()> {
    let text = String::from_utf8_lossy(line);
    let body = text.trim_end_matches('\n');
    if body.trim().is_empty() {
        return Ok(());
    }
    let complete = text.ends_with('\n');
    if number == 1 && Header::is_header(body) {
        match serde_json::from_str::<Header>(body) {
            Ok(header) => {
                contents.header = Some(header);
                contents.missing_newline = !complete;
                return Ok(());
            }
            Err(error) if complete || !is_last => bail!(
                "line 1 is a header this tool cannot read ({error}): was the file written by a newer crashtest? Read it with that version, or sweep into another file"
            ),
            Err(_) => {
                contents.torn_tail = Some((start, body.to_owned()));
                return Ok(());
            }
        }
    }
    match serde_json::from_str::<SeedResult>(body) {
        Ok(result) => {
            contents.results += 1;
            contents.missing_newline = !complete;
            each(result);
        }
        Err(_) if is_last && !complete => contents.torn_tail = Some((start, body.to_owned())),
        Err(error) => {
            let excerpt: String = body.chars().take(80).collect();
            bail!(
                "line {number} is not a seed result ({error}): {excerpt:?}; fix or remove that line, or sweep into another file"
            );
        }
    }
    Ok(())
}

/// The header of a results file, if its first line is one (read without the rest).
pub(crate) fn read_header(path: &Path) -> anyhow::Result<Option<Header>> {
    let file = File::open(path)
        .with_context(|| format!("cannot read the results file {}", path.display()))?;
    let mut first = String::new();
    BufReader::new(file)
        .read_line(&mut first)
        .with_context(|| format!("cannot read the results file {}", path.display()))?;
    if !Header::is_header(&first) {
        return Ok(None);
    }
    serde_json::from_str(first.trim_end())
        .map(Some)
        .with_context(|| format!("corrupt header line in {}", path.display()))
}

/// Makes a results file safe to append to: a torn last line moves to `<file>.corrupt`
/// (returned, for the warning), and a missing final newline is added.
pub(crate) fn repair(path: &Path, contents: &Contents) -> anyhow::Result<Option<PathBuf>> {
    let context = || format!("cannot repair the results file {}", path.display());
    if let Some((offset, tail)) = &contents.torn_tail {
        let aside = set_aside_path(path);
        let mut out = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&aside)
            .with_context(context)?;
        writeln!(out, "{tail}").with_context(context)?;
        out.sync_all().with_context(context)?;
        let file = OpenOptions::new()
            .write(true)
            .open(path)
            .with_context(context)?;
        file.set_len(*offset).with_context(context)?;
        return Ok(Some(aside));
    }
    if contents.missing_newline {
        let mut file = OpenOptions::new()
            .append(true)
            .open(path)
            .with_context(context)?;
        file.write_all(b"\n").with_context(context)?;
    }
    Ok(None)
}

/// A copy of the results file at `path` without the results `left_out` picks, every other
/// line as it is, written beside it (`<file>.rewrite`) and synced, for
/// [`crate::lock::Lock::replace`] to put in its place; returns the copy's path. The file must
/// be whole ([`repair`] first).
pub(crate) fn copy_without(
    path: &Path,
    left_out: impl Fn(&SeedResult) -> bool,
) -> anyhow::Result<PathBuf> {
    let copy = beside(path, ".rewrite");
    let context = || format!("cannot write {}", copy.display());
    let mut input = BufReader::new(
        File::open(path)
            .with_context(|| format!("cannot read the results file {}", path.display()))?,
    );
    let mut out = io::BufWriter::new(File::create(&copy).with_context(context)?);
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        let result = serde_json::from_slice::<SeedResult>(&line);
        if !result.is_ok_and(|result| left_out(&result)) {
            out.write_all(&line).with_context(context)?;
        }
    }
    let file = out
        .into_inner()
        .map_err(|e| e.into_error())
        .with_context(context)?;
    file.sync_all().with_context(context)?;
    Ok(copy)
}

/// `<file>.corrupt`: where a torn last line of `file` goes (`results.jsonl.corrupt`).
pub(crate) fn set_aside_path(path: &Path) -> PathBuf {
    beside(path, ".corrupt")
}

/// The path beside a results file named by its name and `suffix` (`results.jsonl.lock`),
/// where the sweep keeps what belongs to that file.
pub(crate) fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(suffix);
    path.with_file_name(name)
}

/// Reads the complete lines a growing file gained since the last call.
#[derive(Debug)]
pub(crate) struct Tail {
    file: File,
    offset: u64,
    partial: String,
}

impl Tail {
    /// Follows `path` from its start.
    pub(crate) fn open(path: &Path) -> io::Result<Tail> {
        Ok(Tail {
            file: File::open(path)?,
            offset: 0,
            partial: String::new(),
        })
    }

    /// The lines completed since the last call (without their newlines).
    pub(crate) fn read_lines(&mut self) -> io::Result<Vec<String>> {
        self.file.seek(SeekFrom::Start(self.offset))?;
        let mut bytes = Vec::new();
        self.file.read_to_end(&mut bytes)?;
        self.offset += bytes.len() as u64;
        self.partial.push_str(&String::from_utf8_lossy(&bytes));
        let Some(last_newline) = self.partial.rfind('\n') else {
            return Ok(Vec::new());
        };
        let rest = self.partial.split_off(last_newline + 1);
        let complete = std::mem::replace(&mut self.partial, rest);
        Ok(complete
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(str::to_owned)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashtest_protocol::Status;

    fn line(seed: u64, status: Status) -> String {
        serde_json::to_string(&SeedResult {
            test: "t".into(),
            seed,
            status,
            ..SeedResult::default()
        })
        .unwrap()
    }

    #[test]
    fn a_torn_last_line_is_set_aside_not_fatal() {
        let text = format!(
            "{}\n{}\n{{\"test\":\"t\",\"se",
            line(1, Status::Pass),
            line(2, Status::Fail)
        );
        let mut seeds = Vec::new();
        let contents = parse(text.as_bytes(), |r| seeds.push(r.seed)).unwrap();
        assert_eq!((contents.results, seeds), (2, vec![1, 2]));
        let (offset, tail) = contents.torn_tail.unwrap();
        assert_eq!(&text[offset as usize..], tail);
    }

    #[test]
    fn a_complete_foreign_last_line_is_an_error_not_a_torn_one() {
        let text = format!("{}\n{{\"other\":\"tool\"}}\n", line(1, Status::Pass));
        let error = parse(text.as_bytes(), |_| {}).unwrap_err().to_string();
        assert!(error.starts_with("line 2 is not a seed result"), "{error}");
    }

    #[test]
    fn the_header_is_read_from_the_first_line_only() {
        let header = serde_json::to_string(&Header {
            test: "t".into(),
            ..Header::default()
        })
        .unwrap();
        let text = format!("{header}\n{}\n", line(1, Status::Pass));
        let contents = parse(text.as_bytes(), |_| {}).unwrap();
        assert_eq!(contents.header.unwrap().test, "t");
        assert_eq!(contents.results, 1);
        let late = format!(
            "{}\n{header}\n{}\n",
            line(1, Status::Pass),
            line(2, Status::Pass)
        );
        assert!(parse(late.as_bytes(), |_| {}).is_err());
    }

    #[test]
    fn a_bad_line_in_the_middle_is_an_error_naming_it() {
        let text = format!(
            "{}\ngarbage\n{}\n",
            line(1, Status::Pass),
            line(2, Status::Pass)
        );
        let error = parse(text.as_bytes(), |_| {}).unwrap_err().to_string();
        assert!(error.starts_with("line 2 is not a seed result"), "{error}");
    }

    #[test]
    fn repair_moves_the_torn_line_aside_and_keeps_every_valid_line() {
        let dir = std::env::temp_dir().join(format!("crashtest-cli-repair-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("results.jsonl");
        std::fs::write(&path, format!("{}\n{}", line(1, Status::Pass), "{\"te")).unwrap();
        let mut before = Vec::new();
        let contents = read(&path, |r| before.push(r)).unwrap();
        let aside = repair(&path, &contents).unwrap().unwrap();
        assert_eq!(aside, dir.join("results.jsonl.corrupt"));
        assert_eq!(std::fs::read_to_string(&aside).unwrap(), "{\"te\n");
        let mut after = Vec::new();
        let again = read(&path, |r| after.push(r)).unwrap();
        assert_eq!((again.results, after), (1, before));
        assert!(again.torn_tail.is_none() && !again.missing_newline);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_copy_without_some_results_keeps_every_other_line_as_it_was() {
        let dir = std::env::temp_dir().join(format!("crashtest-cli-copy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("results.jsonl");
        let header = serde_json::to_string(&Header::default()).unwrap();
        let lines = [
            header.clone(),
            line(1, Status::Pass),
            line(2, Status::Hung),
            line(3, Status::Fail),
        ];
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let copy = copy_without(&path, |r| r.status == Status::Hung).unwrap();
        assert_eq!(copy, dir.join("results.jsonl.rewrite"));
        let want = format!("{header}\n{}\n{}\n", lines[1], lines[3]);
        assert_eq!(std::fs::read_to_string(&copy).unwrap(), want);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_tail_returns_only_complete_lines() {
        let dir = std::env::temp_dir().join(format!("crashtest-cli-tail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("grow.jsonl");
        std::fs::write(&path, "one\ntw").unwrap();
        let mut tail = Tail::open(&path).unwrap();
        assert_eq!(tail.read_lines().unwrap(), ["one"]);
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"o\nthree\n").unwrap();
        assert_eq!(tail.read_lines().unwrap(), ["two", "three"]);
        assert!(tail.read_lines().unwrap().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
