//! Synchronous calls on the simulated disk, for blocking code: libraries whose storage traits
//! are not async (such as redb's `StorageBackend`: `len`, `read`, `write`, `set_len`,
//! `sync_data`, all `&self`), and storage engines written against `std::fs`, which the
//! determinism guards refuse inside a simulation.
//!
//! The API is `std::fs`'s: a [`File`] with its [`OpenOptions`], and the free functions
//! ([`read`], [`write()`], [`copy`], [`create_dir_all`], [`rename`], [`remove_dir_all`],
//! [`read_dir`], ...), plus [`sync_dir`] for the directory fsync that std spells
//! `File::open(dir)?.sync_all()`.
//!
//! Each call acts at once, without virtual time, on the calling node's disk, under the same
//! durability model and faults as the async API (an unsynced rename can be undone by a
//! crash, an unsynced write torn). Handles hold plain data (node, inode, cursor), so they
//! are `Send + Sync` like std's. Outside a simulation every call is `std::fs`'s.
//!
//! Mutating calls are crash points for [`crate::exhaustive`] too. A synchronous call cannot
//! stop its caller, so if the exploration crashes the node there, the call (and every later
//! call from the dead node) returns `EIO`, and the task goes down with its node at its next
//! `.await`.

mod file;
mod ops;

pub use file::{File, OpenOptions};
pub use ops::{
    DirEntry, ReadDir, Space, copy, create_dir, create_dir_all, create_dir_all_durably,
    create_dir_with_mode, exists, hard_link, metadata, read, read_dir, read_to_string, remove_dir,
    remove_dir_all, remove_file, rename, set_permissions, space, sync_dir, write,
};

use std::io;

use crate::errors;
use crate::state;

/// The crash point of a synchronous mutation: `EIO` if the exploration crashed the node here.
fn mutation() -> io::Result<()> {
    if state::crash_before_mutation() {
        return Err(errors::io_error());
    }
    Ok(())
}
