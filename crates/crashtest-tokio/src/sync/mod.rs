//! `tokio::sync`: tokio's primitives, which need no runtime and wake their waiters in the
//! order they came, so they behave the same inside a simulation; only [`watch`] is
//! switched, because tokio spreads its receivers over wait lists drawn at random.

pub use real::sync::*;

pub mod watch;
