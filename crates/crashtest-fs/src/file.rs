//! The async `File` and its `OpenOptions`, shaped like `tokio::fs`.
//!
//! Inside a simulation a `File` is a handle on the calling node's disk with its own cursor
//! (shared with the handles `try_clone` makes from it, as the OS shares it).
//! Like tokio's `File` it is write-behind: a write puts its bytes in the page cache and
//! returns at once, and the file's next operation (write, flush, read, seek, sync, `set_len`)
//! first waits out that write's latency; a write's failure is returned by the next write or
//! flush. So a write's result is never given for another buffer. A read waits out the latency
//! and then reads. `sync_all`/`sync_data` make the file's writes durable when they complete
//! (a crash while one waits leaves them unsynced). Outside a simulation a `File` is a
//! `tokio::fs::File`.
//!
//! Each mutating call (a write, `set_len`, a sync, an open that creates or truncates) is a
//! crash point for [`crate::exhaustive`]: if the exploration crashes the node there, the call
//! never completes and the task goes down with its node.

use std::fmt;
use std::future::Future;
use std::io::{self, SeekFrom};
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
/// Inside and outside a simulation alike (tokio's rules): a write copies its buffer and
/// returns at once, so a write future is never dropped with its buffer half-taken; a poll
/// that has to wait first waits for the previous write, and dropped then it has written
/// nothing of its own buffer. The next write or flush returns a failed write's error, so
/// `flush` before relying on the writes (a sync does not report it). A read takes its bytes
/// in the poll that returns them, so a dropped read loses nothing. A seek completes once the
/// write in flight has.
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
/// in flight, if any.
///
/// Invariants: a write in flight and a kept write error never coexist (a write starts only
/// once the error before it has been returned); a started seek never waits behind a write,
/// and moves the cursor when started (its result waits for `poll_complete`, or is dropped by
/// the next read or write).
struct SimFile {
    handle: Handle,
    pos: Cursor,
    busy: Option<Busy>,
    /// The failure of a write that a read or a seek waited for: the next write or flush
    /// returns it. Only its kind is kept, as tokio does.
    write_error: Option<io::ErrorKind>,
    seek: Option<io::Result<u64>>,
}

/// A file's cursor: its own, or shared with the handles [`File::try_clone`] made from it, as
/// `dup(2)`ed descriptors share their open file's offset. Shared across threads only in type:
/// a simulation runs on one thread, so relaxed loads and stores are enough.
#[derive(Clone, Debug, Default)]
struct Cursor(Arc<AtomicU64>);

impl Cursor {
    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    fn set(&self, position: u64) {
        self.0.store(position, Ordering::Relaxed);
    }
}

/// An operation of a `SimFile` in flight. A simulated `Sleep` is `Unpin` (it holds a timer's
/// key, not the timer), so it waits here in place: boxing it cost an allocation per read and
/// write.
enum Busy {
    /// A read waiting out its latency: it reads when the wait ends, so until then nothing
    /// has happened and dropping it loses nothing.
    Read(Sleep),
    /// A write, already in the page cache (or failed), waiting out its latency (if the disk
    /// has any); its result is for the file's next operation, as with tokio's write-behind.
    /// The flag is set once an operation through `&self` (a sync, `set_len`) has waited for
    /// it: tokio completes the write there and keeps only its failure's kind, so the next
    /// write or flush returns that kind, without the OS error number.
    Write(Option<Sleep>, io::Result<()>, AtomicBool),
    /// The node was crashed before this write: nothing will complete.
    Crashed,
}

impl fmt::Debug for SimFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimFile")
            .field("node", &self.handle.node)
            .field("inode", &self.handle.ino)
            .field("pos", &self.pos.get())
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
        crashtest_core::plumbing::life::node_status(node),
        Some(crashtest_core::node::NodeStatus::Dead),
        "a write stopped at a crash point belongs to a dead node"
    );
}

impl SimFile {
    /// Asserts the invariants of the struct's docs, which every operation finds holding.
    fn assert_consistent(&self) {
        let writing = matches!(self.busy, Some(Busy::Write(..)));
        assert!(
            !(writing && self.write_error.is_some()),
            "a write is in flight only once the error before it was returned"
        );
        assert!(
            !(writing && self.seek.is_some()),
            "a seek is started only once the write before it has finished"
        );
        assert!(
            !(matches!(self.busy, Some(Busy::Read(_))) && self.seek.is_some()),
            "a read waits only once the seek before it has taken effect"
        );
        if matches!(self.busy, Some(Busy::Crashed)) {
            assert!(
                self.write_error.is_none() && self.seek.is_none(),
                "a file stopped at a crash point holds no result for a later operation"
            );
            // A file kept from another run names another run's node (the operation refuses
            // it); only one of this run is its node's to answer for.
            if state::is_of_this_run(&self.handle) {
                assert_node_dead(self.handle.node);
            }
        }
    }

    /// A seek started and not completed has moved the cursor already (`start_seek`), as
    /// tokio's background seek has by the next read or write; its result is not reported
    /// there, so the next read or write drops it.
    fn settle_seek(&mut self) {
        assert!(
            !matches!(self.busy, Some(Busy::Write(..))),
            "a started seek never waits behind a write"
        );
        self.seek = None;
    }

    fn read_now(&mut self, buf: &mut ReadBuf<'_>) -> io::Result<()> {
        assert!(
            !matches!(self.busy, Some(Busy::Write(..) | Busy::Crashed)),
            "a read happens only once the write before it has finished"
        );
        let (room, filled, start) = (buf.remaining(), buf.filled().len(), self.pos.get());
        let n = state::with(|s| s.read(&self.handle, start, buf.initialize_unfilled()))?;
        assert!(n <= room, "a read fills at most the room it was given");
        buf.advance(n);
        self.pos.set(start + n as u64);
        assert_eq!(
            buf.filled().len(),
            filled + n,
            "a read hands over exactly the bytes it read"
        );
        Ok(())
    }

    /// Waits for the write in flight and takes its result; `None` if no write is in flight
    /// (a read waiting out its latency stays where it is).
    fn poll_write_done(&mut self, cx: &mut Context<'_>) -> Poll<Option<io::Result<()>>> {
        match &mut self.busy {
            Some(Busy::Write(sleep, _, _)) => {
                assert!(
                    self.write_error.is_none(),
                    "a write is in flight only once the error before it was returned"
                );
                if let Some(sleep) = sleep {
                    ready!(Pin::new(sleep).poll(cx));
                }
            }
            Some(Busy::Crashed) => {
                if state::from_another_run(&self.handle) {
                    return Poll::Ready(Some(Err(errors::io_error())));
                }
                assert_node_dead(self.handle.node);
                return Poll::Pending;
            }
            Some(Busy::Read(_)) | None => return Poll::Ready(None),
        }
        let Some(Busy::Write(_, result, kept)) = self.busy.take() else {
            unreachable!("a write is in flight")
        };
        assert!(self.busy.is_none(), "a finished write leaves the file idle");
        let result = if kept.into_inner() {
            result.map_err(|error| error.kind().into())
        } else {
            result
        };
        Poll::Ready(Some(result))
    }

    /// Waits for the write in flight; a failure is kept for the next write or flush (a read
    /// or a seek does not report it, as with tokio).
    fn poll_settle(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if let Some(Err(error)) = ready!(self.poll_write_done(cx)) {
            assert!(
                self.write_error.is_none(),
                "one write error is kept at a time"
            );
            self.write_error = Some(error.kind());
        }
        assert!(
            !matches!(self.busy, Some(Busy::Write(..) | Busy::Crashed)),
            "a settled file has no write in flight"
        );
        Poll::Ready(())
    }

    /// Waits until the write in flight (if any) has finished, without taking its result: the
    /// next write, flush, read or seek takes it. An operation through `&self` cannot take
    /// it, and so leaves it for them, as tokio's do (kept as its kind, as tokio keeps it).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only waits. Dropped during the wait, the write's failure is kept
    /// whole, as tokio's is when its own wait is dropped.
    async fn write_finished(&self) {
        let Some(Busy::Write(sleep, _, kept)) = &self.busy else {
            return;
        };
        if let Some(sleep) = sleep {
            let deadline = sleep.deadline();
            crashtest_core::time::sleep_until(deadline).await;
            assert!(
                crashtest_core::time::Instant::now() >= deadline,
                "the write in flight has finished"
            );
        }
        kept.store(true, Ordering::Relaxed);
    }

    /// # Cancel safety
    ///
    /// Dropped before it completes, nothing was synced (see [`File::sync_all`]).
    async fn sync_all(&self) -> io::Result<()> {
        self.write_finished().await;
        state::mutation().await;
        state::latency(self.handle.node, 0, true).await;
        state::with(|s| s.sync(&self.handle))
    }

    /// The same as `sync_all`: the file's length is part of the data a read needs.
    ///
    /// # Cancel safety
    ///
    /// As `sync_all`.
    async fn sync_data(&self) -> io::Result<()> {
        self.sync_all().await
    }

    /// # Cancel safety
    ///
    /// Dropped before it completes, the length is as it was.
    async fn set_len(&self, size: u64) -> io::Result<()> {
        self.write_finished().await;
        state::mutation().await;
        state::latency(self.handle.node, 0, false).await;
        state::with(|s| s.set_len(&self.handle, size))
    }

    /// # Cancel safety
    ///
    /// Cancel safe: it changes nothing.
    async fn metadata(&self) -> io::Result<Metadata> {
        let metadata = state::with(|s| s.handle_metadata(&self.handle))?;
        assert!(
            metadata.is_file() || !self.handle.flags.writes(),
            "a file opened for writing is a file"
        );
        Ok(metadata)
    }
}

/// A read first waits for the write in flight (keeping its failure for the next write or
/// flush), then waits out the disk's latency and reads what the page cache holds then.
impl AsyncRead for SimFile {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.assert_consistent();
        ready!(this.poll_settle(cx));
        this.settle_seek();
        if this.busy.is_none() {
            let bytes = buf.remaining() as u64;
            match state::with(|s| s.delay(this.handle.node, bytes, false)) {
                None => return Poll::Ready(this.read_now(buf)),
                Some(delay) => {
                    this.busy = Some(Busy::Read(crashtest_core::time::sleep(delay)));
                }
            }
        }
        let Some(Busy::Read(sleep)) = &mut this.busy else {
            unreachable!("a read is waiting")
        };
        ready!(Pin::new(sleep).poll(cx));
        this.busy = None;
        let read = this.read_now(buf);
        assert!(this.busy.is_none(), "a finished read leaves the file idle");
        Poll::Ready(read)
    }
}

/// Write-behind, as tokio's `File`: a write first waits for the write before it (returning
/// that one's failure, if it failed, without writing its own buffer), then puts its bytes in
/// the page cache and returns at once; its latency and result are for the next operation.
/// Flushing waits for the write in flight and returns its result; shutting down is a flush (a
/// file has no write direction to close).
impl AsyncWrite for SimFile {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.assert_consistent();
        if let Some(kind) = this.write_error.take() {
            return Poll::Ready(Err(kind.into()));
        }
        if let Some(Err(error)) = ready!(this.poll_write_done(cx)) {
            return Poll::Ready(Err(error));
        }
        this.settle_seek();
        assert!(
            !matches!(this.busy, Some(Busy::Write(..) | Busy::Crashed)),
            "a write starts only once the write before it has finished"
        );
        // A read still waiting out its latency has not happened: the write replaces it.
        this.busy = None;
        if state::crash_before_mutation() {
            this.busy = Some(Busy::Crashed);
            return Poll::Pending;
        }
        let start = this.pos.get();
        let written = state::with(|s| s.write(&this.handle, start, buf));
        let result = written.map(|end| {
            assert!(
                this.handle.flags.append || end == start + buf.len() as u64,
                "a write moves the cursor past the bytes written"
            );
            assert!(
                end >= buf.len() as u64,
                "a write ends past the bytes it wrote"
            );
            this.pos.set(end);
        });
        assert!(
            result.is_ok() || this.pos.get() == start,
            "a failed write leaves the cursor where it was"
        );
        let bytes = buf.len() as u64;
        let sleep = state::with(|s| s.delay(this.handle.node, bytes, false))
            .map(crashtest_core::time::sleep);
        this.busy = Some(Busy::Write(sleep, result, AtomicBool::new(false)));
        assert!(
            this.write_error.is_none(),
            "a write starts only once the error before it was returned"
        );
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.assert_consistent();
        if let Some(kind) = this.write_error.take() {
            return Poll::Ready(Err(kind.into()));
        }
        let done = ready!(this.poll_write_done(cx));
        assert!(
            !matches!(this.busy, Some(Busy::Write(..))),
            "a flush leaves no write in flight"
        );
        Poll::Ready(done.unwrap_or(Ok(())))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_flush(cx)
    }
}

/// A seek waits for the write in flight (keeping its failure for the next write or flush),
/// then moves the cursor at once. As with tokio, `start_seek` with a write still in flight is
/// an error: `poll_complete` first.
impl AsyncSeek for SimFile {
    fn start_seek(self: Pin<&mut Self>, position: SeekFrom) -> io::Result<()> {
        let this = self.get_mut();
        this.assert_consistent();
        if this.seek.is_some() {
            // As tokio's: one seek at a time, each completed before the next starts.
            return Err(io::Error::other(
                "a seek of this file is already pending: complete it (poll_complete) before \
                 starting another",
            ));
        }
        match this.busy {
            Some(Busy::Write(..)) => {
                return Err(io::Error::other(
                    "a write of this file is still in flight: complete it (poll_complete) \
                     before starting a seek",
                ));
            }
            Some(Busy::Crashed) => {
                if !state::from_another_run(&this.handle) {
                    assert_node_dead(this.handle.node);
                }
                return Err(errors::io_error());
            }
            // A read still waiting out its latency has not happened: the seek replaces it.
            Some(Busy::Read(_)) | None => this.busy = None,
        }
        let target = match position {
            SeekFrom::Start(offset) => Some(offset),
            SeekFrom::Current(delta) => this.pos.get().checked_add_signed(delta),
            SeekFrom::End(delta) => {
                let len = state::with(|s| s.len(&this.handle))?;
                len.checked_add_signed(delta)
            }
        };
        // The cursor moves now, shared with the handles `try_clone` made, as tokio's seek has
        // moved the OS's by the time a clone is made or either handle reads or writes; the
        // result waits for `poll_complete`. A failed seek leaves the cursor where it was.
        let result = target.ok_or_else(errors::invalid_input);
        if let Ok(target) = result {
            this.pos.set(target);
        }
        this.seek = Some(result);
        assert!(this.busy.is_none(), "a seek is started on an idle file");
        Ok(())
    }

    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        let this = self.get_mut();
        this.assert_consistent();
        ready!(this.poll_settle(cx));
        let done = this.seek.take().unwrap_or_else(|| Ok(this.pos.get()));
        assert!(this.seek.is_none(), "a seek completes once");
        Poll::Ready(done)
    }
}

impl File {
    fn sim(handle: Handle) -> File {
        File {
            inner: SimOrReal::Sim(SimFile {
                handle,
                pos: Cursor::default(),
                busy: None,
                write_error: None,
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
            /// It first waits for the write in flight, but does not report that write's failure:
            /// as with tokio, the next write or flush does, so `flush` before syncing to learn
            /// of it.
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
            /// file.flush().await.unwrap(); // reports the write's failure, if it failed
            /// file.sync_all().await.unwrap();
            /// # }).unwrap();
            /// ```
            pub async fn sync_all(&self) -> io::Result<()>;

            /// Like [`File::sync_all`]; in the simulation the two are the same, since the file's
            /// length is part of the data a read needs (it makes the permission bits and times
            /// durable too, which `fdatasync` need not: a program that needs them durable calls
            /// `sync_all`).
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
            /// not move. Pending until synced, like a write. It first waits for the write in
            /// flight, leaving that write's failure for the next write or flush.
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

    /// Sets the open file's permissions, like `tokio::fs::File::set_permissions` (as
    /// [`crate::set_permissions`] on its path; a handle opened only for reading may set them).
    ///
    /// # Errors
    ///
    /// An I/O error once the node has crashed since the file was opened.
    ///
    /// # Cancel safety
    ///
    /// Inside a simulation the bits change only when the future completes: dropped before
    /// that, nothing changed.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// use std::os::unix::fs::PermissionsExt;
    /// # crashtest::Sim::new(1).run(async {
    /// let file = crashtest::fs::File::create("/run.sh").await.unwrap();
    /// file.set_permissions(std::fs::Permissions::from_mode(0o755)).await.unwrap();
    /// assert_eq!(file.metadata().await.unwrap().mode(), 0o755);
    /// # }).unwrap();
    /// ```
    pub async fn set_permissions(&self, permissions: std::fs::Permissions) -> io::Result<()> {
        match &self.inner {
            SimOrReal::Sim(file) => {
                state::mutation().await;
                state::latency(file.handle.node, 0, false).await;
                let mode = crate::ops::mode_of(&permissions);
                state::with(|s| s.handle_set_mode(&file.handle, mode))
            }
            SimOrReal::Real(file) => file.set_permissions(permissions).await,
        }
    }

    /// Sets the file's modification time, like `tokio::fs::File::set_modified`: seen at once,
    /// durable once the file is synced (a crash before that reverts it). Its change time
    /// becomes the node's wall clock.
    ///
    /// # Errors
    ///
    /// An I/O error once the node has crashed since the file was opened.
    ///
    /// # Cancel safety
    ///
    /// Inside a simulation the time changes only when the future completes: dropped before
    /// that, nothing changed.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// use std::time::{Duration, UNIX_EPOCH};
    /// # crashtest::Sim::new(1).run(async {
    /// let file = crashtest::fs::File::create("/snapshot").await.unwrap();
    /// let then = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    /// file.set_modified(then).await.unwrap();
    /// assert_eq!(file.metadata().await.unwrap().modified().unwrap(), then);
    /// # }).unwrap();
    /// ```
    pub async fn set_modified(&self, time: std::time::SystemTime) -> io::Result<()> {
        match &self.inner {
            SimOrReal::Sim(file) => {
                let ns = crate::metadata::nanos_since_epoch(time)?;
                state::mutation().await;
                state::latency(file.handle.node, 0, false).await;
                state::with(|s| s.handle_set_modified(&file.handle, ns))
            }
            // tokio's own `set_modified` came with 1.54; a clone's std file serves every
            // supported version (it shares the open file, so it sets the same file's time).
            SimOrReal::Real(file) => {
                let std = file.try_clone().await?.into_std().await;
                tokio::task::spawn_blocking(move || std.set_modified(time))
                    .await
                    .map_err(io::Error::other)?
            }
        }
    }

    /// A second handle on this open file, like `tokio::fs::File::try_clone`: the two share
    /// the cursor, so a read, a write or a seek through one moves it for both, and the file
    /// stays open until both are dropped. It first waits for the write in flight (whose
    /// failure the next write or flush of this handle returns), as tokio's does.
    ///
    /// # Errors
    ///
    /// An I/O error once the node has crashed since the file was opened.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropped before it completes, no handle was made.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
    /// # crashtest::Sim::new(1).run(async {
    /// let mut writer = crashtest::fs::File::create_new("/log").await.unwrap();
    /// let mut reader = writer.try_clone().await.unwrap();
    /// writer.write_all(b"abcdef").await.unwrap();
    /// writer.flush().await.unwrap();
    /// reader.seek(std::io::SeekFrom::Start(2)).await.unwrap();
    /// let mut two = [0; 2];
    /// reader.read_exact(&mut two).await.unwrap();
    /// assert_eq!(&two, b"cd");
    /// writer.write_all(b"!").await.unwrap(); // at the shared cursor: 4
    /// writer.flush().await.unwrap();
    /// drop(reader);
    /// writer.rewind().await.unwrap();
    /// let mut all = String::new();
    /// writer.read_to_string(&mut all).await.unwrap();
    /// assert_eq!(all, "abcd!f");
    /// # }).unwrap();
    /// ```
    pub async fn try_clone(&self) -> io::Result<File> {
        match &self.inner {
            SimOrReal::Sim(file) => {
                file.write_finished().await;
                let handle = state::with(|s| s.duplicate(&file.handle))?;
                assert_eq!(
                    handle, file.handle,
                    "a clone is a handle on the same open file"
                );
                Ok(File {
                    inner: SimOrReal::Sim(SimFile {
                        handle,
                        pos: file.pos.clone(),
                        busy: None,
                        write_error: None,
                        seek: None,
                    }),
                })
            }
            SimOrReal::Real(file) => Ok(File {
                inner: SimOrReal::Real(file.try_clone().await?),
            }),
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
        assert_eq!(handle.node, node, "a file is opened on its caller's disk");
        Ok(File::sim(handle))
    }
}
