//! One TCP connection: two ends and two pipes, one per direction.
//!
//! A pipe is a reliable ordered byte stream. It holds, in one ring buffer, every byte written
//! and not yet read, and three offsets into the stream: `read <= delivered <= written`. Bytes
//! between `delivered` and `written` are in flight, described by segments (`at`, `end`) whose
//! delivery times never decrease, so bytes arrive in order and exactly once whatever the
//! latencies drawn (a correct program sees no loss or reordering on TCP). A segment may also
//! carry a FIN or an RST, which arrive after the bytes before them.
//!
//! Backpressure: a pipe holds at most `tcp_buffer` unread bytes (the send and receive buffers
//! together); a writer that finds it full waits for the reader.
//!
//! The end's error state follows Linux after an RST or a timeout: the first read or write
//! reports the error, later reads see end of stream and later writes `BrokenPipe`; bytes that
//! arrived before the error are still read first, and once the peer's FIN arrived reads see
//! end of stream and leave the error to a write. An RST that finds the peer's FIN already
//! arrived and this end still writing (Linux's `CLOSE_WAIT`) is `BrokenPipe`, not a reset.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;

use crashtest_core::node::NodeId;
use crashtest_core::plumbing::timers::TimerKey;
use tokio::io::ReadBuf;

use super::byte_queue::ByteQueue;
use crate::errors;
use crate::fabric::WaitList;

/// What a segment carries besides bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mark {
    Data,
    Fin,
    Rst,
}

/// A run of bytes (up to stream offset `end`) or a flag, due to arrive at `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    pub(crate) at: u64,
    pub(crate) end: u64,
    pub(crate) mark: Mark,
}

/// Why a pipe's delivery is on hold.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) enum Hold {
    #[default]
    Flowing,
    /// A clog holds it; its delivery timer fires when the clog lifts.
    Clogged,
    /// A partition cuts it; `timer` gives up after the TCP timeout.
    Cut { timer: TimerKey },
}

/// One direction of a connection.
#[derive(Debug, Default)]
pub(crate) struct Pipe {
    buf: ByteQueue,
    read: u64,
    delivered: u64,
    written: u64,
    segments: VecDeque<Segment>,
    /// The delivery time of the last segment queued: later ones never arrive earlier.
    last_at: u64,
    /// The FIN arrived: the reader sees end of stream after the delivered bytes.
    pub(crate) fin: bool,
    /// The delivery timer of the head segment, if armed.
    pub(crate) timer: Option<TimerKey>,
    pub(crate) hold: Hold,
}

impl Pipe {
    /// Bytes written and not yet read.
    #[inline]
    pub(crate) fn unread(&self) -> usize {
        (self.written - self.read) as usize
    }

    /// Bytes arrived and not yet read.
    #[inline]
    pub(crate) fn readable(&self) -> usize {
        (self.delivered - self.read) as usize
    }

    /// The stream offset delivered so far.
    pub(crate) fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Appends `bytes` to the stream, due to arrive no earlier than `at`. Returns the time the
    /// bytes will arrive, and whether a new segment was queued (a write that would arrive no
    /// later than the previous segment joins it instead, as a real send buffer coalesces).
    /// The pipe's invariant: `read <= delivered <= written`, and the buffer holds exactly the
    /// bytes written and not yet read. O(1), so it is checked on every change.
    #[inline]
    fn check(&self) {
        assert!(
            self.read <= self.delivered && self.delivered <= self.written,
            "a pipe's offsets stay ordered: read {} <= delivered {} <= written {}",
            self.read,
            self.delivered,
            self.written
        );
        assert_eq!(
            self.buf.len() as u64,
            self.written - self.read,
            "a pipe buffers exactly what is written and unread"
        );
    }

    #[inline]
    pub(crate) fn push_data(&mut self, bytes: &[u8], at: u64) -> (u64, bool) {
        self.buf.extend(bytes);
        self.written += bytes.len() as u64;
        self.check();
        let at = at.max(self.last_at);
        if let Some(last) = self.segments.back_mut()
            && last.mark == Mark::Data
            && last.at == at
        {
            last.end = self.written;
            return (at, false);
        }
        self.push(Segment {
            at,
            end: self.written,
            mark: Mark::Data,
        });
        (at, true)
    }

    /// Queues a FIN or RST after everything written, due no earlier than `at`.
    pub(crate) fn push_mark(&mut self, mark: Mark, at: u64) -> u64 {
        assert_ne!(mark, Mark::Data, "push_data queues bytes");
        let at = at.max(self.last_at);
        self.push(Segment {
            at,
            end: self.written,
            mark,
        });
        at
    }

    fn push(&mut self, segment: Segment) {
        assert!(segment.at >= self.last_at, "segments must arrive in order");
        self.last_at = segment.at;
        self.segments.push_back(segment);
    }

    /// Makes every segment arrive no earlier than `at` (the SYN-ACK of a new connection).
    pub(crate) fn not_before(&mut self, at: u64) {
        self.last_at = self.last_at.max(at);
    }

    /// The delivery time of the head segment.
    #[inline]
    pub(crate) fn next_due(&self) -> Option<u64> {
        self.segments.front().map(|s| s.at)
    }

    /// Delivers every segment due by `now`; returns the flag that came with them, if any (an
    /// RST wins over a FIN).
    #[inline]
    pub(crate) fn deliver_due(&mut self, now: u64) -> Option<Mark> {
        let mut flag = None;
        while let Some(segment) = self.segments.front().copied() {
            if segment.at > now {
                break;
            }
            self.segments.pop_front();
            assert!(
                segment.end >= self.delivered,
                "a segment moved the stream backwards"
            );
            assert!(
                segment.end <= self.written,
                "a segment delivers only bytes written"
            );
            self.delivered = segment.end;
            match segment.mark {
                Mark::Data => {}
                Mark::Fin => {
                    self.fin = true;
                    flag = flag.or(Some(Mark::Fin));
                }
                Mark::Rst => flag = Some(Mark::Rst),
            }
        }
        flag
    }

    /// Copies arrived bytes into `out`; returns how many.
    #[inline]
    pub(crate) fn read_into(&mut self, out: &mut ReadBuf<'_>) -> usize {
        let n = self.readable().min(out.remaining());
        self.buf.drain_into(n, |bytes| out.put_slice(bytes));
        self.read += n as u64;
        self.check();
        n
    }

    /// Copies arrived bytes into `out` and leaves them to be read (a peek); returns how many.
    pub(crate) fn peek_into(&self, out: &mut ReadBuf<'_>) -> usize {
        let n = self.readable().min(out.remaining());
        self.buf.copy_into(n, |bytes| out.put_slice(bytes));
        n
    }

    /// Throws away what has arrived and not been read (the reader is gone).
    pub(crate) fn discard_delivered(&mut self) {
        let n = self.readable();
        self.buf.drain(n);
        self.read = self.delivered;
        self.check();
    }

    /// Throws away everything, in flight or not (an RST purges the send queue). Returns the
    /// timers to disarm (at most two: the delivery's and a cut's; no list is allocated, as
    /// every connection's two pipes are purged when it is forgotten).
    pub(crate) fn purge(&mut self) -> impl Iterator<Item = TimerKey> + use<> {
        self.buf.clear();
        self.read = self.written;
        self.delivered = self.written;
        self.segments.clear();
        self.check();
        let cut = match std::mem::take(&mut self.hold) {
            Hold::Cut { timer, .. } => Some(timer),
            _ => None,
        };
        self.timer.take().into_iter().chain(cut)
    }
}

/// Who holds an end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Handle {
    /// The client end while `connect` waits for the SYN-ACK.
    Connecting,
    /// The server end in its listener's accept queue.
    Queued,
    /// A `TcpStream` (or its halves).
    Open,
    /// Dropped; the connection lives on for the other end.
    Closed,
}

/// The error state of an end (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    None,
    Pending(io::ErrorKind),
    Reported,
}

/// One end of a connection.
#[derive(Debug)]
pub(crate) struct End {
    pub(crate) node: NodeId,
    pub(crate) local: SocketAddr,
    pub(crate) handle: Handle,
    fault: Fault,
    /// No more writes: a FIN is queued.
    pub(crate) write_shut: bool,
    /// Receives nothing any more (closed, reset, timed out or killed): bytes sent to it are
    /// thrown away and answered with an RST.
    pub(crate) gone: bool,
    /// An RST left this end already.
    pub(crate) rst_sent: bool,
    /// Closing resets the connection (an RST, not a FIN), as `SO_LINGER` with a zero timeout
    /// makes a socket do.
    pub(crate) reset_on_close: bool,
    /// The tasks waiting to read (or for read readiness): tokio lets several tasks wait on
    /// one stream (`readable()` from each, through an `Arc`), and every one is woken.
    pub(crate) read_waiters: WaitList,
    /// The tasks waiting for room in the send buffer (or for write readiness).
    pub(crate) write_waiters: WaitList,
}

impl End {
    pub(crate) fn new(node: NodeId, local: SocketAddr, handle: Handle) -> End {
        End {
            node,
            local,
            handle,
            fault: Fault::None,
            write_shut: false,
            gone: false,
            rst_sent: false,
            reset_on_close: false,
            read_waiters: WaitList::default(),
            write_waiters: WaitList::default(),
        }
    }

    /// Sets the error the next operation reports, unless one was set already.
    pub(crate) fn fail(&mut self, kind: io::ErrorKind) {
        if self.fault == Fault::None {
            self.fault = Fault::Pending(kind);
        }
    }

    /// True once an error is pending or was reported.
    pub(crate) fn is_failed(&self) -> bool {
        self.fault != Fault::None
    }

    /// The error a read reports: the pending one, then end of stream (`None` with
    /// `is_failed`).
    pub(crate) fn take_read_error(&mut self) -> Option<io::Error> {
        match self.fault {
            Fault::Pending(kind) => {
                self.fault = Fault::Reported;
                Some(errors::connection(kind))
            }
            Fault::None | Fault::Reported => None,
        }
    }

    /// The error a write reports: the pending one, then `BrokenPipe`.
    pub(crate) fn take_write_error(&mut self) -> Option<io::Error> {
        match self.fault {
            Fault::Pending(kind) => {
                self.fault = Fault::Reported;
                Some(errors::connection(kind))
            }
            Fault::Reported => Some(errors::connection(io::ErrorKind::BrokenPipe)),
            Fault::None if self.write_shut => Some(errors::connection(io::ErrorKind::BrokenPipe)),
            Fault::None => None,
        }
    }
}

/// A connection: `pipes[i]` carries bytes from `ends[i]` to `ends[1 - i]`. End 0 is the
/// client (it called `connect`), end 1 the server (it came from `accept`).
#[derive(Debug)]
pub(crate) struct Conn {
    pub(crate) ends: [End; 2],
    pub(crate) pipes: [Pipe; 2],
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(pipe: &mut Pipe) -> Vec<u8> {
        let mut storage = [0u8; 64];
        let mut out = ReadBuf::new(&mut storage);
        pipe.read_into(&mut out);
        out.filled().to_vec()
    }

    #[test]
    fn bytes_arrive_in_order_whatever_the_latency_drawn() {
        let mut pipe = Pipe::default();
        assert_eq!(pipe.push_data(b"ab", 100), (100, true));
        // Drawn earlier than the previous segment: held back behind it and merged.
        assert_eq!(pipe.push_data(b"cd", 50), (100, false));
        assert_eq!(pipe.push_data(b"ef", 150), (150, true));
        assert_eq!(pipe.deliver_due(99), None);
        assert_eq!(pipe.readable(), 0);
        pipe.deliver_due(120);
        assert_eq!(read_all(&mut pipe), b"abcd");
        pipe.deliver_due(150);
        assert_eq!(read_all(&mut pipe), b"ef");
        assert_eq!(pipe.unread(), 0);
    }

    #[test]
    fn a_fin_arrives_after_the_bytes_before_it() {
        let mut pipe = Pipe::default();
        pipe.push_data(b"xy", 200);
        assert_eq!(pipe.push_mark(Mark::Fin, 10), 200);
        assert_eq!(pipe.deliver_due(200), Some(Mark::Fin));
        assert!(pipe.fin);
        assert_eq!(read_all(&mut pipe), b"xy");
    }

    #[test]
    fn reads_wrap_around_the_ring() {
        let mut pipe = Pipe::default();
        for round in 0..50u8 {
            let bytes = [round; 7];
            pipe.push_data(&bytes, u64::from(round));
            pipe.deliver_due(u64::from(round));
            assert_eq!(read_all(&mut pipe), bytes);
        }
    }

    #[test]
    fn purge_empties_the_pipe() {
        let mut pipe = Pipe::default();
        pipe.push_data(b"lost", 10);
        assert_eq!(pipe.purge().count(), 0);
        assert_eq!(pipe.unread(), 0);
        assert_eq!(pipe.next_due(), None);
    }

    #[test]
    fn an_end_reports_its_error_once_then_eof_and_broken_pipe() {
        let mut end = End::new(
            crashtest_core::node::NodeId::SUPERVISOR,
            "10.0.0.0:1".parse().unwrap(),
            Handle::Open,
        );
        end.fail(io::ErrorKind::ConnectionReset);
        end.fail(io::ErrorKind::TimedOut);
        let first = end.take_read_error().unwrap();
        assert_eq!(first.kind(), io::ErrorKind::ConnectionReset);
        assert!(end.take_read_error().is_none());
        assert!(end.is_failed());
        let write = end.take_write_error().unwrap();
        assert_eq!(write.kind(), io::ErrorKind::BrokenPipe);
    }
}
