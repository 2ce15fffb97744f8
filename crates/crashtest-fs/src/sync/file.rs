//! The synchronous file handle and its open options: positioned and cursor reads and
//! writes, length, sync, metadata.

use std::fmt;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crashtest_io::SimOrReal;
use delegate::delegate;

use crate::errors;
use crate::metadata::Metadata;
use crate::open_options::open_options;
use crate::path::Names;
use crate::state::{self, Handle};

use super::mutation;

/// An open file of the calling node's disk, with positioned reads and writes.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// use crashtest::fs::sync::File;
///
/// crashtest::Sim::new(1).run(async {
///     let file = File::options().read(true).write(true).create(true).open("/db").unwrap();
///     file.write_all_at(b"page", 4096).unwrap();
///     file.sync_data().unwrap();
///     assert_eq!(file.len().unwrap(), 4100);
///     let mut buf = [0; 4];
///     file.read_exact_at(&mut buf, 4096).unwrap();
///     assert_eq!(&buf, b"page");
/// }).unwrap();
/// ```
pub struct File {
    inner: SimOrReal<SimHandle, RealFile>,
    /// The cursor, shared with the handles `try_clone` made, as `dup(2)`ed descriptors share
    /// their open file's offset.
    cursor: Arc<AtomicU64>,
}

impl fmt::Debug for File {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("File")
            .field("inner", &self.inner)
            .field("cursor", &self.cursor.load(Ordering::Relaxed))
            .finish()
    }
}

/// The simulated side: a handle on the node's disk, released when dropped.
#[derive(Debug)]
struct SimHandle(Handle);

/// The real side: `std::fs::File` has no positioned I/O on every platform, so a read or
/// write at an offset seeks first, under a lock.
#[derive(Debug)]
struct RealFile(Mutex<std::fs::File>);

impl Drop for SimHandle {
    fn drop(&mut self) {
        if let Some(state) = state::state() {
            state.release(&self.0);
        }
    }
}

impl SimHandle {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let n = state::with_io(|s| s.read(&self.0, offset, buf))?;
        assert!(n <= buf.len(), "a read fills at most its buffer");
        Ok(n)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        mutation()?;
        let end = state::with_io(|s| s.write(&self.0, offset, buf))?;
        assert!(
            end >= buf.len() as u64,
            "a write ends past the bytes it wrote"
        );
        assert!(
            self.0.flags.append || end == offset + buf.len() as u64,
            "a positioned write lands where it was asked to"
        );
        Ok(buf.len())
    }

    fn len(&self) -> io::Result<u64> {
        state::with_io(|s| s.len(&self.0))
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        mutation()?;
        state::with_io(|s| s.set_len(&self.0, len))
    }

    /// `sync_all`: the length is part of the data, and making the permission bits and times
    /// durable too (which `fdatasync` need not) loses a program nothing it was promised.
    fn sync_data(&self) -> io::Result<()> {
        self.sync_all()
    }

    fn sync_all(&self) -> io::Result<()> {
        mutation()?;
        state::with_io(|s| s.sync(&self.0))
    }

    fn set_permissions(&self, permissions: &std::fs::Permissions) -> io::Result<()> {
        mutation()?;
        let mode = crate::ops::mode_of(permissions);
        state::with_io(|s| s.handle_set_mode(&self.0, mode))
    }

    fn set_modified(&self, time: std::time::SystemTime) -> io::Result<()> {
        let ns = crate::metadata::nanos_since_epoch(time)?;
        mutation()?;
        state::with_io(|s| s.handle_set_modified(&self.0, ns))
    }

    fn metadata(&self) -> io::Result<Metadata> {
        let metadata = state::with_io(|s| s.handle_metadata(&self.0))?;
        assert!(
            metadata.is_file() || !self.0.flags.writes(),
            "a file opened for writing is a file"
        );
        Ok(metadata)
    }
}

impl RealFile {
    fn lock(&self) -> std::sync::MutexGuard<'_, std::fs::File> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The file, locked and positioned at `offset`.
    fn at(&self, offset: u64) -> io::Result<std::sync::MutexGuard<'_, std::fs::File>> {
        let mut file = self.lock();
        assert_eq!(
            file.seek(SeekFrom::Start(offset))?,
            offset,
            "a seek goes where asked"
        );
        Ok(file)
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let n = self.at(offset)?.read(buf)?;
        assert!(n <= buf.len(), "a read fills at most its buffer");
        Ok(n)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        let n = self.at(offset)?.write(buf)?;
        assert!(n <= buf.len(), "a write takes at most its buffer");
        Ok(n)
    }

    /// Writes `buf` at `offset`, as a cursor's write does; returns how many bytes were
    /// written and the cursor after them: where the OS left the file's position, which for
    /// a file opened to append is its end, not `offset` plus the bytes.
    fn write_from(&self, buf: &[u8], offset: u64) -> io::Result<(usize, u64)> {
        let mut file = self.at(offset)?;
        let n = file.write(buf)?;
        assert!(n <= buf.len(), "a write takes at most its buffer");
        Ok((n, file.stream_position()?))
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.lock().metadata()?.len())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.lock().set_len(len)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.lock().sync_data()
    }

    fn sync_all(&self) -> io::Result<()> {
        self.lock().sync_all()
    }

    fn metadata(&self) -> io::Result<Metadata> {
        Ok(Metadata::from_std(&self.lock().metadata()?))
    }
}

impl File {
    /// Opens an existing file for reading.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// let error = crashtest::fs::sync::File::open("/missing").unwrap_err();
    /// assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
    /// # }).unwrap();
    /// ```
    pub fn open(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new().read(true).open(path)
    }

    /// Opens a file for writing, creating it or cutting it to length 0.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// let file = crashtest::fs::sync::File::create("/f").unwrap();
    /// assert_eq!(file.len().unwrap(), 0);
    /// # }).unwrap();
    /// ```
    pub fn create(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
    }

    /// Creates a new file for reading and writing; `AlreadyExists` if it exists.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// crashtest::fs::sync::File::create_new("/f").unwrap();
    /// assert!(crashtest::fs::sync::File::create_new("/f").is_err());
    /// # }).unwrap();
    /// ```
    pub fn create_new(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
    }

    /// Options to open a file with.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// let file = crashtest::fs::sync::File::options().append(true).create(true).open("/log");
    /// assert!(file.is_ok());
    /// # }).unwrap();
    /// ```
    pub fn options() -> OpenOptions {
        OpenOptions::new()
    }

    delegate! {
        to match &self.inner {
            SimOrReal::Sim(handle) => handle,
            SimOrReal::Real(file) => file,
        } {
            /// Reads up to `buf.len()` bytes at `offset`; returns how many (0 at the end).
            ///
            /// ```
            /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
            /// # crashtest::Sim::new(1).run(async {
            /// let file = crashtest::fs::sync::File::create_new("/f").unwrap();
            /// file.write_at(b"abc", 0).unwrap();
            /// let mut buf = [0; 8];
            /// assert_eq!(file.read_at(&mut buf, 1).unwrap(), 2);
            /// # }).unwrap();
            /// ```
            pub fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;

            /// Writes `buf` at `offset` (at the end for an append handle); returns how many bytes
            /// were written (all of them). Not durable until synced.
            ///
            /// ```
            /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
            /// # crashtest::Sim::new(1).run(async {
            /// let file = crashtest::fs::sync::File::create("/f").unwrap();
            /// assert_eq!(file.write_at(b"abc", 10).unwrap(), 3);
            /// assert_eq!(file.len().unwrap(), 13);
            /// # }).unwrap();
            /// ```
            pub fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize>;

            /// The file's length in bytes (what a read sees).
            ///
            /// ```
            /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
            /// # crashtest::Sim::new(1).run(async {
            /// let file = crashtest::fs::sync::File::create("/f").unwrap();
            /// assert_eq!(file.len().unwrap(), 0);
            /// # }).unwrap();
            /// ```
            #[allow(
                clippy::len_without_is_empty,
                reason = "a file's length can fail to be read"
            )]
            pub fn len(&self) -> io::Result<u64>;

            /// Cuts or extends the file to `len` bytes. Not durable until synced.
            ///
            /// ```
            /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
            /// # crashtest::Sim::new(1).run(async {
            /// let file = crashtest::fs::sync::File::create("/f").unwrap();
            /// file.set_len(8192).unwrap();
            /// assert_eq!(file.len().unwrap(), 8192);
            /// # }).unwrap();
            /// ```
            pub fn set_len(&self, len: u64) -> io::Result<()>;

            /// Makes the file's writes and truncates so far durable. If it fails, they are lost for
            /// good (though reads may go on returning them until the node crashes).
            ///
            /// ```
            /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
            /// # crashtest::Sim::new(1).run(async {
            /// let file = crashtest::fs::sync::File::create("/f").unwrap();
            /// file.write_all_at(b"x", 0).unwrap();
            /// file.sync_data().unwrap();
            /// # }).unwrap();
            /// ```
            pub fn sync_data(&self) -> io::Result<()>;

            /// Like [`File::sync_data`] (the simulation keeps no metadata apart from the data); on a
            /// directory opened with [`File::open`], makes its entries durable.
            ///
            /// ```
            /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
            /// # crashtest::Sim::new(1).run(async {
            /// crashtest::fs::sync::File::create("/f").unwrap();
            /// crashtest::fs::sync::File::open("/").unwrap().sync_all().unwrap();
            /// # }).unwrap();
            /// ```
            pub fn sync_all(&self) -> io::Result<()>;

            /// The file's metadata.
            ///
            /// ```
            /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
            /// # crashtest::Sim::new(1).run(async {
            /// let file = crashtest::fs::sync::File::create("/f").unwrap();
            /// assert!(file.metadata().unwrap().is_file());
            /// # }).unwrap();
            /// ```
            pub fn metadata(&self) -> io::Result<Metadata>;
        }
    }

    /// Sets the file's permissions, as `std::fs::File::set_permissions` (see
    /// [`crate::set_permissions`] for the simulated disk's).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// use std::os::unix::fs::PermissionsExt;
    /// # crashtest::Sim::new(1).run(async {
    /// let file = crashtest::fs::sync::File::create("/key").unwrap();
    /// file.set_permissions(std::fs::Permissions::from_mode(0o600)).unwrap();
    /// assert_eq!(file.metadata().unwrap().mode(), 0o600);
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    ///
    /// An I/O error once the node has crashed since the file was opened.
    pub fn set_permissions(&self, permissions: std::fs::Permissions) -> io::Result<()> {
        match &self.inner {
            SimOrReal::Sim(handle) => handle.set_permissions(&permissions),
            SimOrReal::Real(file) => file.lock().set_permissions(permissions),
        }
    }

    /// Sets the file's modification time, as `std::fs::File::set_modified` (see
    /// [`crate::File::set_modified`] for the simulated disk's).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// use std::time::{Duration, UNIX_EPOCH};
    /// # crashtest::Sim::new(1).run(async {
    /// let file = crashtest::fs::sync::File::create("/snapshot").unwrap();
    /// let then = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    /// file.set_modified(then).unwrap();
    /// assert_eq!(file.metadata().unwrap().modified().unwrap(), then);
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    ///
    /// An I/O error once the node has crashed since the file was opened.
    pub fn set_modified(&self, time: std::time::SystemTime) -> io::Result<()> {
        match &self.inner {
            SimOrReal::Sim(handle) => handle.set_modified(time),
            SimOrReal::Real(file) => file.lock().set_modified(time),
        }
    }

    /// A second handle on the open file, as `std::fs::File::try_clone`: the two share the
    /// cursor, and the file stays open until both are dropped.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// use std::io::{Read, Write};
    /// # crashtest::Sim::new(1).run(async {
    /// let mut writer = crashtest::fs::sync::File::options()
    ///     .read(true).write(true).create(true).open("/log").unwrap();
    /// let mut reader = writer.try_clone().unwrap();
    /// writer.write_all(b"abc").unwrap();
    /// let mut after = Vec::new();
    /// reader.read_to_end(&mut after).unwrap();
    /// assert!(after.is_empty(), "the shared cursor is past what was written");
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    ///
    /// An I/O error once the node has crashed since the file was opened.
    pub fn try_clone(&self) -> io::Result<File> {
        let inner = match &self.inner {
            SimOrReal::Sim(handle) => {
                SimOrReal::Sim(SimHandle(state::with_io(|s| s.duplicate(&handle.0))?))
            }
            SimOrReal::Real(file) => {
                SimOrReal::Real(RealFile(Mutex::new(file.lock().try_clone()?)))
            }
        };
        Ok(File {
            inner,
            cursor: Arc::clone(&self.cursor),
        })
    }

    /// Reads exactly `buf.len()` bytes at `offset`; `UnexpectedEof` if the file is shorter.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// let file = crashtest::fs::sync::File::create_new("/f").unwrap();
    /// let mut buf = [0; 4];
    /// let error = file.read_exact_at(&mut buf, 0).unwrap_err();
    /// assert_eq!(error.kind(), std::io::ErrorKind::UnexpectedEof);
    /// # }).unwrap();
    /// ```
    pub fn read_exact_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        while !buf.is_empty() {
            match self.read_at(buf, offset)? {
                0 => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "failed to fill whole buffer",
                    ));
                }
                n => {
                    assert!(n <= buf.len(), "a read returns at most its buffer's length");
                    buf = &mut buf[n..];
                    offset += n as u64;
                }
            }
        }
        Ok(())
    }

    /// Writes all of `buf` at `offset`.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// let file = crashtest::fs::sync::File::create("/f").unwrap();
    /// file.write_all_at(b"abc", 0).unwrap();
    /// # }).unwrap();
    /// ```
    pub fn write_all_at(&self, mut buf: &[u8], mut offset: u64) -> io::Result<()> {
        while !buf.is_empty() {
            match self.write_at(buf, offset)? {
                0 => return Err(io::Error::from(io::ErrorKind::WriteZero)),
                n => {
                    assert!(n <= buf.len(), "a write takes at most its buffer");
                    buf = &buf[n..];
                    offset += n as u64;
                }
            }
        }
        Ok(())
    }
}

impl Read for File {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let offset = self.cursor.load(Ordering::Relaxed);
        let n = self.read_at(buf, offset)?;
        assert!(n <= buf.len(), "a read returns at most its buffer's length");
        self.cursor.store(offset + n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

impl Write for File {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let cursor = self.cursor.load(Ordering::Relaxed);
        let (n, after) = match &self.inner {
            SimOrReal::Sim(handle) if handle.0.flags.append => {
                let end = handle.len()?;
                let n = handle.write_at(buf, end)?;
                // Only this node's tasks touch its simulated disk, and not during this call.
                assert_eq!(
                    handle.len()?,
                    end + n as u64,
                    "an append ends at the end of the file"
                );
                (n, end + n as u64)
            }
            SimOrReal::Sim(handle) => {
                let n = handle.write_at(buf, cursor)?;
                (n, cursor + n as u64)
            }
            SimOrReal::Real(file) => file.write_from(buf, cursor)?,
        };
        assert!(n <= buf.len(), "a write takes at most its buffer");
        self.cursor.store(after, Ordering::Relaxed);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Seek for File {
    fn seek(&mut self, position: SeekFrom) -> io::Result<u64> {
        let target = match position {
            SeekFrom::Start(offset) => Some(offset),
            SeekFrom::Current(delta) => self
                .cursor
                .load(Ordering::Relaxed)
                .checked_add_signed(delta),
            SeekFrom::End(delta) => self.len()?.checked_add_signed(delta),
        };
        let target = target.ok_or_else(errors::invalid_input)?;
        self.cursor.store(target, Ordering::Relaxed);
        Ok(target)
    }
}

open_options! {
    /// Options to open a synchronous [`File`] with, as `std::fs::OpenOptions`.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// let file = crashtest::fs::sync::OpenOptions::new()
    ///     .read(true)
    ///     .write(true)
    ///     .create(true)
    ///     .open("/db")
    ///     .unwrap();
    /// # let _ = file;
    /// # }).unwrap();
    /// ```
    pub struct OpenOptions, "crashtest_fs::sync::OpenOptions"
}

impl OpenOptions {
    /// Opens `path` with these options, as `open(2)`.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// let error = crashtest::fs::sync::OpenOptions::new().write(true).open("/nope").unwrap_err();
    /// assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
    /// # }).unwrap();
    /// ```
    pub fn open(&self, path: impl AsRef<Path>) -> io::Result<File> {
        let path = path.as_ref();
        let flags = self.flags;
        let Some(node) = state::current_node()? else {
            let file = flags.to_std().open(path)?;
            return Ok(File {
                inner: SimOrReal::Real(RealFile(Mutex::new(file))),
                cursor: Arc::default(),
            });
        };
        let names = Names::parse(path)?;
        if flags.mutates() {
            mutation()?;
        }
        let handle = state::with(|s| s.open(node, &names, flags))?;
        assert_eq!(handle.node, node, "a file is opened on its caller's disk");
        Ok(File {
            inner: SimOrReal::Sim(SimHandle(handle)),
            cursor: Arc::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_handle_is_send_and_sync_like_a_real_file() {
        fn assert_send_sync<T: Send + Sync + 'static>() {}
        assert_send_sync::<File>();
    }

    #[test]
    fn outside_a_simulation_it_is_a_real_file() {
        let dir = std::env::temp_dir().join(format!("crashtest-fs-sync-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        file.write_all_at(b"real", 2).unwrap();
        file.sync_data().unwrap();
        let mut buf = [0; 4];
        file.read_exact_at(&mut buf, 2).unwrap();
        assert_eq!(&buf, b"real");
        assert_eq!(file.len().unwrap(), 6);
        drop(file);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn outside_a_simulation_an_append_leaves_the_cursor_at_the_end_as_std_does() {
        let dir =
            std::env::temp_dir().join(format!("crashtest-fs-sync-append-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("log");
        std::fs::write(&path, b"0123456789").unwrap();
        let mut ours = File::options().append(true).read(true).open(&path).unwrap();
        let mut std_file = std::fs::OpenOptions::new()
            .append(true)
            .read(true)
            .open(&path)
            .unwrap();
        ours.write_all(b"ab").unwrap();
        std_file.write_all(b"cd").unwrap();
        assert_eq!(ours.stream_position().unwrap(), 12);
        assert_eq!(std_file.stream_position().unwrap(), 14);
        // The next append lands at the end either way; the cursor follows it, as std's does.
        ours.write_all(b"ef").unwrap();
        assert_eq!(ours.stream_position().unwrap(), 16);
        assert_eq!(std::fs::read(&path).unwrap(), b"0123456789abcdef");
        drop((ours, std_file));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
