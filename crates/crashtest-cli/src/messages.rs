//! Messages in a trace: which network note is a send, which its delivery, and what to call
//! each.
//!
//! The simulated network (crashtest-net) records packets as notes with integer words and no
//! text. This module pairs them as that crate records them today:
//! - UDP: `net.udp.send` on the sender and `net.udp.recv` on the receiver, both with words
//!   `[source address, destination address, length]` (an address packed as `ip << 16 | port`).
//!   A send is matched with the first later delivery with the same words (first in, first
//!   out per key); `net.udp.duplicated` makes a send expect two deliveries and `net.udp.lost`
//!   makes it expect none (drawn as a stub to the destination). A datagram dropped on arrival
//!   (`net.udp.cut`, `.dead`, `.unbound`, `.overflow`, recorded on the destination with words
//!   `[source, destination, 0]`: no length) ends the oldest send waiting on that link.
//! - TCP: `net.tcp.send` with words `[connection, side << 32 | bytes, arrival time]` and
//!   `net.tcp.recv` with `[connection, direction, bytes delivered so far]`: a send arrives
//!   with the first delivery on its connection and direction whose running byte count
//!   covers it. `net.tcp.syn` pairs with `net.tcp.accept` of the same connection.
//!
//! Anything else from the network is a plain note. FIFO matching can pair two equal
//! datagrams crossed by reordering the wrong way round; a packet id in both words would make
//! every pairing exact.

use std::collections::{BTreeMap, VecDeque};

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

/// Sources of datagrams dropped on arrival.
const DROPS: [&str; 4] = [
    "net.udp.cut",
    "net.udp.dead",
    "net.udp.unbound",
    "net.udp.overflow",
];

/// The node of a packed address (`10.0.0.i` is node `i`), if it is one.
fn node_of(packed: u64) -> Option<usize> {
    let ip = (packed >> 16) as u32;
    let [a, b, c, d] = ip.to_be_bytes();
    (a == 10).then(|| usize::from(b) << 16 | usize::from(c) << 8 | usize::from(d))
}

/// `n3:7000` for node 3's address, else `ip:port`.
fn address(packed: u64) -> String {
    let port = packed & 0xffff;
    match node_of(packed) {
        Some(node) => format!("n{node}:{port}"),
        None => format!("{}:{port}", std::net::Ipv4Addr::from((packed >> 16) as u32)),
    }
}

/// Whether a network note is a datagram dropped or lost.
pub(crate) fn is_drop(source: &str) -> bool {
    source == "net.udp.lost" || DROPS.contains(&source)
}

/// The mark of a network note: partitions and clogs, their ends, or traffic.
pub(crate) fn mark(source: &str) -> Mark {
    match source {
        "net.partition" | "net.random_partition" | "net.clog_link" | "net.clog_node" => {
            Mark::Partition
        }
        "net.heal" | "net.heal_all" | "net.random_heal" => Mark::Heal,
        _ => Mark::Message,
    }
}

/// A short label for a network note.
pub(crate) fn label(event: &Event) -> String {
    let source = event.source.as_deref().unwrap_or("");
    let [a, b, c] = event.words;
    let name = source
        .strip_prefix("net.")
        .unwrap_or(source)
        .replace('.', " ");
    match source {
        "net.udp.send" => format!("udp send {c}B to {}", address(b)),
        "net.udp.recv" => format!("udp recv {c}B from {}", address(a)),
        "net.udp.lost" => format!("udp LOST {c}B to {}", address(b)),
        "net.udp.bind" => format!("udp bind {}", address(b)),
        _ if DROPS.contains(&source) => {
            let why = source.rsplit('.').next().unwrap_or(source);
            format!("udp DROPPED ({why}) from {}", address(a))
        }
        "net.tcp.send" => format!("tcp send {}B on c{a}", b & 0xffff_ffff),
        "net.tcp.recv" => format!("tcp recv on c{a} ({c}B so far)"),
        "net.partition" if b == 1 => format!("PARTITION with n{a}, both ways"),
        "net.partition" => format!("PARTITION to n{a}, one way"),
        "net.random_partition" => "PARTITION (random)".to_owned(),
        "net.clog_link" => format!("CLOG link to n{a}"),
        "net.clog_node" => "CLOG node".to_owned(),
        "net.heal" => format!("HEAL with n{a}"),
        "net.heal_all" => "HEAL all links".to_owned(),
        "net.random_heal" => "HEAL (random)".to_owned(),
        _ if !event.what.is_empty() && !event.what.ends_with(':') => event.what.clone(),
        _ if source.starts_with("net.tcp.") => format!("{name} c{a}"),
        _ => name,
    }
}

/// One direction of a TCP connection: bytes sent so far, and the sends not yet delivered
/// (the byte count at their end, their event).
type Stream = (u64, VecDeque<(u64, usize)>);

/// Pairs sends with deliveries; `events` in trace order.
pub(crate) fn pair(events: &[Event]) -> Vec<Arrow> {
    let mut arrows = Vec::new();
    let mut udp: BTreeMap<[u64; 3], VecDeque<usize>> = BTreeMap::new();
    let mut last_udp_send: Option<usize> = None;
    let mut tcp: BTreeMap<(u64, u64), Stream> = BTreeMap::new();
    let mut syns: BTreeMap<u64, usize> = BTreeMap::new();
    let mut arrive = |from: usize, to: Arrival| arrows.push(Arrow { from, to });
    for (at, event) in events.iter().enumerate() {
        let [a, b, c] = event.words;
        match event.source.as_deref() {
            Some("net.udp.send") => {
                udp.entry(event.words).or_default().push_back(at);
                last_udp_send = Some(at);
            }
            Some("net.udp.duplicated") => {
                if let Some(send) = last_udp_send {
                    udp.entry(events[send].words).or_default().push_back(send);
                }
            }
            Some("net.udp.lost") => {
                if let Some(send) = udp.get_mut(&event.words).and_then(VecDeque::pop_back) {
                    arrive(send, Arrival::Lost(node_of(b)));
                }
            }
            Some("net.udp.recv") => {
                if let Some(send) = udp.get_mut(&event.words).and_then(VecDeque::pop_front) {
                    arrive(send, Arrival::Delivered(at));
                }
            }
            Some(source) if DROPS.contains(&source) => {
                let oldest = udp
                    .iter_mut()
                    .filter(|(key, queue)| key[..2] == [a, b] && !queue.is_empty())
                    .min_by_key(|(_, queue)| queue.front().copied());
                if let Some(send) = oldest.and_then(|(_, queue)| queue.pop_front()) {
                    arrive(send, Arrival::Dropped(at));
                }
            }
            Some("net.tcp.send") => {
                let (sent, waiting) = tcp.entry((a, b >> 32)).or_default();
                *sent += b & 0xffff_ffff;
                waiting.push_back((*sent, at));
            }
            Some("net.tcp.recv") => {
                if let Some((_, waiting)) = tcp.get_mut(&(a, b)) {
                    while let Some(&(end, send)) = waiting.front() {
                        if end > c {
                            break;
                        }
                        waiting.pop_front();
                        arrive(send, Arrival::Delivered(at));
                    }
                }
            }
            Some("net.tcp.syn") => {
                syns.insert(a, at);
            }
            Some("net.tcp.accept") => {
                if let Some(syn) = syns.remove(&a) {
                    arrive(syn, Arrival::Delivered(at));
                }
            }
            _ => {}
        }
    }
    arrows.sort_by_key(|arrow| arrow.from);
    arrows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(index: u64, lane: usize, source: &str, words: [u64; 3]) -> Event {
        Event {
            index,
            time_ns: index,
            actor: lane,
            lane,
            kind: "note".into(),
            source: Some(source.into()),
            words,
            what: format!("{source}: "),
        }
    }

    fn pack(node: u32) -> u64 {
        (u64::from(u32::from_be_bytes([10, 0, 0, 0]) + node) << 16) | 7000
    }

    #[test]
    fn datagrams_pair_first_in_first_out_and_lost_ones_get_a_stub() {
        let words = [pack(1), pack(2), 64];
        let events = [
            note(0, 1, "net.udp.send", words),
            note(1, 1, "net.udp.send", words),
            note(2, 1, "net.udp.lost", words),
            note(3, 2, "net.udp.recv", words),
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
        assert_eq!(label(&events[0]), "udp send 64B to n2:7000");
        assert_eq!(mark("net.udp.send"), Mark::Message);
    }

    #[test]
    fn partitions_and_heals_get_their_own_marks() {
        let cut = note(0, 1, "net.partition", [2, 1, 0]);
        assert_eq!(
            (mark("net.partition"), label(&cut)),
            (Mark::Partition, "PARTITION with n2, both ways".to_owned())
        );
        assert_eq!(mark("net.heal_all"), Mark::Heal);
    }

    #[test]
    fn a_datagram_dropped_on_arrival_ends_the_oldest_send_on_its_link() {
        let (from, to) = (pack(1), pack(2));
        let events = [
            note(0, 1, "net.udp.send", [from, to, 8]),
            note(1, 1, "net.udp.send", [from, to, 9]),
            note(2, 2, "net.udp.cut", [from, to, 0]),
            note(3, 2, "net.udp.recv", [from, to, 9]),
        ];
        let targets: Vec<Arrival> = pair(&events).iter().map(|a| a.to).collect();
        assert_eq!(targets, [Arrival::Dropped(2), Arrival::Delivered(3)]);
        assert_eq!(label(&events[2]), "udp DROPPED (cut) from n1:7000");
    }

    #[test]
    fn a_duplicated_datagram_arrives_twice() {
        let words = [pack(1), pack(2), 8];
        let events = [
            note(0, 1, "net.udp.send", words),
            note(1, 1, "net.udp.duplicated", [pack(1), pack(2), 0]),
            note(2, 2, "net.udp.recv", words),
            note(3, 2, "net.udp.recv", words),
        ];
        let targets: Vec<Arrival> = pair(&events).iter().map(|a| a.to).collect();
        assert_eq!(targets, [Arrival::Delivered(2), Arrival::Delivered(3)]);
    }

    #[test]
    fn stream_bytes_arrive_with_the_delivery_that_covers_them() {
        let events = [
            note(0, 1, "net.tcp.send", [5, 10, 0]),
            note(1, 1, "net.tcp.send", [5, 20, 0]),
            note(2, 2, "net.tcp.recv", [5, 0, 10]),
            note(3, 2, "net.tcp.recv", [5, 0, 30]),
            note(4, 2, "net.tcp.send", [5, (1 << 32) | 4, 0]),
            note(5, 1, "net.tcp.recv", [5, 1, 4]),
        ];
        let pairs: Vec<(usize, Arrival)> = pair(&events).iter().map(|a| (a.from, a.to)).collect();
        let delivered = Arrival::Delivered;
        assert_eq!(
            pairs,
            [(0, delivered(2)), (1, delivered(3)), (4, delivered(5))]
        );
    }
}
