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
use crashtest_io::{SimOrReal, forward_async_io};
use delegate::delegate;
use tokio::io::{AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};

use crate::errors;
use crate::metadata::Metadata;
use crate::open_options::open_options;
use crate::path::Names;
use crate::state::{self, Handle};

/// An open file (or directory) of the calling node's disk; `tokio::fs::File` outside a
/// simulation. It implements tokio's `AsyncRead`, `AsyncWrite` and `AsyncSeek`.
///
/// # Cancel safety
///
/// Inside a simulation: a read takes its bytes when its latency has passed, in the poll
/// that returns them, so a dropped read loses nothing. A write is not cancel safe: it puts
/// its bytes in the page cache in its first poll, then waits out the latency. Dropped
/// during that wait, its bytes are written, and the file's next write or flush finishes the
/// wait and returns the dropped write's result, not writing its own buffer in that call (so
/// after a dropped write, `flush` before writing again). A seek completes at once. Outside a
/// simulation these are tokio's `File`'s rules: a write is buffered and returns at once, and
/// the next operation waits for it.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
///
/// crashtest::Sim::new(1).run(async {
///     let mut file = crashtest::fs::File::options()
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
#[derive(Debug)]
pub struct File {
    inner: SimOrReal<SimFile, tokio::fs::File>,
}

forward_async_io!(File => inner: AsyncRead, AsyncWrite, AsyncSeek);

/// The simulated side of a `File`: a handle on the node's disk, its cursor, and the operation
/// waiting out the disk's latency, if any.
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

impl fmt::Debug for SimFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimFile")
            .field("node", &self.handle.node)
            .field("inode", &self.handle.ino)
            .field("pos", &self.pos)
            .finish_non_exhaustive()
    }
}

impl Drop for SimFile {
    fn drop(&mut self) {
        if let Some(state) = state::state() {
            state.release(&self.handle);
        }
    }
}

/// A file waiting on a crash point that killed its node: the node must be dead (its task
/// is dropped at the end of this poll, and nothing of it runs again).
fn assert_node_dead(node: crashtest_core::node::NodeId) {
    assert_eq!(
        crashtest_core::plumbing::node_status(node),
        Some(crashtest_core::node::NodeStatus::Dead),
        "a write stopped at a crash point belongs to a dead node"
    );
}

impl SimFile {
    fn read_now(&mut self, buf: &mut ReadBuf<'_>) -> io::Result<()> {
        let room = buf.remaining();
        let n = state::with(|s| s.read(&self.handle, self.pos, buf.initialize_unfilled()))?;
        assert!(n <= room, "a read fills at most the room it was given");
        buf.advance(n);
        self.pos += n as u64;
        Ok(())
    }

    fn poll_busy_write(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let Some(Busy::Write(sleep, _)) = &mut self.busy else {
            unreachable!("a write is waiting")
        };
        ready!(sleep.as_mut().poll(cx));
        let Some(Busy::Write(_, result)) = self.busy.take() else {
            unreachable!("a write is waiting")
        };
        assert!(self.busy.is_none(), "a finished write leaves the file idle");
        Poll::Ready(result)
    }

    async fn sync_all(&self) -> io::Result<()> {
        state::mutation().await;
        state::latency(self.handle.node, 0, true).await;
        state::with(|s| s.sync(&self.handle))
    }

    /// The same as `sync_all`: the file's length is part of the data a read needs.
    async fn sync_data(&self) -> io::Result<()> {
        self.sync_all().await
    }

    async fn set_len(&self, size: u64) -> io::Result<()> {
        state::mutation().await;
        state::latency(self.handle.node, 0, false).await;
        state::with(|s| s.set_len(&self.handle, size))
    }

    async fn metadata(&self) -> io::Result<Metadata> {
        state::with(|s| s.handle_metadata(&self.handle))
    }
}

/// A read waits out the disk's latency, then reads what the page cache holds then.
impl AsyncRead for SimFile {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !matches!(this.busy, Some(Busy::Read(_))) {
            this.busy = None;
            let bytes = buf.remaining() as u64;
            match state::with(|s| s.delay(this.handle.node, bytes, false)) {
                None => return Poll::Ready(this.read_now(buf)),
                Some(delay) => {
                    let sleep = Box::pin(crashtest_core::time::sleep(delay));
                    this.busy = Some(Busy::Read(sleep));
                }
            }
        }
        let Some(Busy::Read(sleep)) = &mut this.busy else {
            unreachable!("a read is waiting")
        };
        ready!(sleep.as_mut().poll(cx));
        this.busy = None;
        let read = this.read_now(buf);
        assert!(this.busy.is_none(), "a finished read leaves the file idle");
        Poll::Ready(read)
    }
}

/// A write reaches the page cache on its first poll, then waits out the latency; flushing
/// waits for that write, and shutting down is a flush (a file has no write direction to
/// close).
impl AsyncWrite for SimFile {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match &this.busy {
            Some(Busy::Write(..)) => return this.poll_busy_write(cx),
            Some(Busy::Crashed) => {
                assert_node_dead(this.handle.node);
                return Poll::Pending;
            }
            Some(Busy::Read(_)) | None => this.busy = None,
        }
        if state::crash_before_mutation() {
            this.busy = Some(Busy::Crashed);
            return Poll::Pending;
        }
        let start = this.pos;
        let written = state::with(|s| s.write(&this.handle, this.pos, buf));
        let result = written.map(|end| {
            assert!(
                this.handle.flags.append || end == start + buf.len() as u64,
                "a write moves the cursor past the bytes written"
            );
            this.pos = end;
            buf.len()
        });
        let bytes = buf.len() as u64;
        match state::with(|s| s.delay(this.handle.node, bytes, false)) {
            None => Poll::Ready(result),
            Some(delay) => {
                let sleep = Box::pin(crashtest_core::time::sleep(delay));
                this.busy = Some(Busy::Write(sleep, result));
                this.poll_busy_write(cx)
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match &this.busy {
            Some(Busy::Write(..)) => this.poll_busy_write(cx).map_ok(|_| ()),
            Some(Busy::Crashed) => {
                assert_node_dead(this.handle.node);
                Poll::Pending
            }
            Some(Busy::Read(_)) | None => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_flush(cx)
    }
}

/// A seek moves the cursor only: it completes at once.
impl AsyncSeek for SimFile {
    fn start_seek(self: Pin<&mut Self>, position: SeekFrom) -> io::Result<()> {
        let this = self.get_mut();
        let target = match position {
            SeekFrom::Start(offset) => Some(offset),
            SeekFrom::Current(delta) => this.pos.checked_add_signed(delta),
            SeekFrom::End(delta) => {
                let len = state::with(|s| s.len(&this.handle))?;
                len.checked_add_signed(delta)
            }
        };
        this.seek = Some(target.ok_or_else(errors::invalid_input));
        assert!(
            this.seek.is_some(),
            "a started seek waits for its completion"
        );
        Ok(())
    }

    fn poll_complete(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<u64>> {
        let this = self.get_mut();
        Poll::Ready(match this.seek.take() {
            Some(Ok(target)) => {
                this.pos = target;
                assert!(this.seek.is_none(), "a seek completes once");
                Ok(target)
            }
            Some(Err(error)) => Err(error),
            None => Ok(this.pos),
        })
    }
}

impl File {
    fn sim(handle: Handle) -> File {
        File {
            inner: SimOrReal::Sim(SimFile {
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
    /// # Cancel safety
    ///
    /// Cancel safe: opening for reading changes nothing, and a dropped future holds no handle.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// let error = crashtest::fs::File::open("/missing").await.unwrap_err();
    /// assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
    /// # }).unwrap();
    /// ```
    pub async fn open(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new().read(true).open(path).await
    }

    /// Opens a file for writing, creating it or cutting it to length 0.
    ///
    /// # Cancel safety
    ///
    /// Inside a simulation the file is opened (and created or cut) only when the future
    /// completes, after the disk's latency: dropped before that, nothing was created and no
    /// handle is held. Outside a simulation it is tokio's, which opens on its blocking pool:
    /// the file may still be created or cut, and the handle is closed.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// let file = crashtest::fs::File::create("/new").await.unwrap();
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
    /// # Cancel safety
    ///
    /// Inside a simulation the file is opened (and created or cut) only when the future
    /// completes, after the disk's latency: dropped before that, nothing was created and no
    /// handle is held. Outside a simulation it is tokio's, which opens on its blocking pool:
    /// the file may still be created or cut, and the handle is closed.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// crashtest::fs::File::create_new("/once").await.unwrap();
    /// let error = crashtest::fs::File::create_new("/once").await.unwrap_err();
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
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// let file = crashtest::fs::File::options().append(true).create(true).open("/log").await;
    /// assert!(file.is_ok());
    /// # }).unwrap();
    /// ```
    pub fn options() -> OpenOptions {
        OpenOptions::new()
    }

    delegate! {
        to match &self.inner {
            SimOrReal::Sim(file) => file,
            SimOrReal::Real(file) => file,
        } {
            /// Makes the file's writes and truncates so far durable (for a directory opened with
            /// [`File::open`]: its entries). If it fails, the writes it should have saved are lost
            /// for good, though reads may go on returning them until the node crashes.
            ///
            /// # Cancel safety
            ///
            /// Not cancel safe in the sense that matters: dropped before it completes, the file
            /// was not synced. Inside a simulation its writes stay pending (a crash may still
            /// lose them) until a sync completes; outside one the fsync may or may not have
            /// run.
            ///
            /// ```
            /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
            /// # crashtest::Sim::new(1).run(async {
            /// use tokio::io::AsyncWriteExt;
            /// let mut file = crashtest::fs::File::create("/f").await.unwrap();
            /// file.write_all(b"durable").await.unwrap();
            /// file.sync_all().await.unwrap();
            /// # }).unwrap();
            /// ```
            pub async fn sync_all(&self) -> io::Result<()>;

            /// Like [`File::sync_all`]; in the simulation the two are the same, since the file's
            /// length is part of the data a read needs.
            ///
            /// # Cancel safety
            ///
            /// As sync_all: a dropped sync has made nothing durable in a simulation, and may or
            /// may not have outside one.
            ///
            /// ```
            /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
            /// # crashtest::Sim::new(1).run(async {
            /// let file = crashtest::fs::File::create("/f").await.unwrap();
            /// file.sync_data().await.unwrap();
            /// # }).unwrap();
            /// ```
            pub async fn sync_data(&self) -> io::Result<()>;

            /// Cuts or extends the file to `size` bytes (extension reads as zeros); the cursor does
            /// not move. Pending until synced, like a write.
            ///
            /// # Cancel safety
            ///
            /// Inside a simulation the length changes only when the future completes, after the
            /// disk's latency; dropped before that, the file is as it was. Outside a simulation
            /// tokio runs it on its blocking pool, where it may still happen.
            ///
            /// ```
            /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
            /// # crashtest::Sim::new(1).run(async {
            /// let file = crashtest::fs::File::create("/f").await.unwrap();
            /// file.set_len(100).await.unwrap();
            /// assert_eq!(file.metadata().await.unwrap().len(), 100);
            /// # }).unwrap();
            /// ```
            pub async fn set_len(&self, size: u64) -> io::Result<()>;
        }
    }

    /// The file's metadata.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it changes nothing.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// let file = crashtest::fs::File::create("/f").await.unwrap();
    /// assert!(file.metadata().await.unwrap().is_file());
    /// # }).unwrap();
    /// ```
    pub async fn metadata(&self) -> io::Result<Metadata> {
        match &self.inner {
            SimOrReal::Sim(file) => file.metadata().await,
            SimOrReal::Real(file) => Ok(Metadata::from_std(&file.metadata().await?)),
        }
    }
}

open_options! {
    /// Options to open a file with, as `tokio::fs::OpenOptions`.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// let file = crashtest::fs::OpenOptions::new()
    ///     .read(true)
    ///     .write(true)
    ///     .create(true)
    ///     .open("/db")
    ///     .await
    ///     .unwrap();
    /// # let _ = file;
    /// # }).unwrap();
    /// ```
    pub struct OpenOptions, "crashtest_fs::OpenOptions"
}

impl OpenOptions {
    /// Opens `path` with these options.
    ///
    /// # Errors
    ///
    /// As `open(2)`: `NotFound`, `AlreadyExists`, `IsADirectory`, `NotADirectory`, or
    /// `InvalidInput` for a combination of flags that makes no sense.
    ///
    /// # Cancel safety
    ///
    /// Inside a simulation the file is opened (and created or cut) only when the future
    /// completes, after the disk's latency: dropped before that, nothing was created and no
    /// handle is held. Outside a simulation it is tokio's, which opens on its blocking pool:
    /// the file may still be created or cut, and the handle is closed.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// let error = crashtest::fs::OpenOptions::new().read(true).create(true).open("/x").await;
    /// assert_eq!(error.unwrap_err().kind(), std::io::ErrorKind::InvalidInput);
    /// # }).unwrap();
    /// ```
    pub async fn open(&self, path: impl AsRef<Path>) -> io::Result<File> {
        let path = path.as_ref();
        let flags = self.flags;
        let Some(node) = state::current_node()? else {
            let file = tokio::fs::OpenOptions::from(flags.to_std())
                .open(path)
                .await?;
            return Ok(File {
                inner: SimOrReal::Real(file),
            });
        };
        let names = Names::parse(path)?;
        if flags.mutates() {
            state::mutation().await;
        }
        state::latency(node, 0, false).await;
        let handle = state::with(|s| s.open(node, &names, flags))?;
        Ok(File::sim(handle))
    }
}
