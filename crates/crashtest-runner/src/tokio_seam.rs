//! What the tokio stand-in needs registered before a run.
//!
//! The stand-in (`crashtest tokio setup`) reaches the simulated network and disk, and the
//! determinism guards' adoption of placeholder sockets, through `crashtest-hooks`, where they
//! must be registered; the core cannot do it (the network, the disk and the guards depend on
//! the core). The runner does, for every test, and the facade's `Sim` and
//! `check_determinism` do, for runs started by hand.

/// Registers the simulated network and disk, and the guards' adoption of placeholder sockets,
/// with the tokio stand-in (once per process; later calls do nothing).
///
/// ```
/// crashtest_runner::register_tokio_seam();
/// assert!(crashtest_hooks::network().is_some() && crashtest_hooks::disk().is_some());
/// ```
pub fn register_tokio_seam() {
    crashtest_net::register_tokio_seam();
    crashtest_fs::register_tokio_seam();
    #[cfg(unix)]
    crashtest_hooks::register_socket_adopter(adopt_placeholder);
}

/// Linux's `AF_INET6`: placeholders exist only where the guards do, on Linux.
#[cfg(unix)]
const AF_INET6: std::ffi::c_int = 10;

/// Takes a placeholder socket over for the stand-in (see `crashtest_guard::adopt_placeholder`).
#[cfg(unix)]
fn adopt_placeholder(
    raw: std::os::fd::OwnedFd,
) -> Result<crashtest_hooks::net::AdoptedSocket, std::os::fd::OwnedFd> {
    let placeholder = crashtest_guard::adopt_placeholder(raw)?;
    Ok(crashtest_hooks::net::AdoptedSocket {
        ipv6: placeholder.domain == AF_INET6,
        bound: placeholder.bound,
        nodelay: placeholder.options.nodelay,
        linger: placeholder.options.linger,
        listening: placeholder.listening,
    })
}
