//! Oracles (work in progress).
