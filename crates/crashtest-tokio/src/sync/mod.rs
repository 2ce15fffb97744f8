//! `tokio::sync`: tokio's primitives, which need no runtime and wake their waiters in the
//! order they came, so they behave the same inside a simulation. Two are switched: [`watch`],
//! because tokio spreads its receivers over wait lists drawn at random, and [`mpsc`]'s
//! bounded sender, whose `send_timeout` waits under tokio's timer.

pub use real::sync::*;

pub mod mpsc;
pub mod watch;
