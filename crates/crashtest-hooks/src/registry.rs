//! The components registered once per process: the simulated network, the disk, and the
//! adoption of sockets made outside the stand-in.
//!
//! They are stateless entry points (their state lives in each run), so the first
//! registration stands for the life of the process and later ones are ignored.

use std::sync::OnceLock;

use crate::fs::Disk;
use crate::net::{AdoptSocket, Network};

static NETWORK: OnceLock<&'static dyn Network> = OnceLock::new();
static DISK: OnceLock<&'static dyn Disk> = OnceLock::new();
static ADOPT: OnceLock<AdoptSocket> = OnceLock::new();

/// Registers the simulated network (the first registration wins).
pub fn register_network(network: &'static dyn Network) {
    let _ = NETWORK.set(network);
}

/// Registers the simulated disk (the first registration wins).
pub fn register_disk(disk: &'static dyn Disk) {
    let _ = DISK.set(disk);
}

/// Registers how to adopt a socket made outside the stand-in (the first registration wins).
pub fn register_socket_adopter(adopt: AdoptSocket) {
    let _ = ADOPT.set(adopt);
}

/// The simulated network, if registered.
///
/// ```
/// // Only the `crashtest` facade registers one.
/// assert!(crashtest_hooks::network().is_none());
/// ```
pub fn network() -> Option<&'static dyn Network> {
    NETWORK.get().copied()
}

/// The simulated disk, if registered.
///
/// ```
/// assert!(crashtest_hooks::disk().is_none());
/// ```
pub fn disk() -> Option<&'static dyn Disk> {
    DISK.get().copied()
}

/// The registered socket adopter, if any.
///
/// ```
/// // Without one, the stand-in asks the socket itself how it was set up.
/// assert!(crashtest_hooks::socket_adopter().is_none());
/// ```
pub fn socket_adopter() -> Option<AdoptSocket> {
    ADOPT.get().copied()
}
