//! The simulated network (work in progress).
