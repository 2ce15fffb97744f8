//! One sweep per results file: the sweep that writes a results file holds an exclusive lock
//! on it for as long as it runs.
//!
//! Two sweeps appending to one file would interleave their lines and delete each other's
//! worker files, so a second sweep on a file in use is refused, with the holder named. The
//! lock is the operating system's (`flock` through `fs4`) on the results file itself: it dies
//! with its process, so the lock of a sweep that was killed (`kill -9`, a lost machine) is no
//! obstacle, and the next sweep takes the file over. Beside the file, `<results>.lock` names
//! the holder (process id, host, start time) for the refusal; it is only a note, removed when
//! the sweep ends, and the lock does not depend on it.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

/// The lock on a results file, released on drop.
#[derive(Debug)]
pub(crate) struct Lock {
    /// Holds the lock while open.
    file: File,
    note: PathBuf,
}

impl Lock {
    /// Makes `replacement` the locked results file `results` (a rename), the lock held
    /// throughout: the replacement is locked before it takes the name, and the file it
    /// replaces stays locked until then, so no other sweep can take the file in between.
    pub(crate) fn replace(&mut self, results: &Path, replacement: &Path) -> anyhow::Result<()> {
        let file = OpenOptions::new()
            .append(true)
            .open(replacement)
            .with_context(|| format!("cannot open {}", replacement.display()))?;
        fs4::FileExt::try_lock(&file)
            .with_context(|| format!("cannot lock {}", replacement.display()))?;
        std::fs::rename(replacement, results).with_context(|| {
            format!(
                "cannot move {} to {}",
                replacement.display(),
                results.display()
            )
        })?;
        self.file = file;
        Ok(())
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.note);
    }
}

/// `<results>.lock`: the note naming the sweep that holds `results`.
pub(crate) fn note_path(results: &Path) -> PathBuf {
    crate::results::beside(results, ".lock")
}

/// Locks `results` (creating it empty if absent) for this sweep, or explains who holds it.
pub(crate) fn acquire(results: &Path) -> anyhow::Result<Lock> {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(results)
        .with_context(|| format!("cannot open the results file {}", results.display()))?;
    let note = note_path(results);
    match fs4::FileExt::try_lock(&file) {
        Ok(()) => {}
        Err(fs4::TryLockError::WouldBlock) => {
            let holder = std::fs::read_to_string(&note).unwrap_or_default();
            let holder = holder.trim();
            bail!(
                "the results file {} is in use by another sweep ({}): two sweeps on one file would mix their results. Wait for it to end or stop it, or sweep into another file with --out",
                results.display(),
                if holder.is_empty() {
                    "it is starting or ending"
                } else {
                    holder
                }
            );
        }
        Err(fs4::TryLockError::Error(error)) => {
            return Err(error).with_context(|| {
                format!(
                    "cannot lock the results file {} (does its file system support locks?)",
                    results.display()
                )
            });
        }
    }
    let stale = std::fs::read_to_string(&note).unwrap_or_default();
    if !stale.trim().is_empty() {
        eprintln!(
            "crashtest: taking over {}: the sweep that held it ({}) is no longer running",
            results.display(),
            stale.trim()
        );
    }
    std::fs::write(&note, format!("{}\n", holder()))
        .with_context(|| format!("cannot write {}", note.display()))?;
    Ok(Lock { file, note })
}

/// This sweep, as a refusal names it: `process 4711 on build-3, started at Unix time
/// 1733222400`. The wall clock names a sweep for a person; nothing simulated reads it.
#[allow(clippy::disallowed_methods)]
fn holder() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_default();
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let host = host.trim();
    format!(
        "process {}{}, started at Unix time {since}",
        std::process::id(),
        if host.is_empty() {
            String::new()
        } else {
            format!(" on {host}")
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_a_held_file_is_refused_naming_the_holder() {
        let dir = std::env::temp_dir().join(format!("crashtest-cli-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("results.jsonl");
        let first = acquire(&path).unwrap();
        let error = acquire(&path).unwrap_err().to_string();
        assert!(error.contains("in use by another sweep"), "{error}");
        assert!(
            error.contains(&format!("process {}", std::process::id())),
            "{error}"
        );
        drop(first);
        assert!(!note_path(&path).exists(), "the note goes with the lock");
        let again = acquire(&path).unwrap();
        drop(again);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
