//! Fault orchestration: what goes wrong in a run, and when, drawn from the seed.
//!
//! The simulator's components offer faults one at a time (a kill, a partition, a clog, a
//! clock jump); this crate decides when to use them. [`nemesis::Nemesis`] runs a schedule of
//! process, network and clock faults for the rest of a run, each undone after a while, within
//! bounds a correct cluster must survive, and may run random partitions and random clogging
//! alongside ([`nemesis::RandomPartitions`], [`nemesis::RandomClogging`]); [`swarm::Profile`]
//! draws, per seed, which kinds of fault are on and how hard they hit (swarm testing), and
//! installs them.
//!
//! Layout: `nemesis` (the builder and its action loop), `patterns` (faults drawn together
//! at the moments a program hints or a restart makes), `random` (random partitions and
//! clogging), `split` (the one partitioning engine both use), `swarm` (per-seed profiles).
//!
//! Every fault goes through the run's fault ledger (`crashtest_core::fault::inject`), so it
//! is numbered, listed in a failure report and can be masked by a minimizer; after the run
//! heals, no new fault starts.

pub mod nemesis;
mod patterns;
mod random;
mod split;
pub mod swarm;
