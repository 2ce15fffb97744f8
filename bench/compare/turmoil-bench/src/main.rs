//! The comparison workloads on turmoil: one JSON line per workload, in crashtest-bench's
//! shape.
//!
//! Each workload is written the way turmoil's users write simulations: a `turmoil::Sim` per
//! simulation from `turmoil::Builder`, hosts and clients registered with `sim.host` and
//! `sim.client`, `turmoil::net::{TcpListener, TcpStream}` for the network, and tokio's own
//! `time::sleep` and `task::spawn_local` (turmoil runs each host on a paused tokio runtime).
//! Sizes, seeds and random draws come from `compare_common::spec`, shared with the madsim
//! benchmark and matching crashtest's.

mod workloads;

use std::process::ExitCode;

fn main() -> ExitCode {
    compare_common::report::main("turmoil", &workloads::ALL)
}
