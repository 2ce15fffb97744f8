//! The oracles on small systems with planted bugs: a replicated register with a stale read
//! (linearizability), a client that never retries after a partition (liveness), and a
//! storage format changed without compatibility (upgrade).

mod liveness;
mod register;
mod upgrade;
