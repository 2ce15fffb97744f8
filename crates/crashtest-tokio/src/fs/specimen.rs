//! std's `Metadata` for a simulated file or directory.
//!
//! tokio's `metadata` calls hand out std's `Metadata`, and std makes one only by asking the
//! OS about a real entry. With crashtest's determinism guards linked (as they are under
//! `cargo test`), the stand-in asks std about `crashtest_hooks::fs::SIMULATED_ENTRY` while
//! holding the simulated entry's `Stat`, and the guards' `statx` answers from it: every
//! field is the simulated disk's or fixed (kind, length, bits, inode number, links and times
//! are the disk's; the owner is the calling user), so the answer is the same on every run
//! and every host.
//!
//! Without the guards that path is not found, and the stand-in makes a specimen: a fresh
//! entry in the host's temporary directory shaped like the simulated one (a file extended
//! to its length without a byte written, so it takes no space; or an empty directory), with
//! the simulated entry's permissions and access and modification times, asks the OS for its
//! metadata, and removes it at once. None of the program's data reaches the host, and
//! nothing is left behind. The determinism guards refuse changes to the host's files inside
//! a simulation, so the specimen is made inside the hooks' `with_host_files` scope. A
//! specimen's directory length, creation and change times, and Unix's inode, device, links,
//! owner and block counts are the host's; code that reads them is not deterministic.

use std::fs::{FileTimes, Metadata};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crashtest_hooks::fs::Stat;

/// The std `Metadata` of a simulated entry described by `stat`.
///
/// # Errors
///
/// When the host's temporary directory takes no specimen; the error says so.
pub(crate) fn metadata(stat: Stat) -> io::Result<Metadata> {
    let answered = crashtest_hooks::fs::answering(stat, || {
        std::fs::metadata(crashtest_hooks::fs::SIMULATED_ENTRY)
    });
    if let Ok(metadata) = answered {
        assert_eq!(
            (metadata.len(), metadata.is_dir()),
            (stat.len, stat.is_dir),
            "the guards answered for the simulated entry"
        );
        return Ok(metadata);
    }
    let path = fresh_path();
    let made = crashtest_hooks::with_host_files(|| {
        if stat.is_dir {
            directory(&path, &stat)
        } else {
            file(&path, &stat)
        }
    });
    made.map_err(|err| {
        io::Error::new(
            err.kind(),
            format!(
                "crashtest's tokio stand-in makes std Metadata for a simulated entry from an \
                 empty specimen in the host's temporary directory, and could not make one at {}: \
                 {err}",
                path.display()
            ),
        )
    })
}

/// A path for a specimen, unused by any other: the process and a count.
fn fresh_path() -> PathBuf {
    static MADE: AtomicU64 = AtomicU64::new(0);
    let number = MADE.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!(
        "crashtest-metadata-{}-{number}",
        std::process::id()
    ))
}

/// The simulated entry's access (its creation) and modification times.
fn times(stat: &Stat) -> FileTimes {
    use crashtest_hooks::epoch::time_at;
    FileTimes::new()
        .set_accessed(time_at(stat.born_ns))
        .set_modified(time_at(stat.modified_ns))
}

/// std's permissions with the bits `mode`.
#[cfg(unix)]
pub(crate) fn permissions(mode: u32) -> std::fs::Permissions {
    std::os::unix::fs::PermissionsExt::from_mode(mode)
}

/// A file specimen of `stat`'s length, bits and times at `path`, removed once asked.
fn file(path: &Path, stat: &Stat) -> io::Result<Metadata> {
    let (len, mode) = (stat.len, stat.mode);
    let specimen = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    let asked = (|| {
        specimen.set_len(len)?;
        specimen.set_times(times(stat))?;
        #[cfg(unix)]
        specimen.set_permissions(permissions(mode))?;
        #[cfg(not(unix))]
        let _ = mode;
        specimen.metadata()
    })();
    let removed = std::fs::remove_file(path);
    let metadata = asked?;
    removed?;
    assert_eq!(
        metadata.len(),
        len,
        "a file specimen has the simulated length"
    );
    assert!(metadata.is_file(), "a file specimen is a file");
    Ok(metadata)
}

/// An empty directory specimen of `stat`'s bits and times at `path`, removed once asked. Its
/// times are set before its bits, which may forbid opening it.
fn directory(path: &Path, stat: &Stat) -> io::Result<Metadata> {
    let mode = stat.mode;
    std::fs::create_dir(path)?;
    let asked = (|| {
        std::fs::File::open(path)?.set_times(times(stat))?;
        #[cfg(unix)]
        std::fs::set_permissions(path, permissions(mode))?;
        #[cfg(not(unix))]
        let _ = mode;
        std::fs::metadata(path)
    })();
    let removed = std::fs::remove_dir(path);
    let metadata = asked?;
    removed?;
    assert!(metadata.is_dir(), "a directory specimen is a directory");
    Ok(metadata)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    /// A simulated entry made a second after the epoch and modified a minute after that.
    fn simulated(len: u64, is_dir: bool, mode: u32) -> Stat {
        Stat {
            len,
            is_dir,
            mode,
            ino: 2,
            nlink: 1,
            born_ns: 1_000_000_000,
            modified_ns: 61_000_000_000,
            changed_ns: 61_000_000_000,
        }
    }

    #[test]
    fn a_file_specimen_has_the_simulated_length_mode_and_times_and_is_removed() {
        let len = 5 << 30;
        let path = fresh_path();
        let meta = file(&path, &simulated(len, false, 0o640)).unwrap();
        assert!(
            !path.exists(),
            "the specimen was left at {}",
            path.display()
        );
        assert!(meta.is_file());
        assert_eq!(meta.len(), len);
        let since = |time: SystemTime| time.duration_since(SystemTime::UNIX_EPOCH).unwrap();
        assert_eq!(since(meta.modified().unwrap()).as_secs(), 61);
        assert_eq!(since(meta.accessed().unwrap()).as_secs(), 1);
        #[cfg(unix)]
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o7777,
            0o640
        );
    }

    #[test]
    fn a_directory_specimen_has_the_simulated_mode_and_times_and_is_removed() {
        let path = fresh_path();
        let meta = directory(&path, &simulated(0, true, 0o500)).unwrap();
        assert!(
            !path.exists(),
            "the specimen was left at {}",
            path.display()
        );
        assert!(meta.is_dir());
        let modified = meta.modified().unwrap();
        assert_eq!(
            modified
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_secs(),
            61
        );
        #[cfg(unix)]
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o7777,
            0o500
        );
    }
}
