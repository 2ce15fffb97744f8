//! The async `File` and its `OpenOptions`, shaped like `tokio::fs`.
//!
//! Inside a simulation a `File` is a handle on the calling node's disk with its own cursor.
//! A write goes to the page cache when it is first polled and then waits out the disk's
//! latency; a read waits out the latency and then reads. `sync_all`/`sync_data` make the
//! file's writes durable when they complete (a crash while one waits leaves them unsynced).
//! Outside a simulation a `File` is a `tokio::fs::File`.
//!
//! Each mutating call (a write, `set_len`, a sync, an open that creates or truncates) is a
//! crash point for [`crate::exhaustive`]: if the exploration crashes the node there, the call
//! never completes and the task goes down with its node.

use std::fmt;
use std::future::Future;
use std::io::{self, SeekFrom};
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use crashtest_core::time::Sleep;
use tokio::io::{AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};

use crate::disk::OpenFlags;
use crate::errors;
use crate::metadata::Metadata;
use crate::path::Names;
use crate::state::{self, Handle};

/// An open file (or directory) of the calling node's disk; `tokio::fs::File` outside a
/// simulation. It implements tokio's `AsyncRead`, `AsyncWrite` and `AsyncSeek`.
///
/// ```
/// use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
///
/// crashtest_core::Sim::new(1).run(async {
///     let mut file = crashtest_fs::File::options()
///         .read(true)
///         .write(true)
///         .create(true)
///         .open("/data")
///         .await
///         .unwrap();
///     file.write_all(b"hello, disk").await.unwrap();
///     file.sync_all().await.unwrap(); // the bytes are durable; the name needs sync_dir("/")
///     file.seek(std::io::SeekFrom::Start(7)).await.unwrap();
///     let mut tail = String::new();
///     file.read_to_string(&mut tail).await.unwrap();
///     assert_eq!(tail, "disk");
/// }).unwrap();
/// ```
pub struct File {
    inner: Inner,
}

enum Inner {
    Sim(SimFile),
    Real(tokio::fs::File),
}

struct SimFile {
    handle: Handle,
    pos: u64,
    busy: Option<Busy>,
    seek: Option<io::Result<u64>>,
}

/// An operation of a `SimFile` waiting out its latency.
enum Busy {
    /// A read: it happens when the wait ends.
    Read(Pin<Box<Sleep>>),
    /// A write, already in the page cache, with its result.
    Write(Pin<Box<Sleep>>, io::Result<usize>),
    /// The node was crashed before this write: nothing will complete.
    Crashed,
}

impl fmt::Debug for File {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            Inner::Sim(file) => f
                .debug_struct("File")
                .field("node", &file.handle.node)
                .field("inode", &file.handle.ino)
                .field("pos", &file.pos)
                .finish(),
            Inner::Real(file) => file.fmt(f),
        }
    }
}

impl Drop for SimFile {
    fn drop(&mut self) {
        if let Some(state) = state::state() {
            state.release(&self.handle);
        }
    }
}

impl SimFile {
    fn read_now(&mut self, buf: &mut ReadBuf<'_>) -> io::Result<()> {
        let n = state::with(|s| s.read(&self.handle, self.pos, buf.initialize_unfilled()))?;
        buf.advance(n);
        self.pos += n as u64;
        Ok(())
    }

    fn poll_read(&mut self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if !matches!(self.busy, Some(Busy::Read(_))) {
            self.busy = None;
            let bytes = buf.remaining() as u64;
            match state::with(|s| s.delay(self.handle.node, bytes, false)) {
                None => return Poll::Ready(self.read_now(buf)),
                Some(delay) => {
                    let sleep = Box::pin(crashtest_core::time::sleep(delay));
                    self.busy = Some(Busy::Read(sleep));
                }
            }
        }
        let Some(Busy::Read(sleep)) = &mut self.busy else {
            unreachable!("a read is waiting")
        };
        ready!(sleep.as_mut().poll(cx));
        self.busy = None;
        Poll::Ready(self.read_now(buf))
    }

    fn poll_write(&mut self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match &self.busy {
            Some(Busy::Write(..)) => return self.poll_busy_write(cx),
            Some(Busy::Crashed) => return Poll::Pending,
            Some(Busy::Read(_)) | None => self.busy = None,
        }
        if state::crash_before_mutation() {
            self.busy = Some(Busy::Crashed);
            return Poll::Pending;
        }
        let written = state::with(|s| s.write(&self.handle, self.pos, buf));
        let result = written.map(|end| {
            self.pos = end;
            buf.len()
        });
        let bytes = buf.len() as u64;
        match state::with(|s| s.delay(self.handle.node, bytes, false)) {
            None => Poll::Ready(result),
            Some(delay) => {
                let sleep = Box::pin(crashtest_core::time::sleep(delay));
                self.busy = Some(Busy::Write(sleep, result));
                self.poll_busy_write(cx)
            }
        }
    }

    fn poll_busy_write(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let Some(Busy::Write(sleep, _)) = &mut self.busy else {
            unreachable!("a write is waiting")
        };
        ready!(sleep.as_mut().poll(cx));
        let Some(Busy::Write(_, result)) = self.busy.take() else {
            unreachable!("a write is waiting")
        };
        Poll::Ready(result)
    }

    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &self.busy {
            Some(Busy::Write(..)) => self.poll_busy_write(cx).map_ok(|_| ()),
            Some(Busy::Crashed) => Poll::Pending,
            Some(Busy::Read(_)) | None => Poll::Ready(Ok(())),
        }
    }

    fn start_seek(&mut self, position: SeekFrom) -> io::Result<()> {
        let target = match position {
            SeekFrom::Start(offset) => Some(offset),
            SeekFrom::Current(delta) => self.pos.checked_add_signed(delta),
            SeekFrom::End(delta) => {
                let len = state::with(|s| s.len(&self.handle))?;
                len.checked_add_signed(delta)
            }
        };
        self.seek = Some(target.ok_or_else(errors::invalid_input));
        Ok(())
    }

    fn poll_complete(&mut self) -> io::Result<u64> {
        match self.seek.take() {
            Some(Ok(target)) => {
                self.pos = target;
                Ok(target)
            }
            Some(Err(error)) => Err(error),
            None => Ok(self.pos),
        }
    }

    async fn sync(&self) -> io::Result<()> {
        state::mutation().await;
        state::latency(self.handle.node, 0, true).await;
        state::with(|s| s.sync(&self.handle))
    }
}

impl File {
    fn sim(handle: Handle) -> File {
        File {
            inner: Inner::Sim(SimFile {
                handle,
                pos: 0,
                busy: None,
                seek: None,
            }),
        }
    }

    /// Opens an existing file (or directory) for reading.
    ///
    /// # Errors
    ///
    /// `NotFound` if it does not exist; as `open(2)` otherwise.
    ///
    /// ```
    /// # crashtest_core::Sim::new(1).run(async {
    /// let error = crashtest_fs::File::open("/missing").await.unwrap_err();
    /// assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
    /// # }).unwrap();
    /// ```
    pub async fn open(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new().read(true).open(path).await
    }

    /// Opens a file for writing, creating it or cutting it to length 0.
    ///
    /// ```
    /// # crashtest_core::Sim::new(1).run(async {
    /// let file = crashtest_fs::File::create("/new").await.unwrap();
    /// assert_eq!(file.metadata().await.unwrap().len(), 0);
    /// # }).unwrap();
    /// ```
    pub async fn create(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .await
    }

    /// Creates a new file for reading and writing; `AlreadyExists` if it exists.
    ///
    /// ```
    /// # crashtest_core::Sim::new(1).run(async {
    /// crashtest_fs::File::create_new("/once").await.unwrap();
    /// let error = crashtest_fs::File::create_new("/once").await.unwrap_err();
    /// assert_eq!(error.kind(), std::io::ErrorKind::AlreadyExists);
    /// # }).unwrap();
    /// ```
    pub async fn create_new(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .await
    }

    /// Options to open a file with.
    ///
    /// ```
    /// # crashtest_core::Sim::new(1).run(async {
    /// let file = crashtest_fs::File::options().append(true).create(true).open("/log").await;
    /// assert!(file.is_ok());
    /// # }).unwrap();
    /// ```
    pub fn options() -> OpenOptions {
        OpenOptions::new()
    }

    /// Makes the file's writes and truncates so far durable (for a directory opened with
    /// [`File::open`]: its entries). If it fails, the writes it should have saved are lost
    /// for good, though reads may go on returning them until the node crashes.
    ///
    /// ```
    /// # crashtest_core::Sim::new(1).run(async {
    /// use tokio::io::AsyncWriteExt;
    /// let mut file = crashtest_fs::File::create("/f").await.unwrap();
    /// file.write_all(b"durable").await.unwrap();
    /// file.sync_all().await.unwrap();
    /// # }).unwrap();
    /// ```
    pub async fn sync_all(&self) -> io::Result<()> {
        match &self.inner {
            Inner::Sim(file) => file.sync().await,
            Inner::Real(file) => file.sync_all().await,
        }
    }

    /// Like [`File::sync_all`]; in the simulation the two are the same, since the file's
    /// length is part of the data a read needs.
    ///
    /// ```
    /// # crashtest_core::Sim::new(1).run(async {
    /// let file = crashtest_fs::File::create("/f").await.unwrap();
    /// file.sync_data().await.unwrap();
    /// # }).unwrap();
    /// ```
    pub async fn sync_data(&self) -> io::Result<()> {
        match &self.inner {
            Inner::Sim(file) => file.sync().await,
            Inner::Real(file) => file.sync_data().await,
        }
    }

    /// Cuts or extends the file to `size` bytes (extension reads as zeros); the cursor does
    /// not move. Pending until synced, like a write.
    ///
    /// ```
    /// # crashtest_core::Sim::new(1).run(async {
    /// let file = crashtest_fs::File::create("/f").await.unwrap();
    /// file.set_len(100).await.unwrap();
    /// assert_eq!(file.metadata().await.unwrap().len(), 100);
    /// # }).unwrap();
    /// ```
    pub async fn set_len(&self, size: u64) -> io::Result<()> {
        match &self.inner {
            Inner::Sim(file) => {
                state::mutation().await;
                state::latency(file.handle.node, 0, false).await;
                state::with(|s| s.set_len(&file.handle, size))
            }
            Inner::Real(file) => file.set_len(size).await,
        }
    }

    /// The file's metadata.
    ///
    /// ```
    /// # crashtest_core::Sim::new(1).run(async {
    /// let file = crashtest_fs::File::create("/f").await.unwrap();
    /// assert!(file.metadata().await.unwrap().is_file());
    /// # }).unwrap();
    /// ```
    pub async fn metadata(&self) -> io::Result<Metadata> {
        match &self.inner {
            Inner::Sim(file) => state::with(|s| s.handle_metadata(&file.handle)),
            Inner::Real(file) => Ok(Metadata::from_std(&file.metadata().await?)),
        }
    }
}

impl AsyncRead for File {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            Inner::Sim(file) => file.poll_read(cx, buf),
            Inner::Real(file) => Pin::new(file).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for File {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().inner {
            Inner::Sim(file) => file.poll_write(cx, buf),
            Inner::Real(file) => Pin::new(file).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            Inner::Sim(file) => file.poll_flush(cx),
            Inner::Real(file) => Pin::new(file).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            Inner::Sim(file) => file.poll_flush(cx),
            Inner::Real(file) => Pin::new(file).poll_shutdown(cx),
        }
    }
}

impl AsyncSeek for File {
    fn start_seek(self: Pin<&mut Self>, position: SeekFrom) -> io::Result<()> {
        match &mut self.get_mut().inner {
            Inner::Sim(file) => file.start_seek(position),
            Inner::Real(file) => Pin::new(file).start_seek(position),
        }
    }

    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        match &mut self.get_mut().inner {
            Inner::Sim(file) => Poll::Ready(file.poll_complete()),
            Inner::Real(file) => Pin::new(file).poll_complete(cx),
        }
    }
}

/// Options to open a file with, as `tokio::fs::OpenOptions`.
///
/// ```
/// # crashtest_core::Sim::new(1).run(async {
/// let file = crashtest_fs::OpenOptions::new()
///     .read(true)
///     .write(true)
///     .create(true)
///     .open("/db")
///     .await
///     .unwrap();
/// # let _ = file;
/// # }).unwrap();
/// ```
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    flags: OpenFlags,
}

impl OpenOptions {
    /// Options with every flag off.
    ///
    /// ```
    /// let _ = crashtest_fs::OpenOptions::new();
    /// ```
    pub fn new() -> OpenOptions {
        OpenOptions::default()
    }

    /// Open for reading.
    ///
    /// ```
    /// let _ = crashtest_fs::OpenOptions::new().read(true);
    /// ```
    pub fn read(&mut self, read: bool) -> &mut OpenOptions {
        self.flags.read = read;
        self
    }

    /// Open for writing.
    ///
    /// ```
    /// let _ = crashtest_fs::OpenOptions::new().write(true);
    /// ```
    pub fn write(&mut self, write: bool) -> &mut OpenOptions {
        self.flags.write = write;
        self
    }

    /// Open for appending: every write goes to the end of the file.
    ///
    /// ```
    /// let _ = crashtest_fs::OpenOptions::new().append(true);
    /// ```
    pub fn append(&mut self, append: bool) -> &mut OpenOptions {
        self.flags.append = append;
        self
    }

    /// Cut an existing file to length 0 (needs `write`).
    ///
    /// ```
    /// let _ = crashtest_fs::OpenOptions::new().write(true).truncate(true);
    /// ```
    pub fn truncate(&mut self, truncate: bool) -> &mut OpenOptions {
        self.flags.truncate = truncate;
        self
    }

    /// Create the file if it does not exist (needs `write` or `append`).
    ///
    /// ```
    /// let _ = crashtest_fs::OpenOptions::new().write(true).create(true);
    /// ```
    pub fn create(&mut self, create: bool) -> &mut OpenOptions {
        self.flags.create = create;
        self
    }

    /// Create the file, failing with `AlreadyExists` if it exists.
    ///
    /// ```
    /// let _ = crashtest_fs::OpenOptions::new().write(true).create_new(true);
    /// ```
    pub fn create_new(&mut self, create_new: bool) -> &mut OpenOptions {
        self.flags.create_new = create_new;
        self
    }

    /// Opens `path` with these options.
    ///
    /// # Errors
    ///
    /// As `open(2)`: `NotFound`, `AlreadyExists`, `IsADirectory`, `NotADirectory`, or
    /// `InvalidInput` for a combination of flags that makes no sense.
    ///
    /// ```
    /// # crashtest_core::Sim::new(1).run(async {
    /// let error = crashtest_fs::OpenOptions::new().read(true).create(true).open("/x").await;
    /// assert_eq!(error.unwrap_err().kind(), std::io::ErrorKind::InvalidInput);
    /// # }).unwrap();
    /// ```
    pub async fn open(&self, path: impl AsRef<Path>) -> io::Result<File> {
        let path = path.as_ref();
        let flags = self.flags;
        let Some(node) = state::current_node()? else {
            let file = tokio::fs::OpenOptions::new()
                .read(flags.read)
                .write(flags.write)
                .append(flags.append)
                .truncate(flags.truncate)
                .create(flags.create)
                .create_new(flags.create_new)
                .open(path)
                .await?;
            return Ok(File {
                inner: Inner::Real(file),
            });
        };
        let names = Names::parse(path)?;
        if flags.create || flags.create_new || flags.truncate {
            state::mutation().await;
        }
        state::latency(node, 0, false).await;
        let handle = state::with(|s| s.open(node, &names, flags))?;
        Ok(File::sim(handle))
    }
}
