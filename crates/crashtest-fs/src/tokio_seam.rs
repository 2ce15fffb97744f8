//! This disk as the tokio stand-in sees it: `crashtest_hooks::fs` over this crate's public
//! API, so a tokio program's files live on the calling node's simulated disk with its whole
//! crash model (the stand-in's `tokio::fs` holds these objects inside a simulation).

use std::io::{self, SeekFrom};
use std::mem::MaybeUninit;
use std::path::PathBuf;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use crashtest_hooks::fs::{DirItem, Disk, DiskFile, OpenFlags, Stat};
use crashtest_hooks::net::BoxFuture;
use tokio::io::{AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};

use crate::{File, OpenOptions};

/// Registers this disk with the tokio stand-in (the `crashtest` facade does, before its first
/// run).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// crashtest::fs::register_tokio_seam();
/// assert!(crashtest_hooks::disk().is_some());
/// ```
pub fn register_tokio_seam() {
    static SEAM: Seam = Seam;
    crashtest_hooks::register_disk(&SEAM);
}

struct Seam;

impl Disk for Seam {
    fn open(
        &self,
        path: PathBuf,
        flags: OpenFlags,
    ) -> BoxFuture<'static, io::Result<Box<dyn DiskFile>>> {
        Box::pin(async move {
            let mut options = OpenOptions::new();
            options
                .read(flags.read)
                .write(flags.write)
                .append(flags.append)
                .truncate(flags.truncate)
                .create(flags.create)
                .create_new(flags.create_new);
            if let Some(mode) = flags.mode {
                options.mode(mode);
            }
            let file = options.open(path).await?;
            Ok(Box::new(file) as Box<dyn DiskFile>)
        })
    }

    fn read(&self, path: PathBuf) -> BoxFuture<'static, io::Result<Vec<u8>>> {
        Box::pin(crate::read(path))
    }

    fn write(&self, path: PathBuf, contents: Vec<u8>) -> BoxFuture<'static, io::Result<()>> {
        Box::pin(crate::write(path, contents))
    }

    fn create_dir(
        &self,
        path: PathBuf,
        all: bool,
        mode: Option<u32>,
    ) -> BoxFuture<'static, io::Result<()>> {
        let mode = mode.unwrap_or(crate::disk::DIR_MODE);
        Box::pin(async move { crate::ops::create_dir_with_mode(&path, all, mode).await })
    }

    fn hard_link(&self, original: PathBuf, link: PathBuf) -> BoxFuture<'static, io::Result<()>> {
        Box::pin(crate::hard_link(original, link))
    }

    fn set_permissions(
        &self,
        path: PathBuf,
        permissions: std::fs::Permissions,
    ) -> BoxFuture<'static, io::Result<()>> {
        Box::pin(crate::set_permissions(path, permissions))
    }

    fn remove_file(&self, path: PathBuf) -> BoxFuture<'static, io::Result<()>> {
        Box::pin(crate::remove_file(path))
    }

    fn remove_dir(&self, path: PathBuf) -> BoxFuture<'static, io::Result<()>> {
        Box::pin(crate::remove_dir(path))
    }

    fn rename(&self, from: PathBuf, to: PathBuf) -> BoxFuture<'static, io::Result<()>> {
        Box::pin(crate::rename(from, to))
    }

    fn stat(&self, path: PathBuf) -> BoxFuture<'static, io::Result<Stat>> {
        Box::pin(async move {
            let metadata = crate::metadata(path).await?;
            // The stand-in reads anything that is not a directory as a file: a simulated disk
            // holds nothing else.
            assert!(
                metadata.is_file() != metadata.is_dir(),
                "the disk stat an entry that is neither a file nor a directory"
            );
            Ok(metadata.stat())
        })
    }

    fn read_dir(&self, path: PathBuf) -> BoxFuture<'static, io::Result<Vec<DirItem>>> {
        Box::pin(async move {
            let mut listing = crate::read_dir(path).await?;
            let mut items = Vec::new();
            while let Some(entry) = listing.next_entry().await? {
                items.push(DirItem {
                    name: entry.file_name(),
                    is_dir: entry.file_type().await?.is_dir(),
                    ino: entry.ino(),
                });
            }
            Ok(items)
        })
    }
}

impl DiskFile for File {
    fn poll_read(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut [MaybeUninit<u8>],
    ) -> Poll<io::Result<usize>> {
        let room = buf.len();
        let mut buf = ReadBuf::uninit(buf);
        Pin::new(self).poll_read(cx, &mut buf).map_ok(|()| {
            // The caller takes the first `n` bytes as initialized: they must be.
            let n = buf.filled().len();
            assert!(
                n <= room && n <= buf.initialized().len(),
                "a read reports only bytes it filled"
            );
            n
        })
    }

    fn poll_write(&mut self, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let written = ready!(Pin::new(self).poll_write(cx, data));
        if let Ok(n) = written {
            assert!(n <= data.len(), "a write takes at most its buffer");
        }
        Poll::Ready(written)
    }

    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(self).poll_flush(cx)
    }

    fn start_seek(&mut self, position: SeekFrom) -> io::Result<()> {
        Pin::new(self).start_seek(position)
    }

    fn poll_complete(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        Pin::new(self).poll_complete(cx)
    }

    fn sync_all(&self) -> BoxFuture<'_, io::Result<()>> {
        Box::pin(File::sync_all(self))
    }

    fn sync_data(&self) -> BoxFuture<'_, io::Result<()>> {
        Box::pin(File::sync_data(self))
    }

    fn set_len(&self, len: u64) -> BoxFuture<'_, io::Result<()>> {
        Box::pin(File::set_len(self, len))
    }

    fn set_modified(&self, time: std::time::SystemTime) -> BoxFuture<'_, io::Result<()>> {
        Box::pin(File::set_modified(self, time))
    }

    fn set_permissions(&self, permissions: std::fs::Permissions) -> BoxFuture<'_, io::Result<()>> {
        Box::pin(File::set_permissions(self, permissions))
    }

    fn try_clone(&self) -> BoxFuture<'_, io::Result<Box<dyn DiskFile>>> {
        Box::pin(async move { Ok(Box::new(File::try_clone(self).await?) as Box<dyn DiskFile>) })
    }

    fn stat(&self) -> BoxFuture<'_, io::Result<Stat>> {
        Box::pin(async move {
            let metadata = File::metadata(self).await?;
            assert!(metadata.is_file(), "an open file stats as a file");
            Ok(metadata.stat())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashtest_core::{Sim, node, time};
    use std::future::poll_fn;
    use std::time::Duration;

    #[test]
    fn a_file_written_and_synced_through_the_seam_survives_a_crash() {
        Sim::new(5)
            .run(async {
                let db = node::create("db", || async {
                    let disk = Seam;
                    if disk.stat("/log".into()).await.is_ok() {
                        let bytes = disk.read("/log".into()).await.unwrap();
                        assert_eq!(bytes, b"entry");
                        let listing = disk.read_dir("/".into()).await.unwrap();
                        assert_eq!(listing.len(), 1);
                        assert_eq!(listing[0].name, "log");
                        return;
                    }
                    let flags = OpenFlags {
                        write: true,
                        create: true,
                        ..OpenFlags::default()
                    };
                    let mut file = disk.open("/log".into(), flags).await.unwrap();
                    let n = poll_fn(|cx| file.poll_write(cx, b"entry")).await.unwrap();
                    assert_eq!(n, 5);
                    file.sync_all().await.unwrap();
                    crate::sync_dir("/").await.unwrap();
                    std::future::pending::<()>().await;
                });
                time::sleep(Duration::from_secs(1)).await;
                db.restart();
                time::sleep(Duration::from_secs(1)).await;
            })
            .unwrap();
    }

    #[test]
    fn a_missing_file_is_not_found_through_the_seam() {
        Sim::new(1)
            .run(async {
                let err = Seam.read("/nothing".into()).await.unwrap_err();
                assert_eq!(err.kind(), io::ErrorKind::NotFound);
            })
            .unwrap();
    }
}
