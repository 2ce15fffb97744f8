//! `tokio::io`: tokio's traits, helpers and adapters, which need no runtime and behave the
//! same inside a simulation; only the process's standard streams are switched.
//!
//! tokio's `stdin`, `stdout` and `stderr` do their blocking reads and writes on the
//! runtime's blocking threads, which a simulation does not have. Inside a simulation
//! `stdout` and `stderr` therefore write straight to the process's own streams (std's, not
//! captured by the test harness): output leaves the simulated world and nothing comes back
//! from it, not even the host's errors, so no run depends on it. `stdin` is refused: what a
//! terminal types is input no seed draws.

pub use real::io::*;

#[cfg(feature = "io-std")]
use crate::seam;

/// The process's standard input, like `tokio::io::stdin`; refused inside a simulation.
#[cfg(feature = "io-std")]
#[track_caller]
pub fn stdin() -> Stdin {
    if seam::sim().is_some() {
        seam::refuse(
            "tokio::io::stdin",
            "a simulated node has no terminal to read; give it its input in the test",
        );
    }
    real::io::stdin()
}

#[cfg(feature = "io-std")]
pub use standard::{Stderr, Stdout, stderr, stdout};

/// `stdout` and `stderr`: tokio's, or std's streams written at once inside a simulation.
#[cfg(feature = "io-std")]
mod standard {
    use std::fmt;
    use std::io::{self, Write};
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use real::io::AsyncWrite;

    use crate::seam;

    /// A standard stream: tokio's outside a simulation, std's inside one.
    enum Stream<R> {
        Real(R),
        Sim,
    }

    macro_rules! standard_stream {
        ($($(#[$attr:meta])* $make:ident -> $name:ident, $std:ident, $fd:literal;)*) => {$(
            $(#[$attr])*
            pub struct $name(Stream<real::io::$name>);

            #[doc = concat!("The process's standard stream, like `tokio::io::", stringify!($make), "`: inside a simulation each write goes to std's `", stringify!($std), "` at once.")]
            ///
            /// ```
            /// use crashtest_tokio as tokio;
            /// use tokio::io::AsyncWriteExt;
            /// crashtest::Sim::new(1).run(async {
            #[doc = concat!("    let mut out = tokio::io::", stringify!($make), "();")]
            ///     out.write_all(b"written inside a simulation\n").await.unwrap();
            ///     out.flush().await.unwrap();
            /// }).unwrap();
            /// ```
            pub fn $make() -> $name {
                if seam::sim().is_some() {
                    $name(Stream::Sim)
                } else {
                    $name(Stream::Real(real::io::$make()))
                }
            }

            impl fmt::Debug for $name {
                fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    match &self.0 {
                        Stream::Real(real) => real.fmt(f),
                        Stream::Sim => f.write_str(concat!(stringify!($name), " { simulated }")),
                    }
                }
            }

            impl AsyncWrite for $name {
                fn poll_write(
                    self: Pin<&mut Self>,
                    cx: &mut Context<'_>,
                    buf: &[u8],
                ) -> Poll<io::Result<usize>> {
                    match &mut self.get_mut().0 {
                        Stream::Real(real) => Pin::new(real).poll_write(cx, buf),
                        // What the host does with the bytes (a closed pipe, a full one)
                        // must not come back into the run: the write is whole, as far as
                        // the simulated program knows.
                        Stream::Sim => {
                            let _ = io::$std().write_all(buf);
                            Poll::Ready(Ok(buf.len()))
                        }
                    }
                }

                fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                    match &mut self.get_mut().0 {
                        Stream::Real(real) => Pin::new(real).poll_flush(cx),
                        Stream::Sim => {
                            let _ = io::$std().flush();
                            Poll::Ready(Ok(()))
                        }
                    }
                }

                fn poll_shutdown(
                    self: Pin<&mut Self>,
                    cx: &mut Context<'_>,
                ) -> Poll<io::Result<()>> {
                    match &mut self.get_mut().0 {
                        Stream::Real(real) => Pin::new(real).poll_shutdown(cx),
                        Stream::Sim => {
                            let _ = io::$std().flush();
                            Poll::Ready(Ok(()))
                        }
                    }
                }
            }

            #[cfg(unix)]
            impl std::os::fd::AsRawFd for $name {
                fn as_raw_fd(&self) -> std::os::fd::RawFd {
                    match &self.0 {
                        Stream::Real(real) => real.as_raw_fd(),
                        Stream::Sim => $fd,
                    }
                }
            }

            #[cfg(unix)]
            impl std::os::fd::AsFd for $name {
                fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
                    match &self.0 {
                        Stream::Real(real) => real.as_fd(),
                        // SAFETY: the process's standard streams stay open while it runs.
                        Stream::Sim => unsafe { std::os::fd::BorrowedFd::borrow_raw($fd) },
                    }
                }
            }
        )*};
    }

    standard_stream! {
        /// The process's standard output, like `tokio::io::Stdout`.
        stdout -> Stdout, stdout, 1;
        /// The process's standard error, like `tokio::io::Stderr`.
        stderr -> Stderr, stderr, 2;
    }
}

/// Unix-specific I/O, like `tokio::io::unix`: tokio's, with [`unix::AsyncFd`] refused inside a
/// simulation.
#[cfg(unix)]
pub mod unix {
    use std::fmt;
    use std::io;
    use std::ops::{Deref, DerefMut};
    use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};

    pub use real::io::unix::*;

    use crate::seam;

    /// Fails the running simulation, if any, because `call` watches a host descriptor.
    #[track_caller]
    fn refuse_inside(call: &str) {
        if seam::sim().is_some() {
            seam::refuse(
                call,
                "a descriptor's readiness comes from the host's OS, outside the simulated \
                 world; use the simulated tokio::net sockets and tokio::fs files (or \
                 crashtest::net and crashtest::fs), whose readiness the simulation owns",
            );
        }
    }

    /// Readiness of a host file descriptor, like `tokio::io::unix::AsyncFd`; refused inside a
    /// simulation. It dereferences to tokio's, whose methods (`readable`, `try_io`, ...) it
    /// keeps unchanged.
    ///
    /// ```
    /// use crashtest_tokio as tokio;
    /// let failure = crashtest::Sim::new(1).run(async {
    ///     let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
    ///     let _ = tokio::io::unix::AsyncFd::new(a);
    /// }).unwrap_err();
    /// assert!(failure.to_string().contains("tokio::io::unix::AsyncFd::new cannot run inside"));
    /// ```
    pub struct AsyncFd<T: AsRawFd> {
        real: real::io::unix::AsyncFd<T>,
    }

    // tokio's newest releases deprecate the constructors without `unsafe` in favour of
    // `register`; the stand-in keeps both, as tokio does, over every supported release, and
    // `AsyncFdTryNewError` is the one error type all of them name.
    #[allow(deprecated, reason = "tokio's names across its supported releases")]
    impl<T: AsRawFd> AsyncFd<T> {
        /// Watches `inner` for reading and writing; refused inside a simulation.
        ///
        /// # Errors
        ///
        /// tokio's.
        #[track_caller]
        pub fn new(inner: T) -> io::Result<AsyncFd<T>> {
            refuse_inside("tokio::io::unix::AsyncFd::new");
            real::io::unix::AsyncFd::new(inner).map(|real| AsyncFd { real })
        }

        /// Watches `inner` for `interest`; refused inside a simulation.
        ///
        /// # Errors
        ///
        /// tokio's.
        #[track_caller]
        pub fn with_interest(inner: T, interest: real::io::Interest) -> io::Result<AsyncFd<T>> {
            refuse_inside("tokio::io::unix::AsyncFd::with_interest");
            real::io::unix::AsyncFd::with_interest(inner, interest).map(|real| AsyncFd { real })
        }

        /// As [`AsyncFd::new`], handing `inner` back on failure; refused inside a simulation.
        ///
        /// # Errors
        ///
        /// tokio's.
        #[track_caller]
        pub fn try_new(inner: T) -> Result<AsyncFd<T>, AsyncFdTryNewError<T>> {
            refuse_inside("tokio::io::unix::AsyncFd::try_new");
            real::io::unix::AsyncFd::try_new(inner).map(|real| AsyncFd { real })
        }

        /// As [`AsyncFd::with_interest`], handing `inner` back on failure; refused inside a
        /// simulation.
        ///
        /// # Errors
        ///
        /// tokio's.
        #[track_caller]
        pub fn try_with_interest(
            inner: T,
            interest: real::io::Interest,
        ) -> Result<AsyncFd<T>, AsyncFdTryNewError<T>> {
            refuse_inside("tokio::io::unix::AsyncFd::try_with_interest");
            real::io::unix::AsyncFd::try_with_interest(inner, interest).map(|real| AsyncFd { real })
        }

        /// As [`AsyncFd::try_new`] (tokio's newer name, whose caller promises that `inner`
        /// owns its descriptor); refused inside a simulation.
        ///
        /// # Safety
        ///
        /// `inner` owns the descriptor it returns from `as_raw_fd`, which stays open while
        /// the `AsyncFd` lives.
        ///
        /// # Errors
        ///
        /// tokio's.
        #[track_caller]
        pub unsafe fn register(inner: T) -> Result<AsyncFd<T>, AsyncFdTryNewError<T>> {
            refuse_inside("tokio::io::unix::AsyncFd::register");
            real::io::unix::AsyncFd::try_new(inner).map(|real| AsyncFd { real })
        }

        /// As [`AsyncFd::try_with_interest`] (tokio's newer name, see
        /// [`AsyncFd::register`]); refused inside a simulation.
        ///
        /// # Safety
        ///
        /// As [`AsyncFd::register`].
        ///
        /// # Errors
        ///
        /// tokio's.
        #[track_caller]
        pub unsafe fn register_with_interest(
            inner: T,
            interest: real::io::Interest,
        ) -> Result<AsyncFd<T>, AsyncFdTryNewError<T>> {
            refuse_inside("tokio::io::unix::AsyncFd::register_with_interest");
            real::io::unix::AsyncFd::try_with_interest(inner, interest).map(|real| AsyncFd { real })
        }

        /// Stops watching and gives the descriptor's owner back.
        pub fn into_inner(self) -> T {
            self.real.into_inner()
        }
    }

    impl<T: AsRawFd> Deref for AsyncFd<T> {
        type Target = real::io::unix::AsyncFd<T>;

        fn deref(&self) -> &real::io::unix::AsyncFd<T> {
            &self.real
        }
    }

    impl<T: AsRawFd> DerefMut for AsyncFd<T> {
        fn deref_mut(&mut self) -> &mut real::io::unix::AsyncFd<T> {
            &mut self.real
        }
    }

    impl<T: AsRawFd> AsRawFd for AsyncFd<T> {
        fn as_raw_fd(&self) -> RawFd {
            self.real.as_raw_fd()
        }
    }

    impl<T: AsRawFd> AsFd for AsyncFd<T> {
        fn as_fd(&self) -> BorrowedFd<'_> {
            self.real.as_fd()
        }
    }

    impl<T: AsRawFd + fmt::Debug> fmt::Debug for AsyncFd<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            self.real.fmt(f)
        }
    }
}
