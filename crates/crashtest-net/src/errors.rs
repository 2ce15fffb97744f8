//! The errors the simulated network returns, built as Linux's socket calls build them: from
//! the errno the real call would set (`crashtest_io::os_error`), so that `ErrorKind`,
//! `raw_os_error()` and the message are the real call's (hyper and many retry loops look at
//! the raw number).

use std::io::{self, ErrorKind};

use crashtest_io::os_error::os_error;

#[cfg(unix)]
mod errno {
    pub(super) use libc::{
        EADDRINUSE, EADDRNOTAVAIL, ECONNABORTED, ECONNREFUSED, ECONNRESET, EDESTADDRREQ, EMSGSIZE,
        ENETUNREACH, ENOTCONN, EPIPE, ETIMEDOUT,
    };
}

#[cfg(not(unix))]
mod errno {
    pub(super) const EADDRINUSE: i32 = 98;
    pub(super) const EADDRNOTAVAIL: i32 = 99;
    pub(super) const ECONNABORTED: i32 = 103;
    pub(super) const ECONNREFUSED: i32 = 111;
    pub(super) const ECONNRESET: i32 = 104;
    pub(super) const EDESTADDRREQ: i32 = 89;
    pub(super) const EMSGSIZE: i32 = 90;
    pub(super) const ENETUNREACH: i32 = 101;
    pub(super) const ENOTCONN: i32 = 107;
    pub(super) const EPIPE: i32 = 32;
    pub(super) const ETIMEDOUT: i32 = 110;
}

/// The error a connection reports for a fault of `kind` (`ECONNRESET`, `ECONNREFUSED`,
/// `ECONNABORTED`, `ETIMEDOUT` or `EPIPE`).
///
/// # Panics
///
/// For another kind: a connection fails in no other way.
pub(crate) fn connection(kind: ErrorKind) -> io::Error {
    match kind {
        ErrorKind::ConnectionReset => os_error(errno::ECONNRESET, kind, "Connection reset by peer"),
        ErrorKind::ConnectionRefused => os_error(errno::ECONNREFUSED, kind, "Connection refused"),
        ErrorKind::ConnectionAborted => os_error(
            errno::ECONNABORTED,
            kind,
            "Software caused connection abort",
        ),
        ErrorKind::TimedOut => os_error(errno::ETIMEDOUT, kind, "Connection timed out"),
        ErrorKind::BrokenPipe => os_error(errno::EPIPE, kind, "Broken pipe"),
        other => panic!("a connection fails with no {other:?}"),
    }
}

/// `EADDRINUSE`: the port is taken (or, binding port 0, none is free).
pub(crate) fn address_in_use() -> io::Error {
    os_error(
        errno::EADDRINUSE,
        ErrorKind::AddrInUse,
        "Address already in use",
    )
}

/// `EADDRNOTAVAIL`: the address is not this node's, or no ephemeral port is free to connect
/// from.
pub(crate) fn address_not_available() -> io::Error {
    os_error(
        errno::EADDRNOTAVAIL,
        ErrorKind::AddrNotAvailable,
        "Cannot assign requested address",
    )
}

/// `ENETUNREACH`: no route to the address.
pub(crate) fn network_unreachable() -> io::Error {
    os_error(
        errno::ENETUNREACH,
        ErrorKind::NetworkUnreachable,
        "Network is unreachable",
    )
}

/// `ENOTCONN`: a connected socket's peer was asked of one that is not connected.
pub(crate) fn not_connected() -> io::Error {
    os_error(
        errno::ENOTCONN,
        ErrorKind::NotConnected,
        "Transport endpoint is not connected",
    )
}

/// `EDESTADDRREQ`: a datagram sent with no address from a socket with no default peer. std
/// gives this number no kind of its own.
pub(crate) fn destination_required() -> io::Error {
    os_error(
        errno::EDESTADDRREQ,
        ErrorKind::Other,
        "Destination address required",
    )
}

/// `EMSGSIZE`: a datagram larger than UDP carries. std gives this number no kind of its own.
pub(crate) fn message_too_long() -> io::Error {
    os_error(errno::EMSGSIZE, ErrorKind::Other, "Message too long")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_fault_carries_the_kind_it_names() {
        for kind in [
            ErrorKind::ConnectionReset,
            ErrorKind::ConnectionRefused,
            ErrorKind::ConnectionAborted,
            ErrorKind::TimedOut,
            ErrorKind::BrokenPipe,
        ] {
            assert_eq!(connection(kind).kind(), kind);
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn errors_carry_linux_numbers() {
        let numbers = [
            connection(ErrorKind::ConnectionReset).raw_os_error(),
            address_in_use().raw_os_error(),
            not_connected().raw_os_error(),
            destination_required().raw_os_error(),
            message_too_long().raw_os_error(),
        ];
        assert_eq!(numbers, [104, 98, 107, 89, 90].map(Some));
    }
}
