//! `tokio::io`: tokio's traits, helpers and adapters, which need no runtime and behave the
//! same inside a simulation; only the process's standard streams are switched.
//!
//! tokio's `stdin`, `stdout` and `stderr` do their blocking reads and writes on the
//! runtime's blocking threads, which a simulation does not have, and a simulated node has no
//! terminal: they are refused inside a simulation (log with `println!`, `eprintln!` or
//! `tracing`, which write synchronously).

pub use real::io::*;

#[cfg(feature = "io-std")]
use crate::seam;

#[cfg(feature = "io-std")]
macro_rules! standard_stream {
    ($($(#[$attr:meta])* $name:ident -> $ty:ident;)*) => {$(
        $(#[$attr])*
        #[track_caller]
        pub fn $name() -> $ty {
            if seam::sim().is_some() {
                seam::refuse(
                    concat!("tokio::io::", stringify!($name)),
                    "a simulated node has no terminal; log with println!, eprintln! or tracing",
                );
            }
            real::io::$name()
        }
    )*};
}

#[cfg(feature = "io-std")]
standard_stream! {
    /// The process's standard input, like `tokio::io::stdin`; refused inside a simulation.
    stdin -> Stdin;
    /// The process's standard output, like `tokio::io::stdout`; refused inside a simulation.
    stdout -> Stdout;
    /// The process's standard error, like `tokio::io::stderr`; refused inside a simulation.
    stderr -> Stderr;
}
