//! The seam between crashtest's simulated I/O objects and the real ones they stand in for.
//!
//! Every I/O type crashtest offers (a TCP stream and its halves, a listener, a UDP socket, a
//! file) is one type that works inside a simulation and in production alike: inside, it is a
//! handle on the simulated world; outside, it is tokio's (or std's) own object. Which of the
//! two is decided once, when the object is made (`connect`, `bind`, `open` look at whether a
//! simulation runs), and never changes, so the choice is a value: [`SimOrReal`].
//!
//! How the crates use it:
//! - The simulated side of a type implements the same tokio traits as its real twin
//!   (`AsyncRead`, `AsyncWrite`, `AsyncSeek`), so the dispatch between the two is written
//!   once, in this crate's impls of those traits for [`SimOrReal`], not once per type and
//!   method.
//! - A public type is a shell around a `SimOrReal` field (a shell, so that it can have
//!   inherent methods and its own name); [`forward_async_io!`] forwards tokio's traits from
//!   the shell to that field. Inherent methods whose two sides share a signature (the
//!   simulated sides are given tokio's method names for this) are forwarded with the
//!   `delegate` crate; the rest (constructors, and methods that wrap what they return) match
//!   on the two variants themselves.
//!
//! Why it is built so:
//! - An enum, not a trait object: the simulated path is the hot path of every benchmark, and a
//!   two-variant match on an `Unpin` field inlines to a branch; a trait object would be a
//!   virtual call and an allocation per object.
//! - Its own crate: crashtest-net and crashtest-fs both need it, and it needs nothing of the
//!   simulator, only tokio's I/O traits (which take no tokio feature), so it sits below both
//!   without tying them to the core's internals.
//! - Not `tokio_util::either::Either`, which implements the same traits: its variants say
//!   nothing (`Left`, `Right`) where ours say which world an object lives in, in code and in
//!   `Debug` output, and this crate would hold the forwarding macro anyway.
//!
//! The simulated sides' errors are built as the real calls build them, from the errno the
//! real call would set ([`os_error`]).
//!
//! Invariant: both sides are `Unpin` (every simulated object holds plain ids or boxed
//! timers; tokio's sockets and files are `Unpin`), so no pin projection is needed.

pub mod os_error;

use std::io::{self, IoSlice, SeekFrom};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};

/// An I/O object that lives in a simulation (`Sim`) or in the real world (`Real`).
///
/// It implements tokio's `AsyncRead`, `AsyncWrite` and `AsyncSeek` whenever both sides do,
/// by handing each call to the side it holds.
///
/// ```
/// use crashtest_io::SimOrReal;
/// use tokio::io::AsyncReadExt;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let mut real: SimOrReal<&[u8], &[u8]> = SimOrReal::Real(b"real bytes");
/// let mut text = String::new();
/// real.read_to_string(&mut text).await.unwrap();
/// assert_eq!(text, "real bytes");
/// # });
/// ```
#[derive(Debug)]
pub enum SimOrReal<S, R> {
    /// A handle on the simulated world.
    Sim(S),
    /// tokio's or std's own object, used outside a simulation.
    Real(R),
}

impl<S, R> SimOrReal<S, R> {
    /// Borrows the side held, mutably.
    ///
    /// ```
    /// use crashtest_io::SimOrReal;
    /// let mut side: SimOrReal<u8, u16> = SimOrReal::Sim(1);
    /// if let SimOrReal::Sim(n) = side.as_mut() {
    ///     *n += 1;
    /// }
    /// assert!(matches!(side, SimOrReal::Sim(2)));
    /// ```
    #[inline]
    pub fn as_mut(&mut self) -> SimOrReal<&mut S, &mut R> {
        match self {
            SimOrReal::Sim(sim) => SimOrReal::Sim(sim),
            SimOrReal::Real(real) => SimOrReal::Real(real),
        }
    }

    /// Transforms the side held with `sim` or `real`, keeping the side.
    ///
    /// ```
    /// use crashtest_io::SimOrReal;
    /// let side: SimOrReal<u8, &str> = SimOrReal::Real("42");
    /// let parsed = side.map(u32::from, |text| text.parse::<u64>().unwrap());
    /// assert!(matches!(parsed, SimOrReal::Real(42)));
    /// ```
    #[inline]
    pub fn map<S2, R2>(
        self,
        sim: impl FnOnce(S) -> S2,
        real: impl FnOnce(R) -> R2,
    ) -> SimOrReal<S2, R2> {
        match self {
            SimOrReal::Sim(value) => SimOrReal::Sim(sim(value)),
            SimOrReal::Real(value) => SimOrReal::Real(real(value)),
        }
    }
}

impl<S1, S2, R1, R2> SimOrReal<(S1, S2), (R1, R2)> {
    /// Splits a pair held on one side into two values on that side (an object split into
    /// halves).
    ///
    /// ```
    /// use crashtest_io::SimOrReal;
    /// let pair: SimOrReal<(u8, char), (u16, bool)> = SimOrReal::Sim((1, 'a'));
    /// let (first, second) = pair.unzip();
    /// assert!(matches!((first, second), (SimOrReal::Sim(1), SimOrReal::Sim('a'))));
    /// ```
    #[inline]
    pub fn unzip(self) -> (SimOrReal<S1, R1>, SimOrReal<S2, R2>) {
        match self {
            SimOrReal::Sim((a, b)) => (SimOrReal::Sim(a), SimOrReal::Sim(b)),
            SimOrReal::Real((a, b)) => (SimOrReal::Real(a), SimOrReal::Real(b)),
        }
    }
}

impl<S: AsyncRead + Unpin, R: AsyncRead + Unpin> AsyncRead for SimOrReal<S, R> {
    #[inline]
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            SimOrReal::Sim(sim) => Pin::new(sim).poll_read(cx, buf),
            SimOrReal::Real(real) => Pin::new(real).poll_read(cx, buf),
        }
    }
}

impl<S: AsyncWrite + Unpin, R: AsyncWrite + Unpin> AsyncWrite for SimOrReal<S, R> {
    #[inline]
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            SimOrReal::Sim(sim) => Pin::new(sim).poll_write(cx, buf),
            SimOrReal::Real(real) => Pin::new(real).poll_write(cx, buf),
        }
    }

    #[inline]
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            SimOrReal::Sim(sim) => Pin::new(sim).poll_write_vectored(cx, bufs),
            SimOrReal::Real(real) => Pin::new(real).poll_write_vectored(cx, bufs),
        }
    }

    #[inline]
    fn is_write_vectored(&self) -> bool {
        match self {
            SimOrReal::Sim(sim) => sim.is_write_vectored(),
            SimOrReal::Real(real) => real.is_write_vectored(),
        }
    }

    #[inline]
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            SimOrReal::Sim(sim) => Pin::new(sim).poll_flush(cx),
            SimOrReal::Real(real) => Pin::new(real).poll_flush(cx),
        }
    }

    #[inline]
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            SimOrReal::Sim(sim) => Pin::new(sim).poll_shutdown(cx),
            SimOrReal::Real(real) => Pin::new(real).poll_shutdown(cx),
        }
    }
}

impl<S: AsyncSeek + Unpin, R: AsyncSeek + Unpin> AsyncSeek for SimOrReal<S, R> {
    #[inline]
    fn start_seek(self: Pin<&mut Self>, position: SeekFrom) -> io::Result<()> {
        match self.get_mut() {
            SimOrReal::Sim(sim) => Pin::new(sim).start_seek(position),
            SimOrReal::Real(real) => Pin::new(real).start_seek(position),
        }
    }

    #[inline]
    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        match self.get_mut() {
            SimOrReal::Sim(sim) => Pin::new(sim).poll_complete(cx),
            SimOrReal::Real(real) => Pin::new(real).poll_complete(cx),
        }
    }
}

/// Implements tokio's I/O traits for a shell type by handing every call to one of its
/// fields (a [`SimOrReal`], or anything else that implements them and is `Unpin`).
///
/// Name the type, the field and the traits, from `AsyncRead`, `AsyncWrite` and `AsyncSeek`.
///
/// ```
/// use crashtest_io::{SimOrReal, forward_async_io};
/// use tokio::io::AsyncWriteExt;
///
/// /// A sink that is a `Vec` in either world.
/// struct Sink {
///     inner: SimOrReal<Vec<u8>, Vec<u8>>,
/// }
/// forward_async_io!(Sink => inner: AsyncWrite);
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let mut sink = Sink { inner: SimOrReal::Sim(Vec::new()) };
/// sink.write_all(b"into the simulation").await.unwrap();
/// assert!(matches!(&sink.inner, SimOrReal::Sim(bytes) if bytes == b"into the simulation"));
/// # });
/// ```
#[macro_export]
macro_rules! forward_async_io {
    ($shell:ty => $field:ident: $($io:ident),+ $(,)?) => {
        $( $crate::forward_async_io!(@one $io, $shell, $field); )+
    };
    (@one AsyncRead, $shell:ty, $field:ident) => {
        impl $crate::__private::AsyncRead for $shell {
            #[inline]
            fn poll_read(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                buf: &mut $crate::__private::ReadBuf<'_>,
            ) -> ::std::task::Poll<::std::io::Result<()>> {
                ::std::pin::Pin::new(&mut self.get_mut().$field).poll_read(cx, buf)
            }
        }
    };
    (@one AsyncWrite, $shell:ty, $field:ident) => {
        impl $crate::__private::AsyncWrite for $shell {
            #[inline]
            fn poll_write(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                buf: &[u8],
            ) -> ::std::task::Poll<::std::io::Result<usize>> {
                ::std::pin::Pin::new(&mut self.get_mut().$field).poll_write(cx, buf)
            }

            #[inline]
            fn poll_write_vectored(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                bufs: &[::std::io::IoSlice<'_>],
            ) -> ::std::task::Poll<::std::io::Result<usize>> {
                ::std::pin::Pin::new(&mut self.get_mut().$field).poll_write_vectored(cx, bufs)
            }

            #[inline]
            fn is_write_vectored(&self) -> bool {
                self.$field.is_write_vectored()
            }

            #[inline]
            fn poll_flush(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<::std::io::Result<()>> {
                ::std::pin::Pin::new(&mut self.get_mut().$field).poll_flush(cx)
            }

            #[inline]
            fn poll_shutdown(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<::std::io::Result<()>> {
                ::std::pin::Pin::new(&mut self.get_mut().$field).poll_shutdown(cx)
            }
        }
    };
    (@one AsyncSeek, $shell:ty, $field:ident) => {
        impl $crate::__private::AsyncSeek for $shell {
            #[inline]
            fn start_seek(
                self: ::std::pin::Pin<&mut Self>,
                position: ::std::io::SeekFrom,
            ) -> ::std::io::Result<()> {
                ::std::pin::Pin::new(&mut self.get_mut().$field).start_seek(position)
            }

            #[inline]
            fn poll_complete(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<::std::io::Result<u64>> {
                ::std::pin::Pin::new(&mut self.get_mut().$field).poll_complete(cx)
            }
        }
    };
}

/// What [`forward_async_io!`] expands to needs, reachable from any crate.
#[doc(hidden)]
pub mod __private {
    pub use tokio::io::{AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;
    use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

    fn block_on<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a current-thread runtime")
            .block_on(future)
    }

    type Either = SimOrReal<Cursor<Vec<u8>>, Cursor<Vec<u8>>>;

    fn bytes(side: &Either) -> (&'static str, &[u8]) {
        match side {
            SimOrReal::Sim(cursor) => ("sim", cursor.get_ref()),
            SimOrReal::Real(cursor) => ("real", cursor.get_ref()),
        }
    }

    #[test]
    fn every_call_goes_to_the_side_held() {
        block_on(async {
            for sim in [true, false] {
                let cursor = Cursor::new(b"0123456789".to_vec());
                let mut side: Either = if sim {
                    SimOrReal::Sim(cursor)
                } else {
                    SimOrReal::Real(cursor)
                };
                side.seek(SeekFrom::Start(4)).await.unwrap();
                let mut four = [0; 4];
                side.read_exact(&mut four).await.unwrap();
                assert_eq!(&four, b"4567");
                side.write_all(b"ab").await.unwrap();
                let slices = [IoSlice::new(b"c"), IoSlice::new(b"d")];
                let n = side.write_vectored(&slices).await.unwrap();
                assert!(n >= 1, "a vectored write writes at least its first slice");
                side.flush().await.unwrap();
                side.shutdown().await.unwrap();
                let (which, written) = bytes(&side);
                assert_eq!(which, if sim { "sim" } else { "real" });
                assert!(written.starts_with(b"01234567abc"));
            }
        });
    }

    #[test]
    fn a_shell_forwards_to_its_field() {
        struct Shell {
            inner: Either,
        }
        forward_async_io!(Shell => inner: AsyncRead, AsyncWrite, AsyncSeek);
        block_on(async {
            let mut shell = Shell {
                inner: SimOrReal::Real(Cursor::new(Vec::new())),
            };
            shell.write_all(b"hello").await.unwrap();
            assert_eq!(shell.seek(SeekFrom::Start(1)).await.unwrap(), 1);
            let mut rest = String::new();
            shell.read_to_string(&mut rest).await.unwrap();
            assert_eq!(rest, "ello");
            assert_eq!(
                AsyncWrite::is_write_vectored(&shell),
                shell.inner.is_write_vectored()
            );
        });
    }
}
