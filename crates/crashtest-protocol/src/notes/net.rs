//! The simulated network's notes: one per packet sent, delivered, lost or dropped, per
//! connection step, and per partition, clog and heal.
//!
//! Packet notes carry integers only (no text), so recording one costs no formatting. A
//! connection (`conn`) and a socket or listener are the network's ids; a direction or side is
//! `0` for the connecting end and `1` for the accepting end; times are virtual nanoseconds;
//! node indexes are `NodeId::index`.

use std::fmt;

use super::PackedAddr;

/// Why a datagram was dropped on arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum UdpDrop {
    /// A partition cut the link.
    Cut,
    /// The destination node is dead.
    Dead,
    /// No socket is bound to the destination port.
    Unbound,
    /// The destination socket's receive queue is full.
    Overflow,
}

impl UdpDrop {
    /// Every reason, in encoding order.
    pub const ALL: [UdpDrop; 4] = [
        UdpDrop::Cut,
        UdpDrop::Dead,
        UdpDrop::Unbound,
        UdpDrop::Overflow,
    ];

    /// The reason in one word: `cut`, `dead`, `unbound` or `overflow`.
    pub fn name(self) -> &'static str {
        match self {
            UdpDrop::Cut => "cut",
            UdpDrop::Dead => "dead",
            UdpDrop::Unbound => "unbound",
            UdpDrop::Overflow => "overflow",
        }
    }
}

/// A note of the simulated network.
///
/// ```
/// use crashtest_protocol::{NetNote, PackedAddr};
/// let from = PackedAddr::pack("10.0.0.1:9000".parse().unwrap());
/// let to = PackedAddr::pack("10.0.0.2:9000".parse().unwrap());
/// let sent = NetNote::UdpSend { from, to, len: 64 };
/// assert_eq!(sent.encode(), ("net.udp.send", [from.0, to.0, 64]));
/// assert_eq!(NetNote::decode("net.udp.send", [from.0, to.0, 64]), Some(sent));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetNote {
    /// A UDP socket was bound.
    UdpBind {
        /// The socket.
        socket: u64,
        /// Its address.
        local: PackedAddr,
    },
    /// A datagram was sent (recorded on the sender).
    UdpSend {
        /// Sender.
        from: PackedAddr,
        /// Destination.
        to: PackedAddr,
        /// Payload bytes.
        len: u64,
    },
    /// A datagram was lost on its way (after its `UdpSend`).
    UdpLost {
        /// Sender.
        from: PackedAddr,
        /// Destination.
        to: PackedAddr,
        /// Payload bytes.
        len: u64,
    },
    /// A datagram will arrive twice (after its `UdpSend`).
    UdpDuplicated {
        /// Sender.
        from: PackedAddr,
        /// Destination.
        to: PackedAddr,
        /// Payload bytes.
        len: u64,
    },
    /// A datagram waits behind a clog.
    UdpClogged {
        /// Sender.
        from: PackedAddr,
        /// Destination.
        to: PackedAddr,
        /// When the clog lifts.
        until_ns: u64,
    },
    /// A datagram was dropped on arrival (recorded on the destination, or on the sender when
    /// the destination is no node).
    UdpDropped {
        /// Sender.
        from: PackedAddr,
        /// Destination.
        to: PackedAddr,
        /// Why.
        why: UdpDrop,
    },
    /// A datagram was delivered to a socket's queue (recorded on the receiver).
    UdpRecv {
        /// Sender.
        from: PackedAddr,
        /// Destination.
        to: PackedAddr,
        /// Payload bytes.
        len: u64,
    },
    /// A TCP listener was bound.
    TcpListen {
        /// The listener.
        listener: u64,
        /// Its address.
        local: PackedAddr,
    },
    /// A connect sent its SYN.
    TcpSyn {
        /// The connection.
        conn: u64,
        /// The address connected to.
        remote: PackedAddr,
        /// When the SYN arrives.
        at_ns: u64,
    },
    /// A SYN was lost (the destination is cut off or dead) and will be sent again.
    TcpSynLost {
        /// The connection.
        conn: u64,
        /// SYNs sent so far.
        attempts: u64,
        /// When the next one goes.
        retry_ns: u64,
    },
    /// A connect was refused (no listener).
    TcpRefused {
        /// The connection.
        conn: u64,
        /// The address connected to.
        remote: PackedAddr,
        /// When the refusal arrives.
        at_ns: u64,
    },
    /// A listener queued a connection (recorded on the server).
    TcpAccept {
        /// The connection.
        conn: u64,
        /// The listener.
        listener: u64,
        /// When the connecting end learns of it.
        at_ns: u64,
    },
    /// The server's program took a queued connection.
    TcpAccepted {
        /// The connection.
        conn: u64,
        /// The connecting end's address.
        peer: PackedAddr,
    },
    /// Bytes were written to a connection (recorded on the writer).
    TcpSend {
        /// The connection.
        conn: u64,
        /// The writing end (0 or 1).
        side: u8,
        /// Bytes accepted by this write.
        bytes: u32,
        /// When they arrive.
        arrival_ns: u64,
    },
    /// A connection's data waits behind a clog.
    TcpClogged {
        /// The connection.
        conn: u64,
        /// The direction held (the sending end).
        dir: u8,
        /// When the clog lifts.
        until_ns: u64,
    },
    /// A connection's data waits behind a partition.
    TcpStalled {
        /// The connection.
        conn: u64,
        /// The direction held (the sending end).
        dir: u8,
        /// When the sender gives up.
        deadline_ns: u64,
    },
    /// Bytes of a connection arrived (recorded on the receiver).
    TcpRecv {
        /// The connection.
        conn: u64,
        /// The direction (the sending end).
        dir: u8,
        /// Bytes delivered in this direction so far.
        delivered: u64,
    },
    /// A connection timed out behind a partition.
    TcpTimeout {
        /// The connection.
        conn: u64,
        /// The direction that gave up (the sending end).
        dir: u8,
    },
    /// An end closed its connection.
    TcpFin {
        /// The connection.
        conn: u64,
        /// The closing end.
        side: u8,
        /// When the FIN arrives.
        at_ns: u64,
    },
    /// An end reset its connection.
    TcpRst {
        /// The connection.
        conn: u64,
        /// The resetting end.
        side: u8,
        /// When the RST arrives.
        at_ns: u64,
    },
    /// The links to a node were cut (recorded on the node cut from it).
    Partition {
        /// The other node.
        peer: u32,
        /// Both directions, or only from the recording node to `peer`.
        both: bool,
    },
    /// The cut links to a node were healed.
    Heal {
        /// The other node.
        peer: u32,
    },
    /// Every partition and clog ended.
    HealAll,
    /// Every link of the recording node is held.
    ClogNode {
        /// When the clog lifts.
        until_ns: u64,
    },
    /// The link between the recording node and `peer` is held, both ways.
    ClogLink {
        /// The other node.
        peer: u32,
        /// When the clog lifts.
        until_ns: u64,
    },
    /// A swizzle began: nodes clogged one by one, then unclogged in another order.
    Swizzle {
        /// How many nodes it clogs.
        nodes: u64,
    },
}

fn bit(word: u64) -> Option<u8> {
    (word <= 1).then_some(word as u8)
}

fn index(word: u64) -> Option<u32> {
    u32::try_from(word).ok()
}

fn drop_source(why: UdpDrop) -> &'static str {
    match why {
        UdpDrop::Cut => "net.udp.cut",
        UdpDrop::Dead => "net.udp.dead",
        UdpDrop::Unbound => "net.udp.unbound",
        UdpDrop::Overflow => "net.udp.overflow",
    }
}

impl NetNote {
    /// The source and words the note is recorded as.
    ///
    /// # Panics
    ///
    /// Panics if a side or direction is not 0 or 1.
    #[inline]
    pub fn encode(self) -> (&'static str, [u64; 3]) {
        let side = |s: u8| {
            assert!(s <= 1, "a connection has ends 0 and 1, not {s}");
            u64::from(s)
        };
        match self {
            NetNote::UdpBind { socket, local } => ("net.udp.bind", [socket, local.0, 0]),
            NetNote::UdpSend { from, to, len } => ("net.udp.send", [from.0, to.0, len]),
            NetNote::UdpLost { from, to, len } => ("net.udp.lost", [from.0, to.0, len]),
            NetNote::UdpDuplicated { from, to, len } => ("net.udp.duplicated", [from.0, to.0, len]),
            NetNote::UdpClogged { from, to, until_ns } => {
                ("net.udp.clogged", [from.0, to.0, until_ns])
            }
            NetNote::UdpDropped { from, to, why } => (drop_source(why), [from.0, to.0, 0]),
            NetNote::UdpRecv { from, to, len } => ("net.udp.recv", [from.0, to.0, len]),
            NetNote::TcpListen { listener, local } => ("net.tcp.listen", [listener, local.0, 0]),
            NetNote::TcpSyn {
                conn,
                remote,
                at_ns,
            } => ("net.tcp.syn", [conn, remote.0, at_ns]),
            NetNote::TcpSynLost {
                conn,
                attempts,
                retry_ns,
            } => ("net.tcp.syn_lost", [conn, attempts, retry_ns]),
            NetNote::TcpRefused {
                conn,
                remote,
                at_ns,
            } => ("net.tcp.refused", [conn, remote.0, at_ns]),
            NetNote::TcpAccept {
                conn,
                listener,
                at_ns,
            } => ("net.tcp.accept", [conn, listener, at_ns]),
            NetNote::TcpAccepted { conn, peer } => ("net.tcp.accepted", [conn, peer.0, 0]),
            NetNote::TcpSend {
                conn,
                side: s,
                bytes,
                arrival_ns,
            } => (
                "net.tcp.send",
                [conn, (side(s) << 32) | u64::from(bytes), arrival_ns],
            ),
            NetNote::TcpClogged {
                conn,
                dir,
                until_ns,
            } => ("net.tcp.clogged", [conn, side(dir), until_ns]),
            NetNote::TcpStalled {
                conn,
                dir,
                deadline_ns,
            } => ("net.tcp.stalled", [conn, side(dir), deadline_ns]),
            NetNote::TcpRecv {
                conn,
                dir,
                delivered,
            } => ("net.tcp.recv", [conn, side(dir), delivered]),
            NetNote::TcpTimeout { conn, dir } => ("net.tcp.timeout", [conn, side(dir), 0]),
            NetNote::TcpFin {
                conn,
                side: s,
                at_ns,
            } => ("net.tcp.fin", [conn, side(s), at_ns]),
            NetNote::TcpRst {
                conn,
                side: s,
                at_ns,
            } => ("net.tcp.rst", [conn, side(s), at_ns]),
            NetNote::Partition { peer, both } => {
                ("net.partition", [u64::from(peer), u64::from(both), 0])
            }
            NetNote::Heal { peer } => ("net.heal", [u64::from(peer), 0, 0]),
            NetNote::HealAll => ("net.heal_all", [0; 3]),
            NetNote::ClogNode { until_ns } => ("net.clog_node", [until_ns, 0, 0]),
            NetNote::ClogLink { peer, until_ns } => {
                ("net.clog_link", [u64::from(peer), until_ns, 0])
            }
            NetNote::Swizzle { nodes } => ("net.swizzle", [nodes, 0, 0]),
        }
    }

    /// The note recorded as `source` with `words`, if the network records one so.
    pub fn decode(source: &str, words: [u64; 3]) -> Option<NetNote> {
        let [a, b, c] = words;
        let (pa, pb) = (PackedAddr(a), PackedAddr(b));
        let zero = |w: u64| (w == 0).then_some(());
        let note = match source.strip_prefix("net.")? {
            "udp.bind" => {
                zero(c)?;
                NetNote::UdpBind {
                    socket: a,
                    local: pb,
                }
            }
            "udp.send" => NetNote::UdpSend {
                from: pa,
                to: pb,
                len: c,
            },
            "udp.lost" => NetNote::UdpLost {
                from: pa,
                to: pb,
                len: c,
            },
            "udp.duplicated" => NetNote::UdpDuplicated {
                from: pa,
                to: pb,
                len: c,
            },
            "udp.clogged" => NetNote::UdpClogged {
                from: pa,
                to: pb,
                until_ns: c,
            },
            "udp.recv" => NetNote::UdpRecv {
                from: pa,
                to: pb,
                len: c,
            },
            "tcp.listen" => {
                zero(c)?;
                NetNote::TcpListen {
                    listener: a,
                    local: pb,
                }
            }
            "tcp.syn" => NetNote::TcpSyn {
                conn: a,
                remote: pb,
                at_ns: c,
            },
            "tcp.syn_lost" => NetNote::TcpSynLost {
                conn: a,
                attempts: b,
                retry_ns: c,
            },
            "tcp.refused" => NetNote::TcpRefused {
                conn: a,
                remote: pb,
                at_ns: c,
            },
            "tcp.accept" => NetNote::TcpAccept {
                conn: a,
                listener: b,
                at_ns: c,
            },
            "tcp.accepted" => {
                zero(c)?;
                NetNote::TcpAccepted { conn: a, peer: pb }
            }
            "tcp.send" => NetNote::TcpSend {
                conn: a,
                side: bit(b >> 32)?,
                bytes: (b & 0xffff_ffff) as u32,
                arrival_ns: c,
            },
            "tcp.clogged" => NetNote::TcpClogged {
                conn: a,
                dir: bit(b)?,
                until_ns: c,
            },
            "tcp.stalled" => NetNote::TcpStalled {
                conn: a,
                dir: bit(b)?,
                deadline_ns: c,
            },
            "tcp.recv" => NetNote::TcpRecv {
                conn: a,
                dir: bit(b)?,
                delivered: c,
            },
            "tcp.timeout" => {
                zero(c)?;
                NetNote::TcpTimeout {
                    conn: a,
                    dir: bit(b)?,
                }
            }
            "tcp.fin" => NetNote::TcpFin {
                conn: a,
                side: bit(b)?,
                at_ns: c,
            },
            "tcp.rst" => NetNote::TcpRst {
                conn: a,
                side: bit(b)?,
                at_ns: c,
            },
            "partition" => {
                zero(c)?;
                NetNote::Partition {
                    peer: index(a)?,
                    both: bit(b)? == 1,
                }
            }
            "heal" => {
                zero(b)?;
                zero(c)?;
                NetNote::Heal { peer: index(a)? }
            }
            "heal_all" => {
                words.iter().try_for_each(|&w| zero(w))?;
                NetNote::HealAll
            }
            "clog_node" => {
                zero(b)?;
                zero(c)?;
                NetNote::ClogNode { until_ns: a }
            }
            "clog_link" => {
                zero(c)?;
                NetNote::ClogLink {
                    peer: index(a)?,
                    until_ns: b,
                }
            }
            "swizzle" => {
                zero(b)?;
                zero(c)?;
                NetNote::Swizzle { nodes: a }
            }
            dropped => {
                let why = UdpDrop::ALL
                    .into_iter()
                    .find(|why| drop_source(*why).strip_prefix("net.") == Some(dropped))?;
                zero(c)?;
                NetNote::UdpDropped {
                    from: pa,
                    to: pb,
                    why,
                }
            }
        };
        Some(note)
    }

    /// Whether the note is a datagram lost or dropped.
    pub fn is_drop(self) -> bool {
        matches!(self, NetNote::UdpLost { .. } | NetNote::UdpDropped { .. })
    }
}

impl NetNote {
    /// The note in a few words, as a failure report and `crashtest replay` show it
    /// (`tcp send 10B on c2`, `PARTITION with n3, both ways`): `peer` names the node a
    /// partition, clog or heal is with, and `at` a virtual time in nanoseconds.
    ///
    /// ```
    /// use crashtest_protocol::NetNote;
    /// let send = NetNote::TcpSend { conn: 2, side: 0, bytes: 10, arrival_ns: 5 };
    /// assert_eq!(send.to_string(), "tcp send 10B on c2");
    /// let heal = NetNote::Heal { peer: 3 };
    /// assert_eq!(heal.describe(&|_| "db-1".to_owned(), &|ns| format!("{ns}ns")), "HEAL with db-1");
    /// ```
    pub fn describe(&self, peer: &dyn Fn(u32) -> String, at: &dyn Fn(u64) -> String) -> String {
        match *self {
            NetNote::UdpSend { to, len, .. } => format!("udp send {len}B to {to}"),
            NetNote::UdpRecv { from, len, .. } => format!("udp recv {len}B from {from}"),
            NetNote::UdpLost { to, len, .. } => format!("udp LOST {len}B to {to}"),
            NetNote::UdpBind { local, .. } => format!("udp bind {local}"),
            NetNote::UdpDropped { from, why, .. } => {
                format!("udp DROPPED ({}) from {from}", why.name())
            }
            NetNote::UdpDuplicated { to, .. } => format!("udp duplicated to {to}"),
            NetNote::UdpClogged { to, .. } => format!("udp clogged to {to}"),
            NetNote::TcpSend { conn, bytes, .. } => format!("tcp send {bytes}B on c{conn}"),
            NetNote::TcpRecv {
                conn, delivered, ..
            } => format!("tcp recv on c{conn} ({delivered}B so far)"),
            NetNote::TcpListen { local, .. } => format!("tcp listen {local}"),
            NetNote::TcpSyn { conn, remote, .. } => format!("tcp syn c{conn} to {remote}"),
            NetNote::TcpSynLost { conn, .. } => format!("tcp syn lost c{conn}"),
            NetNote::TcpRefused { conn, .. } => format!("tcp refused c{conn}"),
            NetNote::TcpAccept { conn, .. } => format!("tcp accept c{conn}"),
            NetNote::TcpAccepted { conn, .. } => format!("tcp accepted c{conn}"),
            NetNote::TcpClogged { conn, .. } => format!("tcp clogged c{conn}"),
            NetNote::TcpStalled { conn, .. } => format!("tcp stalled c{conn}"),
            NetNote::TcpTimeout { conn, .. } => format!("tcp timeout c{conn}"),
            NetNote::TcpFin { conn, .. } => format!("tcp fin c{conn}"),
            NetNote::TcpRst { conn, .. } => format!("tcp rst c{conn}"),
            NetNote::Partition {
                peer: p,
                both: true,
            } => {
                format!("PARTITION with {}, both ways", peer(p))
            }
            NetNote::Partition {
                peer: p,
                both: false,
            } => {
                format!("PARTITION to {}, one way", peer(p))
            }
            NetNote::ClogLink { peer: p, until_ns } => {
                format!("CLOG link with {} until {}", peer(p), at(until_ns))
            }
            NetNote::ClogNode { until_ns } => format!("CLOG every link until {}", at(until_ns)),
            NetNote::Heal { peer: p } => format!("HEAL with {}", peer(p)),
            NetNote::HealAll => "HEAL all links".to_owned(),
            NetNote::Swizzle { nodes } => format!("SWIZZLE {nodes} nodes"),
        }
    }
}

/// [`NetNote::describe`] with nodes by index (`n3`) and times as `Duration`s print.
impl fmt::Display for NetNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe(&|peer| format!("n{peer}"), &|ns| {
            format!("{:?}", std::time::Duration::from_nanos(ns))
        }))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn every_note() -> Vec<NetNote> {
        let (from, to) = (PackedAddr(0x0a00_0001_1f40), PackedAddr(0x0a00_0002_1f40));
        let mut notes = vec![
            NetNote::UdpBind {
                socket: 3,
                local: from,
            },
            NetNote::UdpSend { from, to, len: 8 },
            NetNote::UdpLost { from, to, len: 8 },
            NetNote::UdpDuplicated { from, to, len: 8 },
            NetNote::UdpClogged {
                from,
                to,
                until_ns: 9,
            },
            NetNote::UdpRecv { from, to, len: 8 },
            NetNote::TcpListen {
                listener: 4,
                local: to,
            },
            NetNote::TcpSyn {
                conn: 5,
                remote: to,
                at_ns: 10,
            },
            NetNote::TcpSynLost {
                conn: 5,
                attempts: 2,
                retry_ns: 11,
            },
            NetNote::TcpRefused {
                conn: 5,
                remote: to,
                at_ns: 12,
            },
            NetNote::TcpAccept {
                conn: 5,
                listener: 4,
                at_ns: 13,
            },
            NetNote::TcpAccepted {
                conn: 5,
                peer: from,
            },
            NetNote::TcpSend {
                conn: 5,
                side: 1,
                bytes: u32::MAX,
                arrival_ns: 14,
            },
            NetNote::TcpClogged {
                conn: 5,
                dir: 0,
                until_ns: 15,
            },
            NetNote::TcpStalled {
                conn: 5,
                dir: 1,
                deadline_ns: 16,
            },
            NetNote::TcpRecv {
                conn: 5,
                dir: 1,
                delivered: 17,
            },
            NetNote::TcpTimeout { conn: 5, dir: 0 },
            NetNote::TcpFin {
                conn: 5,
                side: 0,
                at_ns: 18,
            },
            NetNote::TcpRst {
                conn: 5,
                side: 1,
                at_ns: 19,
            },
            NetNote::Partition {
                peer: 2,
                both: true,
            },
            NetNote::Partition {
                peer: 2,
                both: false,
            },
            NetNote::Heal { peer: 2 },
            NetNote::HealAll,
            NetNote::ClogNode { until_ns: 20 },
            NetNote::ClogLink {
                peer: 2,
                until_ns: 21,
            },
            NetNote::Swizzle { nodes: 3 },
        ];
        notes.extend(UdpDrop::ALL.map(|why| NetNote::UdpDropped { from, to, why }));
        notes
    }

    #[test]
    fn words_a_note_never_holds_decode_to_nothing() {
        assert_eq!(NetNote::decode("net.partition", [2, 2, 0]), None);
        assert_eq!(NetNote::decode("net.tcp.send", [5, 2 << 32, 0]), None);
        assert_eq!(NetNote::decode("net.heal_all", [1, 0, 0]), None);
        assert_eq!(NetNote::decode("net.udp.gone", [1, 2, 0]), None);
        assert_eq!(NetNote::decode("disk", [1, 2, 0]), None);
    }

    #[test]
    #[should_panic(expected = "ends 0 and 1")]
    fn a_third_end_is_refused() {
        let _ = NetNote::TcpFin {
            conn: 1,
            side: 2,
            at_ns: 0,
        }
        .encode();
    }
}
