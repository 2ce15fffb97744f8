//! Descriptors for simulated sockets.
//!
//! Libraries reach a tokio socket's descriptor to set options with socket2 (tonic sets
//! keep-alive on accepted streams through `SockRef::from(&stream)`), so the stand-in's
//! sockets must implement `AsFd` even when simulated. A simulated socket has no descriptor:
//! it lends a placeholder, `/dev/null` opened once per process, on which every socket option
//! call fails with `ENOTSOCK`, an error those libraries log and go past. (The options that
//! matter to a simulated connection, such as `TCP_NODELAY` through `set_nodelay`, are the
//! stand-in's own methods.)

#[cfg(unix)]
pub(crate) fn placeholder() -> std::os::fd::BorrowedFd<'static> {
    use std::os::fd::{AsFd, OwnedFd};
    use std::sync::OnceLock;
    static PLACEHOLDER: OnceLock<OwnedFd> = OnceLock::new();
    PLACEHOLDER
        .get_or_init(|| {
            std::fs::File::open("/dev/null")
                .expect("/dev/null can be opened")
                .into()
        })
        .as_fd()
}

/// Implements the descriptor traits for a type whose `inner` is `Real(tokio's)` or simulated.
macro_rules! descriptors {
    ($ty:ty, $real:path) => {
        #[cfg(unix)]
        impl std::os::fd::AsRawFd for $ty {
            fn as_raw_fd(&self) -> std::os::fd::RawFd {
                std::os::fd::AsRawFd::as_raw_fd(&std::os::fd::AsFd::as_fd(self))
            }
        }

        #[cfg(unix)]
        impl std::os::fd::AsFd for $ty {
            fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
                match &self.inner {
                    $real(real) => std::os::fd::AsFd::as_fd(real),
                    _ => $crate::net::fd::placeholder(),
                }
            }
        }

        #[cfg(windows)]
        impl std::os::windows::io::AsRawSocket for $ty {
            fn as_raw_socket(&self) -> std::os::windows::io::RawSocket {
                std::os::windows::io::AsRawSocket::as_raw_socket(
                    &std::os::windows::io::AsSocket::as_socket(self),
                )
            }
        }

        #[cfg(windows)]
        impl std::os::windows::io::AsSocket for $ty {
            fn as_socket(&self) -> std::os::windows::io::BorrowedSocket<'_> {
                match &self.inner {
                    $real(real) => std::os::windows::io::AsSocket::as_socket(real),
                    _ => $crate::seam::refuse(
                        "a simulated socket's handle",
                        "a simulated socket has no OS handle",
                    ),
                }
            }
        }
    };
}

pub(crate) use descriptors;
