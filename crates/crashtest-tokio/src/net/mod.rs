//! `tokio::net`: TCP and UDP on the simulated network inside a simulation, tokio's sockets
//! outside.
//!
//! Inside a simulation nothing here touches the host's network: names resolve among the
//! simulated nodes (node `i` is `10.0.0.<i>`, see `crashtest::net`), sockets are the
//! simulated network's, and a socket a library made by hand is adopted, not used
//! (`TcpSocket::from_std_stream`). Every connection gets the simulated network's faults.
//! Unix-domain sockets are tokio's: they are local to the host, not the network, and a
//! simulation that uses them is not hermetic.

mod addr;
mod fd;
mod listener;
mod socket;
mod stream;
pub mod tcp;
mod udp;
#[cfg(unix)]
mod unix_socket;

pub use real::net::*;

pub use addr::{ToSocketAddrs, lookup_host};
pub use listener::TcpListener;
pub use socket::TcpSocket;
pub use stream::TcpStream;
pub use udp::UdpSocket;

/// Refuses binding a simulated socket to a device (`call` names whose).
#[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
#[track_caller]
fn refuse_bind_device(call: &str) -> ! {
    crate::seam::refuse(
        call,
        "a simulated node has one network and no devices; bind to an address instead",
    )
}
#[cfg(unix)]
pub use unix_socket::{UnixDatagram, UnixListener, UnixStream};

/// What tokio's sockets are, these are too: unwind-safe (a simulated one holds the
/// simulated network's socket behind a trait object, which says nothing of it) and, since
/// tokio 1.48, a stream is `AsRef` of itself.
macro_rules! like_tokios {
    ($($ty:ty),* $(,)?) => {$(
        impl std::panic::UnwindSafe for $ty {}
        impl std::panic::RefUnwindSafe for $ty {}
    )*};
}

like_tokios!(
    TcpStream,
    TcpListener,
    UdpSocket,
    tcp::OwnedReadHalf,
    tcp::OwnedWriteHalf,
    tcp::ReadHalf<'_>,
    tcp::WriteHalf<'_>,
    tcp::ReuniteError,
);

#[cfg(real_tokio_1_48)]
impl AsRef<TcpStream> for TcpStream {
    fn as_ref(&self) -> &TcpStream {
        self
    }
}

#[cfg(all(unix, real_tokio_1_48))]
impl AsRef<UnixStream> for UnixStream {
    fn as_ref(&self) -> &UnixStream {
        self
    }
}

/// tokio's `net::unix`, with the owned halves of this crate's [`UnixStream`], which reunite
/// into it.
#[cfg(unix)]
pub mod unix {
    pub use real::net::unix::*;

    pub use super::unix_socket::{OwnedReadHalf, OwnedWriteHalf, ReuniteError};
}
