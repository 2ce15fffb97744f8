//! Trace notes for components: a note goes into the trace, and so into the fingerprint, on
//! behalf of the calling node or of a named one. The source, words and text are all hashed
//! into the fingerprint; the text is for people, kept with the last few events for a failure
//! report and with every event when the run records its full trace.

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

/// Records an event on behalf of `node`, as [`record_for`] does with the text `write`
/// builds (the same event and fingerprint), but builds it in the trace's own buffer: no
/// string is allocated per note, for components that note every operation.
///
/// ```
/// crashtest_core::Sim::new(1).run(async {
///     let n = crashtest_core::node::create("a", || async {});
///     let ino = 3;
///     crashtest_core::plumbing::notes::record_for_with(n.id(), "disk", [0; 3], |text| {
///         text.push("sync inode ").number(ino);
///     });
/// }).unwrap();
/// ```
pub fn record_for_with(
    node: NodeId,
    source: &'static str,
    words: [u64; 3],
    write: impl FnOnce(&mut Text<'_>),
) {
    assert!(!source.is_empty(), "a note names its source");
    world::with(|w| w.note_with(node, source, words, write));
}

/// A note's text as [`record_for_with`] builds it, in place. Numbers are written by plain
/// appends, not through `core::fmt`: formatting a disk write's note that way took two fifths
/// of the simulated write's instructions.
///
/// ```
/// use crashtest_core::{node::NodeId, plumbing::notes, trace::EventKind, Config, Sim};
///
/// let recorded = Config::default().record_trace(true);
/// let summary = Sim::with_config(1, recorded).run(async {
///     notes::record_for_with(NodeId::SUPERVISOR, "disk", [0; 3], |text| {
///         text.push("write inode ").number(3).push(": ");
///         text.number(512).push(" bytes");
///     });
/// }).unwrap();
/// let trace = summary.trace.unwrap();
/// assert!(trace.iter().any(|event| matches!(
///     &event.kind,
///     EventKind::Note { text, .. } if text == "write inode 3: 512 bytes"
/// )));
/// ```
#[derive(Debug)]
pub struct Text<'a> {
    buf: &'a mut String,
}

impl<'a> Text<'a> {
    /// A builder appending to `buf` (a trace ring slot's string).
    pub(crate) fn new(buf: &'a mut String) -> Text<'a> {
        Text { buf }
    }

    /// Appends `part`.
    ///
    /// ```
    /// # use crashtest_core::{node::NodeId, plumbing::notes, trace::EventKind, Config, Sim};
    /// # let summary = Sim::with_config(1, Config::default().record_trace(true)).run(async {
    /// notes::record_for_with(NodeId::SUPERVISOR, "disk", [0; 3], |text| {
    ///     text.push("sync ").push("directory");
    /// });
    /// # }).unwrap();
    /// # assert!(summary.trace.unwrap().iter().any(|e| matches!(&e.kind,
    /// #     EventKind::Note { text, .. } if text == "sync directory")));
    /// ```
    #[inline]
    pub fn push(&mut self, part: &str) -> &mut Self {
        let before = self.buf.len();
        self.buf.push_str(part);
        debug_assert_eq!(
            self.buf.len(),
            before + part.len(),
            "a part is appended whole"
        );
        self
    }

    /// Appends `n` in decimal, as `Display` writes it.
    ///
    /// ```
    /// # use crashtest_core::{node::NodeId, plumbing::notes, trace::EventKind, Config, Sim};
    /// # let summary = Sim::with_config(1, Config::default().record_trace(true)).run(async {
    /// notes::record_for_with(NodeId::SUPERVISOR, "disk", [0; 3], |text| {
    ///     text.push("inode ").number(0).push(" of ").number(u64::MAX);
    /// });
    /// # }).unwrap();
    /// # assert!(summary.trace.unwrap().iter().any(|e| matches!(&e.kind,
    /// #     EventKind::Note { text, .. } if text == "inode 0 of 18446744073709551615")));
    /// ```
    #[inline]
    pub fn number(&mut self, n: u64) -> &mut Self {
        let before = self.buf.len();
        self.buf.push_str(itoa::Buffer::new().format(n));
        // u64::MAX has twenty digits.
        debug_assert!(
            (1..=20).contains(&(self.buf.len() - before)),
            "a number is one to twenty digits"
        );
        self
    }
}
