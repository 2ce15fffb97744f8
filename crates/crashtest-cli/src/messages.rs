//! Messages in a trace: which network note is a send, which its delivery, and what to call
//! each.
//!
//! The simulated network records packets as notes with integer words and no text; the trace
//! reader decodes them into `crashtest_protocol::NetNote`s, and this module pairs them:
//! - UDP: a `UdpSend` on the sender is matched with the first later `UdpRecv` with the same
//!   addresses and length (first in, first out per key); `UdpDuplicated` makes a send expect
//!   two deliveries and `UdpLost` makes it expect none (drawn as a stub to the destination). A
//!   datagram dropped on arrival (`UdpDropped`, which has no length) ends the oldest send
//!   waiting on that link.
//! - TCP: a `TcpSend` arrives with the first `TcpRecv` on its connection and direction whose
//!   running byte count covers it. A `TcpSyn` pairs with the `TcpAccept` of its connection.
//!
//! Anything else from the network is a plain note. FIFO matching can pair two equal
//! datagrams crossed by reordering the wrong way round; a packet id in both notes would make
//! every pairing exact.

use std::collections::{BTreeMap, VecDeque};

use crashtest_protocol::{NetNote, Note, PackedAddr};

use crate::trace::{Event, Mark};

/// An arrow of the space-time diagram: from a send to where the message ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Arrow {
    /// Position of the send in the event list.
    pub(crate) from: usize,
    pub(crate) to: Arrival,
}

/// Where a message ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// Delivered: the position of the delivery.
    Delivered(usize),
    /// Dropped on arrival (partition, dead node, no socket, full queue): the position of the
    /// drop.
    Dropped(usize),
    /// Lost on the way, towards this node if it is one.
    Lost(Option<usize>),
}

/// The node of an address, as a lane.
fn lane_of(addr: PackedAddr) -> Option<usize> {
    addr.node().map(|node| node as usize)
}

/// The mark of a network note: partitions and clogs, their ends, or traffic.
pub(crate) fn mark(note: NetNote) -> Mark {
    match note {
        NetNote::Partition { .. } | NetNote::ClogLink { .. } | NetNote::ClogNode { .. } => {
            Mark::Partition
        }
        NetNote::Heal { .. } | NetNote::HealAll => Mark::Heal,
        _ => Mark::Message,
    }
}

/// The other node a partition, clog or heal names, by index.
pub(crate) fn peer(note: NetNote) -> Option<usize> {
    match note {
        NetNote::Partition { peer, .. }
        | NetNote::ClogLink { peer, .. }
        | NetNote::Heal { peer } => Some(peer as usize),
        _ => None,
    }
}

/// A short label for a network note; `peer_name` names the node a partition, clog or heal
/// is with (else it is shown by index).
pub(crate) fn label(note: NetNote, peer_name: Option<&str>) -> String {
    note.describe(
        &|peer| peer_name.map_or_else(|| format!("n{peer}"), str::to_owned),
        &crate::duration::short,
    )
}

/// The network note of an event, if it is one.
fn net(event: &Event) -> Option<NetNote> {
    match event.note {
        Some(Note::Net(note)) => Some(note),
        _ => None,
    }
}

/// One direction of a TCP connection: bytes sent so far, and the sends not yet delivered
/// (the byte count at their end, their event).
type Stream = (u64, VecDeque<(u64, usize)>);

/// Pairs sends with deliveries; `events` in trace order.
pub(crate) fn pair(events: &[Event]) -> Vec<Arrow> {
    let mut arrows = Vec::new();
    let mut udp: BTreeMap<(PackedAddr, PackedAddr, u64), VecDeque<usize>> = BTreeMap::new();
    let mut last_udp_send: Option<((PackedAddr, PackedAddr, u64), usize)> = None;
    let mut tcp: BTreeMap<(u64, u8), Stream> = BTreeMap::new();
    let mut syns: BTreeMap<u64, usize> = BTreeMap::new();
    let mut arrive = |from: usize, to: Arrival| arrows.push(Arrow { from, to });
    for (at, event) in events.iter().enumerate() {
        let Some(note) = net(event) else { continue };
        match note {
            NetNote::UdpSend { from, to, len } => {
                udp.entry((from, to, len)).or_default().push_back(at);
                last_udp_send = Some(((from, to, len), at));
            }
            NetNote::UdpDuplicated { .. } => {
                if let Some((key, send)) = last_udp_send {
                    udp.entry(key).or_default().push_back(send);
                }
            }
            NetNote::UdpLost { from, to, len } => {
                if let Some(send) = udp.get_mut(&(from, to, len)).and_then(VecDeque::pop_back) {
                    arrive(send, Arrival::Lost(lane_of(to)));
                }
            }
            NetNote::UdpRecv { from, to, len } => {
                if let Some(send) = udp.get_mut(&(from, to, len)).and_then(VecDeque::pop_front) {
                    arrive(send, Arrival::Delivered(at));
                }
            }
            NetNote::UdpDropped { from, to, .. } => {
                let oldest = udp
                    .iter_mut()
                    .filter(|(key, queue)| (key.0, key.1) == (from, to) && !queue.is_empty())
                    .min_by_key(|(_, queue)| queue.front().copied());
                if let Some(send) = oldest.and_then(|(_, queue)| queue.pop_front()) {
                    arrive(send, Arrival::Dropped(at));
                }
            }
            NetNote::TcpSend {
                conn, side, bytes, ..
            } => {
                let (sent, waiting) = tcp.entry((conn, side)).or_default();
                *sent += u64::from(bytes);
                waiting.push_back((*sent, at));
            }
            NetNote::TcpRecv {
                conn,
                dir,
                delivered,
            } => {
                if let Some((_, waiting)) = tcp.get_mut(&(conn, dir)) {
                    while let Some(&(end, send)) = waiting.front() {
                        if end > delivered {
                            break;
                        }
                        waiting.pop_front();
                        arrive(send, Arrival::Delivered(at));
                    }
                }
            }
            NetNote::TcpSyn { conn, .. } => {
                syns.insert(conn, at);
            }
            NetNote::TcpAccept { conn, .. } => {
                if let Some(syn) = syns.remove(&conn) {
                    arrive(syn, Arrival::Delivered(at));
                }
            }
            _ => {}
        }
    }
    arrows.sort_by_key(|arrow| arrow.from);
    arrows
}

/// Whether an event is a datagram dropped or lost.
pub(crate) fn is_drop(event: &Event) -> bool {
    net(event).is_some_and(NetNote::is_drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashtest_protocol::{TraceKind, UdpDrop};

    fn note(index: u64, lane: usize, note: NetNote) -> Event {
        Event {
            index,
            time_ns: index,
            actor: lane,
            lane,
            kind: TraceKind::Note,
            note: Some(Note::Net(note)),
            what: String::new(),
            peer_name: None,
        }
    }

    fn addr(node: u32) -> PackedAddr {
        PackedAddr::pack(format!("10.0.0.{node}:7000").parse().unwrap())
    }

    #[test]
    fn datagrams_pair_first_in_first_out_and_lost_ones_get_a_stub() {
        let (from, to) = (addr(1), addr(2));
        let events = [
            note(0, 1, NetNote::UdpSend { from, to, len: 64 }),
            note(1, 1, NetNote::UdpSend { from, to, len: 64 }),
            note(2, 1, NetNote::UdpLost { from, to, len: 64 }),
            note(3, 2, NetNote::UdpRecv { from, to, len: 64 }),
        ];
        let arrows = pair(&events);
        assert_eq!(
            arrows,
            [
                Arrow {
                    from: 0,
                    to: Arrival::Delivered(3)
                },
                Arrow {
                    from: 1,
                    to: Arrival::Lost(Some(2))
                },
            ]
        );
        assert_eq!(
            label(NetNote::UdpSend { from, to, len: 64 }, None),
            "udp send 64B to n2:7000"
        );
        assert_eq!(mark(NetNote::UdpSend { from, to, len: 64 }), Mark::Message);
    }

    #[test]
    fn partitions_clogs_and_heals_get_their_own_marks_and_name_the_other_node() {
        let cut = NetNote::Partition {
            peer: 2,
            both: true,
        };
        assert_eq!(
            (mark(cut), label(cut, Some("db"))),
            (Mark::Partition, "PARTITION with db, both ways".to_owned())
        );
        assert_eq!(label(cut, None), "PARTITION with n2, both ways");
        let clog = NetNote::ClogLink {
            peer: 3,
            until_ns: 1_500_000_000,
        };
        assert_eq!(
            (mark(clog), label(clog, Some("cache"))),
            (
                Mark::Partition,
                "CLOG link with cache until 1.5s".to_owned()
            )
        );
        assert_eq!(peer(clog), Some(3));
        assert_eq!(mark(NetNote::HealAll), Mark::Heal);
    }

    #[test]
    fn a_datagram_dropped_on_arrival_ends_the_oldest_send_on_its_link() {
        let (from, to) = (addr(1), addr(2));
        let cut = NetNote::UdpDropped {
            from,
            to,
            why: UdpDrop::Cut,
        };
        let events = [
            note(0, 1, NetNote::UdpSend { from, to, len: 8 }),
            note(1, 1, NetNote::UdpSend { from, to, len: 9 }),
            note(2, 2, cut),
            note(3, 2, NetNote::UdpRecv { from, to, len: 9 }),
        ];
        let targets: Vec<Arrival> = pair(&events).iter().map(|a| a.to).collect();
        assert_eq!(targets, [Arrival::Dropped(2), Arrival::Delivered(3)]);
        assert_eq!(label(cut, None), "udp DROPPED (cut) from n1:7000");
        assert!(is_drop(&events[2]) && !is_drop(&events[3]));
    }

    #[test]
    fn a_duplicated_datagram_arrives_twice() {
        let (from, to) = (addr(1), addr(2));
        let events = [
            note(0, 1, NetNote::UdpSend { from, to, len: 8 }),
            note(1, 1, NetNote::UdpDuplicated { from, to, len: 8 }),
            note(2, 2, NetNote::UdpRecv { from, to, len: 8 }),
            note(3, 2, NetNote::UdpRecv { from, to, len: 8 }),
        ];
        let targets: Vec<Arrival> = pair(&events).iter().map(|a| a.to).collect();
        assert_eq!(targets, [Arrival::Delivered(2), Arrival::Delivered(3)]);
    }

    #[test]
    fn stream_bytes_arrive_with_the_delivery_that_covers_them() {
        let send = |side, bytes| NetNote::TcpSend {
            conn: 5,
            side,
            bytes,
            arrival_ns: 0,
        };
        let recv = |dir, delivered| NetNote::TcpRecv {
            conn: 5,
            dir,
            delivered,
        };
        let events = [
            note(0, 1, send(0, 10)),
            note(1, 1, send(0, 20)),
            note(2, 2, recv(0, 10)),
            note(3, 2, recv(0, 30)),
            note(4, 2, send(1, 4)),
            note(5, 1, recv(1, 4)),
        ];
        let pairs: Vec<(usize, Arrival)> = pair(&events).iter().map(|a| (a.from, a.to)).collect();
        let delivered = Arrival::Delivered;
        assert_eq!(
            pairs,
            [(0, delivered(2)), (1, delivered(3)), (4, delivered(5))]
        );
    }
}
