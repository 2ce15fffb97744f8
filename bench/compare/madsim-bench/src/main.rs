//! The comparison workloads on madsim: one JSON line per workload, in crashtest-bench's shape.
//!
//! Each workload is written against madsim's own API: `Runtime` per simulation, nodes from
//! `Handle::create_node`, `madsim::net::{TcpListener, TcpStream}` for the network,
//! `madsim::time::sleep` and `madsim::task::spawn`. Its sizes, seeds and random draws come
//! from `compare_common::spec`, shared with the turmoil benchmark and matching crashtest's.
//! madsim's simulator exists only when the crate is compiled with `--cfg madsim`; `run.sh`
//! builds it so, in its own target directory.

#[cfg(not(madsim))]
compile_error!(
    "madsim's simulator needs RUSTFLAGS=\"--cfg madsim\"; build through bench/compare/run.sh"
);

mod workloads;

use std::process::ExitCode;

fn main() -> ExitCode {
    compare_common::report::main("madsim", &workloads::ALL)
}
