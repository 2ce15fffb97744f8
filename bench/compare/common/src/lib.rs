//! What the madsim and turmoil comparison benchmarks share, so that both do the same logical
//! work and report it in the same shape as `crashtest-bench`.
//!
//! [`spec`] fixes the workload sizes, the simulation seeds, the link latency, the message
//! frame and the workload generator; [`report`] parses the command line, times the runs and
//! prints one JSON line per workload. Neither knows about any simulator: each benchmark
//! binary expresses the workloads with its own simulator's API.

pub mod report;
pub mod spec;
