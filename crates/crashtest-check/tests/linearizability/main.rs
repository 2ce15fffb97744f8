//! Integration tests of the linearizability checker: classic histories, unknown outcomes, the
//! smallest window, histories recorded inside a simulation, and randomized linearizable
//! histories.

mod classic;
mod randomized;
mod simulation;
mod support;
mod unknown;
mod window;
