//! The simulated disk (work in progress).
