//! `File` and `OpenOptions`: a file of the node's simulated disk, or tokio's.

use std::fmt;
use std::io::{self, SeekFrom};
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll};

use crashtest_hooks::fs::{DiskFile, OpenFlags};
use real::io::{AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};

use super::simulated;
use crate::seam;

/// An open file, like `tokio::fs::File`.
///
/// ```
/// use crashtest_tokio as tokio;
/// use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
/// crashtest::Sim::new(1).run(async {
///     let mut file = tokio::fs::File::create("/log").await.unwrap();
///     file.write_all(b"hello, disk").await.unwrap();
///     file.sync_all().await.unwrap();
///     let mut file = tokio::fs::File::open("/log").await.unwrap();
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
    Real(real::fs::File),
    Sim(Box<dyn DiskFile>),
}

impl File {
    /// Opens a file for reading.
    ///
    /// # Errors
    ///
    /// As the file system's.
    pub async fn open(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new().read(true).open(path).await
    }

    /// Creates or truncates a file for writing.
    ///
    /// # Errors
    ///
    /// As the file system's.
    pub async fn create(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .await
    }

    /// Creates a new file for reading and writing; fails if it exists.
    ///
    /// # Errors
    ///
    /// `AlreadyExists`, and as the file system's.
    pub async fn create_new<P: AsRef<Path>>(path: P) -> io::Result<File> {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .await
    }

    /// Options to open a file with.
    pub fn options() -> OpenOptions {
        OpenOptions::new()
    }

    /// Wraps a std file; refused inside a simulation (it is a real file).
    #[track_caller]
    pub fn from_std(std: std::fs::File) -> File {
        if seam::sim().is_some() {
            seam::refuse(
                "tokio::fs::File::from_std",
                "a std file is on the real disk; open it with tokio::fs::File::open",
            );
        }
        File {
            inner: Inner::Real(real::fs::File::from_std(std)),
        }
    }

    /// Makes the file's data and length durable.
    ///
    /// # Errors
    ///
    /// As the file system's (an injected `EIO` on the simulated disk).
    pub async fn sync_all(&self) -> io::Result<()> {
        match &self.inner {
            Inner::Real(file) => file.sync_all().await,
            Inner::Sim(file) => file.sync_all().await,
        }
    }

    /// Makes the file's data durable.
    ///
    /// # Errors
    ///
    /// As [`File::sync_all`].
    pub async fn sync_data(&self) -> io::Result<()> {
        match &self.inner {
            Inner::Real(file) => file.sync_data().await,
            Inner::Sim(file) => file.sync_data().await,
        }
    }

    /// Truncates or extends the file.
    ///
    /// # Errors
    ///
    /// As the file system's.
    pub async fn set_len(&self, size: u64) -> io::Result<()> {
        match &self.inner {
            Inner::Real(file) => file.set_len(size).await,
            Inner::Sim(file) => file.set_len(size).await,
        }
    }

    /// The file's std `Metadata`: for a simulated file, its length, as [`super::metadata`]
    /// tells it.
    ///
    /// ```
    /// use crashtest_tokio as tokio;
    /// use tokio::io::AsyncWriteExt;
    /// crashtest::Sim::new(1).run(async {
    ///     let mut log = tokio::fs::File::create("/log").await.unwrap();
    ///     log.write_all(b"first record").await.unwrap();
    ///     assert_eq!(log.metadata().await.unwrap().len(), 12);
    ///     // An open file's length is its own, after its path is gone.
    ///     tokio::fs::remove_file("/log").await.unwrap();
    ///     assert_eq!(log.metadata().await.unwrap().len(), 12);
    /// }).unwrap();
    /// ```
    ///
    /// # Errors
    ///
    /// As the file system's.
    pub async fn metadata(&self) -> io::Result<std::fs::Metadata> {
        match &self.inner {
            Inner::Real(file) => file.metadata().await,
            Inner::Sim(file) => super::specimen::metadata(file.stat().await?),
        }
    }

    /// A second handle on the open file, sharing its cursor: a read, a write or a seek
    /// through one moves it for both. It first waits for the write in flight.
    ///
    /// # Errors
    ///
    /// As the file system's (inside a simulation, an I/O error once the node has crashed
    /// since the file was opened).
    pub async fn try_clone(&self) -> io::Result<File> {
        match &self.inner {
            Inner::Real(file) => Ok(File {
                inner: Inner::Real(file.try_clone().await?),
            }),
            Inner::Sim(file) => Ok(File {
                inner: Inner::Sim(file.try_clone().await?),
            }),
        }
    }

    /// The std file; refused for a simulated file, when called (not awaited), so that the
    /// refusal names the caller's line.
    #[track_caller]
    pub fn into_std(self) -> impl Future<Output = std::fs::File> {
        match self.inner {
            Inner::Real(file) => file.into_std(),
            Inner::Sim(_) => seam::refuse(
                "tokio::fs::File::into_std",
                "a simulated file has no OS file",
            ),
        }
    }

    /// The std file if no operation is in flight; refused for a simulated file.
    ///
    /// # Errors
    ///
    /// The file back if an operation is in flight.
    pub fn try_into_std(self) -> Result<std::fs::File, File> {
        match self.inner {
            Inner::Real(file) => file.try_into_std().map_err(|file| File {
                inner: Inner::Real(file),
            }),
            Inner::Sim(_) => seam::refuse(
                "tokio::fs::File::try_into_std",
                "a simulated file has no OS file",
            ),
        }
    }

    /// Sets the file's permissions (inside a simulation, as [`super::set_permissions`] does).
    ///
    /// # Errors
    ///
    /// As the file system's.
    pub async fn set_permissions(&self, permissions: std::fs::Permissions) -> io::Result<()> {
        match &self.inner {
            Inner::Real(file) => file.set_permissions(permissions).await,
            Inner::Sim(file) => file.set_permissions(permissions).await,
        }
    }

    /// Sets the file's access and modification times; refused for a simulated file: std's
    /// `FileTimes` cannot be read back, so only [`File::set_modified`] reaches the simulated
    /// disk.
    ///
    /// # Errors
    ///
    /// As the file system's.
    #[cfg(real_tokio_1_54)]
    #[track_caller]
    pub fn set_times(
        &self,
        times: real::fs::FileTimes,
    ) -> impl Future<Output = io::Result<()>> + '_ {
        match &self.inner {
            Inner::Real(file) => file.set_times(times),
            Inner::Sim(_) => seam::refuse(
                "tokio::fs::File::set_times",
                "std's FileTimes cannot be read back; set the modification time with \
                 tokio::fs::File::set_modified (the simulated disk keeps no access times)",
            ),
        }
    }

    /// Sets the most a single write buffers (tokio's; a simulated file writes directly).
    pub fn set_max_buf_size(&mut self, max_buf_size: usize) {
        if let Inner::Real(file) = &mut self.inner {
            file.set_max_buf_size(max_buf_size);
        }
    }

    /// The most a single write buffers (tokio's; a simulated file writes directly and
    /// buffers nothing).
    #[cfg(real_tokio_1_48)]
    pub fn max_buf_size(&self) -> usize {
        match &self.inner {
            Inner::Real(file) => file.max_buf_size(),
            Inner::Sim(_) => 0,
        }
    }

    /// Sets the file's modification time (inside a simulation, the simulated file's: seen at
    /// once, durable once the file is synced).
    ///
    /// # Errors
    ///
    /// As the file system's.
    #[cfg(real_tokio_1_54)]
    pub async fn set_modified(&self, time: std::time::SystemTime) -> io::Result<()> {
        match &self.inner {
            Inner::Real(file) => file.set_modified(time).await,
            Inner::Sim(file) => file.set_modified(time).await,
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
            Inner::Real(file) => Pin::new(file).poll_read(cx, buf),
            Inner::Sim(file) => seam::read_into(buf, |unfilled| {
                file.poll_read(cx, unfilled).map_ok(|n| (n, ()))
            }),
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
            Inner::Real(file) => Pin::new(file).poll_write(cx, buf),
            Inner::Sim(file) => file.poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            Inner::Real(file) => Pin::new(file).poll_flush(cx),
            Inner::Sim(file) => file.poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            Inner::Real(file) => Pin::new(file).poll_shutdown(cx),
            Inner::Sim(file) => file.poll_flush(cx),
        }
    }
}

impl AsyncSeek for File {
    fn start_seek(self: Pin<&mut Self>, position: SeekFrom) -> io::Result<()> {
        match &mut self.get_mut().inner {
            Inner::Real(file) => Pin::new(file).start_seek(position),
            Inner::Sim(file) => file.start_seek(position),
        }
    }

    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        match &mut self.get_mut().inner {
            Inner::Real(file) => Pin::new(file).poll_complete(cx),
            Inner::Sim(file) => file.poll_complete(cx),
        }
    }
}

impl From<std::fs::OpenOptions> for OpenOptions {
    fn from(std: std::fs::OpenOptions) -> OpenOptions {
        OpenOptions {
            from_std: Some(real::fs::OpenOptions::from(std)),
            ..OpenOptions::default()
        }
    }
}

impl From<std::fs::File> for File {
    fn from(std: std::fs::File) -> File {
        File::from_std(std)
    }
}

/// A simulated file has no descriptor of the host's to lend: asking for one (to lock the
/// file with `flock`, say) fails the run with what to use instead.
#[cfg(unix)]
impl std::os::fd::AsFd for File {
    #[track_caller]
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        match &self.inner {
            Inner::Real(file) => file.as_fd(),
            Inner::Sim(_) => seam::refuse(
                "tokio::fs::File::as_fd",
                "a simulated file has no OS descriptor; use the file's own methods, or \
                 std::fs on the node's disk (whose files the guards simulate, with \
                 try_lock)",
            ),
        }
    }
}

#[cfg(unix)]
impl std::os::fd::AsRawFd for File {
    #[track_caller]
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        std::os::fd::AsFd::as_fd(self).as_raw_fd()
    }
}

/// A descriptor is a host file: taken as [`File::from_std`] takes one (refused inside a
/// simulation).
#[cfg(unix)]
impl std::os::fd::FromRawFd for File {
    unsafe fn from_raw_fd(fd: std::os::fd::RawFd) -> File {
        // SAFETY: the caller hands over an open descriptor it owns, as this trait requires.
        File::from_std(unsafe { std::fs::File::from_raw_fd(fd) })
    }
}

#[cfg(all(unix, real_tokio_1_53))]
impl From<std::os::fd::OwnedFd> for File {
    fn from(fd: std::os::fd::OwnedFd) -> File {
        File::from_std(std::fs::File::from(fd))
    }
}

impl fmt::Debug for File {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            Inner::Real(file) => file.fmt(f),
            Inner::Sim(file) => file.fmt(f),
        }
    }
}

/// How to open a file, like `tokio::fs::OpenOptions`.
///
/// Options made from std's (`From<std::fs::OpenOptions>`) keep std's builder for tokio, since
/// std's options cannot be read back; inside a simulation such options are refused.
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    flags: OpenFlags,
    #[cfg(unix)]
    custom_flags: Option<i32>,
    /// tokio's options made from std's, which later calls keep up to date.
    from_std: Option<real::fs::OpenOptions>,
}

macro_rules! flag {
    ($($name:ident),*) => {$(
        #[doc = concat!("Sets the `", stringify!($name), "` option.")]
        pub fn $name(&mut self, $name: bool) -> &mut OpenOptions {
            self.flags.$name = $name;
            if let Some(real) = &mut self.from_std {
                real.$name($name);
            }
            self
        }
    )*};
}

impl OpenOptions {
    /// No options set.
    pub fn new() -> OpenOptions {
        OpenOptions::default()
    }

    flag!(read, write, append, truncate, create, create_new);

    /// The permission bits of a created file, before the umask (022 inside a simulation).
    #[cfg(unix)]
    pub fn mode(&mut self, mode: u32) -> &mut OpenOptions {
        self.flags.mode = Some(mode);
        if let Some(real) = &mut self.from_std {
            real.mode(mode);
        }
        self
    }

    /// Extra `open` flags (ignored by the simulated disk).
    #[cfg(unix)]
    pub fn custom_flags(&mut self, flags: i32) -> &mut OpenOptions {
        self.custom_flags = Some(flags);
        if let Some(real) = &mut self.from_std {
            real.custom_flags(flags);
        }
        self
    }

    /// Opens `path`.
    ///
    /// # Errors
    ///
    /// As the file system's.
    pub async fn open(&self, path: impl AsRef<Path>) -> io::Result<File> {
        let inner = match simulated("tokio::fs::OpenOptions::open") {
            None => Inner::Real(self.real().open(path).await?),
            Some(_) if self.from_std.is_some() => seam::refuse(
                "tokio::fs::OpenOptions::open with options made from std's",
                "std's options cannot be read back; build them with tokio::fs::OpenOptions",
            ),
            Some(disk) => Inner::Sim(disk.open(path.as_ref().to_owned(), self.flags).await?),
        };
        Ok(File { inner })
    }

    fn real(&self) -> real::fs::OpenOptions {
        if let Some(real) = &self.from_std {
            return real.clone();
        }
        let mut real = real::fs::OpenOptions::new();
        real.read(self.flags.read)
            .write(self.flags.write)
            .append(self.flags.append)
            .truncate(self.flags.truncate)
            .create(self.flags.create)
            .create_new(self.flags.create_new);
        #[cfg(unix)]
        {
            if let Some(mode) = self.flags.mode {
                real.mode(mode);
            }
            if let Some(flags) = self.custom_flags {
                real.custom_flags(flags);
            }
        }
        real
    }
}
