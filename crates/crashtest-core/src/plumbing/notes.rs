//! Trace notes for components: a note goes into the trace, and so into the fingerprint, on
//! behalf of the calling node or of a named one. The words are the note's identity (hashed);
//! the text is for people and is kept only when the run records its full trace.

use std::fmt;

use crate::node::NodeId;
use crate::world;

/// Records an event in the trace (and so in the fingerprint) of the running simulation.
///
/// ```
/// crashtest_core::Sim::new(1).run(async {
///     crashtest_core::plumbing::notes::record("net", [1, 2, 0], "packet dropped".into());
/// }).unwrap();
/// ```
pub fn record(source: &'static str, words: [u64; 3], text: String) {
    assert!(!source.is_empty(), "a note names its source");
    world::with(|w| w.note(w.current_node(), source, words, text));
}

/// Records an event on behalf of `node` (for events that happen between polls, such as a
/// packet arriving).
///
/// ```
/// crashtest_core::Sim::new(1).run(async {
///     let n = crashtest_core::node::create("a", || async {});
///     crashtest_core::plumbing::notes::record_for(n.id(), "net", [0; 3], "arrived".into());
/// }).unwrap();
/// ```
pub fn record_for(node: NodeId, source: &'static str, words: [u64; 3], text: String) {
    assert!(!source.is_empty(), "a note names its source");
    world::with(|w| w.note(node, source, words, text));
}

/// Records an event on behalf of `node`, as [`record_for`] does with `text.to_string()`
/// (the same event and fingerprint), but formats the text into the trace's own buffer: no
/// string is allocated per note, for components that note every operation.
///
/// ```
/// crashtest_core::Sim::new(1).run(async {
///     let n = crashtest_core::node::create("a", || async {});
///     let ino = 3;
///     crashtest_core::plumbing::notes::record_for_fmt(n.id(), "disk", [0; 3], format_args!("sync inode {ino}"));
/// }).unwrap();
/// ```
pub fn record_for_fmt(
    node: NodeId,
    source: &'static str,
    words: [u64; 3],
    text: fmt::Arguments<'_>,
) {
    assert!(!source.is_empty(), "a note names its source");
    world::with(|w| w.note_fmt(node, source, words, text));
}
