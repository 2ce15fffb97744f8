//! Typed trace notes: what the simulator's components record, each with one encoding to the
//! trace's generic form (a source name and three integer words) and one decoding from it.
//!
//! The trace stays generic inside the simulator: a note is `(source, words, text)`, and the
//! fingerprint hashes the source and the words. The types here are the only place that knows
//! which source a note has and what each word means: the network ([`NetNote`]), the disk
//! ([`DiskNote`]) and the fault ledger ([`FaultNote`]) encode with them, and the tool decodes
//! with them ([`Note::decode`]).
//!
//! Invariants: sources never change (a fingerprint must mean the same thing on every build),
//! no two notes share an encoding, and decoding what a note encoded gives that note back.
//! Encoding is a `match` on constants, cheap enough for a note per packet.

mod disk;
mod fault;
mod net;

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

pub use disk::DiskNote;
pub use fault::FaultNote;
pub use net::{NetNote, UdpDrop};

/// A note of any component, as a reader of traces meets it.
///
/// ```
/// use crashtest_protocol::{FaultNote, Note};
/// let (source, words) = FaultNote::Masked { id: 4 }.encode();
/// assert_eq!(Note::decode(source, words), Some(Note::Fault(FaultNote::Masked { id: 4 })));
/// assert_eq!(Note::decode("user", [1, 2, 3]), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Note {
    /// The simulated network's.
    Net(NetNote),
    /// The simulated disk's.
    Disk(DiskNote),
    /// The fault ledger's.
    Fault(FaultNote),
}

impl Note {
    /// The note recorded as `source` with `words`, if a component encodes one so.
    pub fn decode(source: &str, words: [u64; 3]) -> Option<Note> {
        NetNote::decode(source, words)
            .map(Note::Net)
            .or_else(|| DiskNote::decode(source, words).map(Note::Disk))
            .or_else(|| FaultNote::decode(source, words).map(Note::Fault))
    }

    /// The source and words the note is recorded as.
    pub fn encode(self) -> (&'static str, [u64; 3]) {
        match self {
            Note::Net(note) => note.encode(),
            Note::Disk(note) => note.encode(),
            Note::Fault(note) => note.encode(),
        }
    }
}

/// A socket address in one trace word: the IPv4 address above the port (`ip << 16 | port`).
/// IPv6 addresses are loopback in the simulated network, so they pack as `127.0.0.1`.
///
/// ```
/// use crashtest_protocol::PackedAddr;
/// let addr = PackedAddr::pack("10.0.0.3:7000".parse().unwrap());
/// assert_eq!(addr.socket().to_string(), "10.0.0.3:7000");
/// assert_eq!(addr.node(), Some(3));
/// assert_eq!(addr.to_string(), "n3:7000");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PackedAddr(pub u64);

/// The simulated network's first address: node `i` is `10.0.0.0 + i`.
const NODE_BASE: u32 = u32::from_be_bytes([10, 0, 0, 0]);
/// Node indexes that fit in `10.0.0.0/8`.
const NODE_SPAN: u32 = 1 << 24;

impl PackedAddr {
    /// Packs an address.
    #[inline]
    pub fn pack(addr: SocketAddr) -> PackedAddr {
        let ip = match addr {
            SocketAddr::V4(v4) => u32::from(*v4.ip()),
            SocketAddr::V6(_) => u32::from(Ipv4Addr::LOCALHOST),
        };
        PackedAddr((u64::from(ip) << 16) | u64::from(addr.port()))
    }

    /// The address packed.
    pub fn socket(self) -> SocketAddrV4 {
        let ip = Ipv4Addr::from((self.0 >> 16) as u32);
        SocketAddrV4::new(ip, (self.0 & 0xffff) as u16)
    }

    /// The index of the node whose address this is, if it is a node's.
    pub fn node(self) -> Option<u32> {
        let offset = u32::from(*self.socket().ip()).wrapping_sub(NODE_BASE);
        (offset < NODE_SPAN).then_some(offset)
    }
}

impl fmt::Display for PackedAddr {
    /// `n3:7000` for node 3's address, else `ip:port`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.node() {
            Some(node) => write!(f, "n{node}:{}", self.socket().port()),
            None => write!(f, "{}", self.socket()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One note of every kind, with distinct words where a note has any.
    pub(crate) fn every_note() -> Vec<Note> {
        let mut notes: Vec<Note> = net::tests::every_note()
            .into_iter()
            .map(Note::Net)
            .collect();
        notes.extend(disk::tests::every_note().into_iter().map(Note::Disk));
        notes.extend(fault::tests::every_note().into_iter().map(Note::Fault));
        notes
    }

    #[test]
    fn every_note_decodes_to_itself() {
        for note in every_note() {
            let (source, words) = note.encode();
            assert_eq!(
                Note::decode(source, words),
                Some(note),
                "{source} {words:?}"
            );
        }
    }

    #[test]
    fn no_two_notes_share_an_encoding() {
        let mut encoded: Vec<(&str, [u64; 3])> =
            every_note().into_iter().map(Note::encode).collect();
        let count = encoded.len();
        encoded.sort_unstable();
        encoded.dedup();
        assert_eq!(encoded.len(), count);
    }

    #[test]
    fn addresses_outside_the_network_belong_to_no_node() {
        let loopback = PackedAddr::pack("[::1]:80".parse().unwrap());
        assert_eq!(
            (loopback.node(), loopback.to_string().as_str()),
            (None, "127.0.0.1:80")
        );
        let far = PackedAddr::pack("11.0.0.1:1".parse().unwrap());
        assert_eq!(far.node(), None);
        let last = PackedAddr::pack("10.255.255.255:1".parse().unwrap());
        assert_eq!(last.node(), Some(NODE_SPAN - 1));
    }
}
