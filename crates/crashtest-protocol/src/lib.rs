//! The protocol between a `#[crashtest::test]` binary and the `crashtest` command-line tool,
//! defined once for both sides.
//!
//! A test binary is a worker: the tool starts it with environment variables ([`env`]) that
//! say which seeds to run and how, and reads back what it writes: one results line per
//! finished seed ([`results`]) and, on request, every event of a run as trace lines
//! ([`trace`]). Simulator components write *notes* into the trace as a source name and three
//! integer words (the form the fingerprint hashes); [`notes`] gives each component's notes a
//! type with one encoding and one decoding, so a writer and a reader can never disagree on
//! what a word means.
//!
//! This crate depends on serde only: the runner, the simulated network and disk, and the tool
//! all use it, and none of them needs the others to speak it.
//!
//! Invariants:
//! - Every type here serializes to the same JSON on every build: field names and order,
//!   status and kind names, and note sources and words are fixed, because results files and
//!   traces outlive the binaries that wrote them.
//! - `decode(encode(x)) == x` for every note; a source or word pattern no note encodes to
//!   decodes to `None`, never to a wrong note.

pub mod code;
pub mod describe;
pub mod env;
pub mod notes;
pub mod reproduce;
pub mod results;
pub mod trace;

pub use notes::{DiskNote, FaultNote, NetNote, Note, PackedAddr, UdpDrop};
pub use results::{CoverageLine, FaultLine, Header, SeedResult, Signature, Status};
pub use trace::{TraceKind, TraceLine};
