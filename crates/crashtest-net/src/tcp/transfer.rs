//! Moving bytes: writes, deliveries, reads, shutdowns, closes, resets and timeouts.
//!
//! A write copies the bytes into the pipe, draws a latency and queues a segment; the pipe's one
//! delivery timer (`plumbing::timers::call_at`) fires for the head segment, delivers everything due,
//! wakes the reader and re-arms for the next. There is no task per packet and no work per
//! byte beyond the two copies in and out of the ring.
//!
//! Faults are judged when a segment is due: a clog holds the pipe until it lifts, a partition
//! stalls it (TCP retransmits) until a heal or the TCP timeout, which fails the sending end
//! with `TimedOut`. Bytes sent to an end that is gone are thrown away and answered with an
//! RST, as a real host answers segments for a socket it no longer has.
//!
//! A killed node's ends reset, as a kernel that outlives the process resets them; with
//! `NetConfig::kill_resets` off the node is a machine that lost its power: its ends vanish
//! without a word (no FIN, no RST), and what its peers send it stalls as behind a partition
//! (`links`), until it is restarted (its new kernel answers with an RST) or their TCP
//! timeout runs out. A peer that only reads learns nothing, as on a real network without
//! keepalives.

use std::io;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use crashtest_core::fault;
use crashtest_core::node::{NodeId, NodeStatus};
use crashtest_core::plumbing::{self, timers::TimerKey};
use crashtest_hooks::net::{TcpInterest, TcpReady};
use tokio::io::ReadBuf;

use super::conn::{Conn, Handle, Hold, Mark};
use crate::config::nanos;
use crate::errors;
use crashtest_protocol::NetNote;

use crate::addr::between;
use crate::fabric::{Net, State, WaitList, Wakers, applies, draw, drawn, latency_ns, now, trace};
use crate::links::Verdict;
use crate::ports::Proto;

/// The node index of an end.
#[inline]
fn index(node: NodeId) -> u32 {
    node.index() as u32
}

/// Connection `id`'s pipe `dir` as one word: the id shifted past the direction's bit.
fn pipe_word(id: u64, dir: usize) -> u64 {
    assert!(
        id < 1 << 63 && dir < 2,
        "pipe {id}/{dir} does not fit a word"
    );
    (id << 1) | dir as u64
}

/// A delivery timer's function: delivers what is due on the pipe [`pipe_word`] named.
fn deliver(word: u64) {
    crate::fabric::net().tcp_deliver(word >> 1, (word & 1) as usize);
}

impl Net {
    /// Arms the delivery timer of pipe `dir` of connection `id` at `at`. A function and a
    /// word, not a closure: a delivery is armed for nearly every write, and a boxed closure
    /// holding the network would be an allocation each time.
    fn arm_delivery(self: &Rc<Net>, id: u64, dir: usize, at: u64) -> TimerKey {
        plumbing::timers::call_function_at(at, deliver, pipe_word(id, dir))
    }

    /// `AsyncWrite::poll_write` of end `side` of connection `id`.
    pub(crate) fn tcp_poll_write(
        self: &Rc<Net>,
        id: u64,
        side: usize,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let mut wakers = Wakers::default();
        let result = self.tcp_write(id, side, Some(cx.waker()), data, &mut wakers);
        wakers.wake();
        result
    }

    /// A write that never waits: `tcp_poll_write`, but a full send buffer is `WouldBlock`
    /// and no waker is registered (a `try_` call leaves nothing behind to be woken, as
    /// tokio's registers no interest).
    pub(crate) fn tcp_try_write(
        self: &Rc<Net>,
        id: u64,
        side: usize,
        data: &[u8],
    ) -> io::Result<usize> {
        let mut wakers = Wakers::default();
        let result = self.tcp_write(id, side, None, data, &mut wakers);
        wakers.wake();
        match result {
            Poll::Ready(result) => result,
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    /// Writes for end `side`; when the send buffer is full, registers `waker` (if any) to
    /// learn of room.
    fn tcp_write(
        self: &Rc<Net>,
        id: u64,
        side: usize,
        waker: Option<&Waker>,
        data: &[u8],
        wakers: &mut Wakers,
    ) -> Poll<io::Result<usize>> {
        let mut guard = self.state.borrow_mut();
        let st = &mut *guard;
        let Some(conn) = st.tcp.conns.get_mut(&id) else {
            return Poll::Ready(Err(errors::connection(io::ErrorKind::BrokenPipe)));
        };
        if let Some(err) = conn.ends[side].take_write_error() {
            return Poll::Ready(Err(err));
        }
        if data.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let space = st
            .config
            .tcp_buffer
            .saturating_sub(conn.pipes[side].unread());
        if space == 0 {
            if let Some(waker) = waker {
                conn.ends[side].write_waiters.register(waker);
            }
            return Poll::Pending;
        }
        let node = conn.ends[side].node;
        let (local, peer) = (conn.ends[side].local, conn.ends[1 - side].local);
        let reset = drawn(st.config.tcp_reset)
            && applies(node, || between("tcp connection", local, peer, " reset"));
        if reset {
            st.tcp_abort(self, id, side, io::ErrorKind::ConnectionReset, wakers);
            let conn = st
                .tcp
                .conns
                .get_mut(&id)
                .expect("an aborted end keeps its connection");
            let err = conn.ends[side]
                .take_write_error()
                .expect("the abort set an error");
            return Poll::Ready(Err(err));
        }
        let mut n = data.len().min(space);
        if n > 1 && drawn(st.config.tcp_partial_write) {
            let short = draw(|rng| rng.range_inclusive(1, n as u64 - 1)) as usize;
            assert!(
                (1..n).contains(&short),
                "a partial write takes some bytes, not all"
            );
            if applies(node, || {
                let mut digits = itoa::Buffer::new();
                let mut text = between("tcp write", local, peer, " of ");
                text.push_str(digits.format(n));
                text.push_str(" bytes cut to ");
                text.push_str(digits.format(short));
                text
            }) {
                n = short;
            }
        }
        let (from, to) = (index(node), index(conn.ends[1 - side].node));
        let delay = latency_ns(&st.config, from, to);
        let pipe = &mut conn.pipes[side];
        let (at, _) = pipe.push_data(&data[..n], now() + delay);
        assert!(
            pipe.unread() <= st.config.tcp_buffer,
            "a pipe never holds more than the TCP buffer"
        );
        if pipe.timer.is_none() && pipe.hold == Hold::Flowing {
            let due = pipe.next_due().expect("a segment was just queued");
            pipe.timer = Some(self.arm_delivery(id, side, due));
        }
        trace(
            node,
            NetNote::TcpSend {
                conn: id,
                side: side as u8,
                bytes: u32::try_from(n).expect("a write accepts less than 4 GiB"),
                arrival_ns: at,
            },
        );
        Poll::Ready(Ok(n))
    }

    /// `AsyncRead::poll_read` of end `side` of connection `id`.
    pub(crate) fn tcp_poll_read(
        &self,
        id: u64,
        side: usize,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.tcp_read(id, side, Some(cx.waker()), out, true)
    }

    /// A read that never waits: `tcp_poll_read`, but nothing arrived is `WouldBlock` and no
    /// waker is registered (see `tcp_try_write`).
    pub(crate) fn tcp_try_read(
        &self,
        id: u64,
        side: usize,
        out: &mut ReadBuf<'_>,
    ) -> io::Result<()> {
        match self.tcp_read(id, side, None, out, true) {
            Poll::Ready(result) => result,
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    /// A peek of end `side` of connection `id`: `tcp_poll_read`, but the bytes stay to be
    /// read (the error and the end of stream are reported as a read reports them, as a peek
    /// on a socket reports the socket's error).
    pub(crate) fn tcp_poll_peek(
        &self,
        id: u64,
        side: usize,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.tcp_read(id, side, Some(cx.waker()), out, false)
    }

    /// Reads (or, unless `consume`, peeks) for end `side`; when nothing has arrived,
    /// registers `waker` (if any) to learn of bytes, the end of the stream or an error.
    fn tcp_read(
        &self,
        id: u64,
        side: usize,
        waker: Option<&Waker>,
        out: &mut ReadBuf<'_>,
        consume: bool,
    ) -> Poll<io::Result<()>> {
        let writers = {
            let mut guard = self.state.borrow_mut();
            let Some(conn) = guard.tcp.conns.get_mut(&id) else {
                return Poll::Ready(Ok(()));
            };
            let inbound = &mut conn.pipes[1 - side];
            if inbound.readable() > 0 {
                if out.remaining() == 0 {
                    return Poll::Ready(Ok(()));
                }
                if !consume {
                    let n = inbound.peek_into(out);
                    assert!(n > 0, "a peek with room and bytes arrived copies some");
                    return Poll::Ready(Ok(()));
                }
                let n = inbound.read_into(out);
                assert!(n > 0, "a read with room and bytes arrived takes some");
                std::mem::take(&mut conn.ends[1 - side].write_waiters)
            } else {
                // A read into no room returns at once; a peek into none waits for something
                // to read, as a socket's does (it is a readiness wait).
                if consume && out.remaining() == 0 {
                    return Poll::Ready(Ok(()));
                }
                let end = &mut conn.ends[side];
                // Linux reads end of stream once the FIN arrived, before an error (which a
                // write then reports).
                if inbound.fin {
                    return Poll::Ready(Ok(()));
                }
                if let Some(err) = end.take_read_error() {
                    return Poll::Ready(Err(err));
                }
                if end.is_failed() {
                    return Poll::Ready(Ok(()));
                }
                if let Some(waker) = waker {
                    end.read_waiters.register(waker);
                }
                return Poll::Pending;
            }
        };
        writers.wake();
        Poll::Ready(Ok(()))
    }

    /// What end `side` of connection `id` is ready for. If nothing `interest` asks for is
    /// ready, registers `cx`'s waker to learn of it and returns `Pending`: a read direction
    /// (and an error) is woken by arriving bytes, the end of stream or an error, a write
    /// direction by room freed in the send buffer, the end of writing or an error. A
    /// forgotten connection is closed both ways.
    pub(crate) fn tcp_poll_ready(
        &self,
        id: u64,
        side: usize,
        cx: &mut Context<'_>,
        interest: TcpInterest,
    ) -> Poll<TcpReady> {
        assert!(
            interest.read || interest.write || interest.error,
            "readiness is asked for something"
        );
        let mut guard = self.state.borrow_mut();
        let st = &mut *guard;
        let Some(conn) = st.tcp.conns.get_mut(&id) else {
            return Poll::Ready(TcpReady {
                read_closed: true,
                write_closed: true,
                ..TcpReady::default()
            });
        };
        let inbound = &conn.pipes[1 - side];
        let end = &conn.ends[side];
        // As Linux's poll reports a socket: a write side shut by this end alone is still
        // writable (the write then fails) and is closed only once the peer's FIN came too.
        let ready = TcpReady {
            readable: inbound.readable() > 0,
            read_closed: inbound.fin || end.is_failed(),
            writable: conn.pipes[side].unread() < st.config.tcp_buffer || end.write_shut,
            write_closed: end.is_failed() || (end.write_shut && inbound.fin),
            error: end.is_failed(),
        };
        let read_ready = ready.readable || ready.read_closed;
        let write_ready = ready.writable || ready.write_closed;
        if (interest.read && read_ready)
            || (interest.write && write_ready)
            || (interest.error && ready.error)
        {
            return Poll::Ready(ready);
        }
        let end = &mut conn.ends[side];
        // A failure wakes the read waiters, and so those waiting for an error.
        if interest.read || interest.error {
            end.read_waiters.register(cx.waker());
        }
        if interest.write {
            end.write_waiters.register(cx.waker());
        }
        Poll::Pending
    }

    /// Delivers what is due on pipe `dir` of connection `id` (its timer fired).
    pub(crate) fn tcp_deliver(self: &Rc<Net>, id: u64, dir: usize) {
        let mut wakers = Wakers::default();
        {
            let mut guard = self.state.borrow_mut();
            let st = &mut *guard;
            let now = now();
            let Some(conn) = st.tcp.conns.get_mut(&id) else {
                return;
            };
            let pipe = &mut conn.pipes[dir];
            pipe.timer = None;
            let (sender, receiver) = (conn.ends[dir].node, conn.ends[1 - dir].node);
            match st.links.verdict(index(sender), index(receiver), now) {
                Verdict::HeldUntil(until) => {
                    pipe.hold = Hold::Clogged;
                    pipe.timer = Some(self.arm_delivery(id, dir, until));
                    st.tcp.held.insert((id, dir));
                    let note = NetNote::TcpClogged {
                        conn: id,
                        dir: dir as u8,
                        until_ns: until,
                    };
                    trace(sender, note);
                    return;
                }
                Verdict::Cut => {
                    if !matches!(pipe.hold, Hold::Cut { .. }) {
                        let deadline = now.saturating_add(nanos(st.config.tcp_timeout));
                        let net = Rc::clone(self);
                        let timer = plumbing::timers::call_at(deadline, move || {
                            net.tcp_stall_expired(id, dir)
                        });
                        pipe.hold = Hold::Cut { timer };
                        st.tcp.held.insert((id, dir));
                        let note = NetNote::TcpStalled {
                            conn: id,
                            dir: dir as u8,
                            deadline_ns: deadline,
                        };
                        trace(sender, note);
                    }
                    return;
                }
                Verdict::Open => {
                    if let Hold::Cut { timer, .. } = std::mem::take(&mut pipe.hold) {
                        plumbing::timers::cancel(timer);
                    }
                    st.tcp.held.remove(&(id, dir));
                }
            }
            let before = pipe.delivered();
            let flag = pipe.deliver_due(now);
            let delivered = pipe.delivered();
            assert!(delivered >= before, "a delivery never takes bytes back");
            if let Some(due) = pipe.next_due() {
                pipe.timer = Some(self.arm_delivery(id, dir, due));
            }
            let note = NetNote::TcpRecv {
                conn: id,
                dir: dir as u8,
                delivered,
            };
            trace(receiver, note);
            let end = &mut conn.ends[1 - dir];
            if flag == Some(Mark::Rst) {
                st.tcp_rst_arrived(id, 1 - dir, &mut wakers);
            } else if end.gone {
                conn.pipes[dir].discard_delivered();
                conn.ends[dir].write_waiters.take_into(&mut wakers);
                if delivered > before {
                    st.tcp_send_rst(self, id, 1 - dir);
                }
            } else {
                end.read_waiters.take_into(&mut wakers);
            }
        }
        wakers.wake();
    }

    /// The TCP timeout of a stalled pipe ran out: its sending end gives up.
    fn tcp_stall_expired(self: &Rc<Net>, id: u64, dir: usize) {
        let mut wakers = Wakers::default();
        {
            let mut guard = self.state.borrow_mut();
            let st = &mut *guard;
            let Some(conn) = st.tcp.conns.get_mut(&id) else {
                return;
            };
            if !matches!(conn.pipes[dir].hold, Hold::Cut { .. }) {
                return;
            }
            let (node, peer) = (conn.ends[dir].node, conn.ends[1 - dir].node);
            let end = &mut conn.ends[dir];
            end.fail(io::ErrorKind::TimedOut);
            end.gone = true;
            // Nothing reaches the peer (behind a partition, or down), not even an RST.
            end.rst_sent = true;
            end.read_waiters.take_into(&mut wakers);
            end.write_waiters.take_into(&mut wakers);
            conn.pipes[1 - dir].discard_delivered();
            st.tcp_purge(id, dir);
            trace(
                node,
                NetNote::TcpTimeout {
                    conn: id,
                    dir: dir as u8,
                },
            );
            let why = if st.links.is_down(index(peer)) {
                "while it was down"
            } else {
                "behind a partition"
            };
            let text = format!(
                "tcp connection to {} timed out {why}",
                st.name_of(index(peer))
            );
            fault::note(node, text);
        }
        wakers.wake();
    }

    /// `AsyncWrite::poll_shutdown`: queues a FIN after the bytes written.
    pub(crate) fn tcp_shutdown(self: &Rc<Net>, id: u64, side: usize) {
        let mut guard = self.state.borrow_mut();
        let st = &mut *guard;
        let Some(conn) = st.tcp.conns.get(&id) else {
            return;
        };
        let end = &conn.ends[side];
        if end.write_shut || end.is_failed() || end.rst_sent {
            return;
        }
        st.tcp_send_mark(self, id, side, Mark::Fin);
        // A task waiting to write learns that writing is over (its write now fails).
        let mut wakers = Wakers::default();
        if let Some(conn) = st.tcp.conns.get_mut(&id) {
            conn.ends[side].write_waiters.take_into(&mut wakers);
        }
        drop(guard);
        wakers.wake();
    }

    /// The `TcpStream` of end `side` was dropped.
    pub(crate) fn tcp_close(self: &Rc<Net>, id: u64, side: usize) {
        let mut wakers = Wakers::default();
        {
            let mut guard = self.state.borrow_mut();
            let st = &mut *guard;
            st.tcp_close_end(self, id, side, &mut wakers);
        }
        wakers.wake();
    }

    /// Sets whether closing end `side` of connection `id` resets it (`SO_LINGER` zero).
    pub(crate) fn tcp_set_reset_on_close(&self, id: u64, side: usize, reset: bool) {
        if let Some(conn) = self.state.borrow_mut().tcp.conns.get_mut(&id) {
            conn.ends[side].reset_on_close = reset;
        }
    }

    /// A node was killed: every end it holds resets, or vanishes without a word to its peer
    /// (`NetConfig::kill_resets`).
    pub(crate) fn tcp_node_killed(self: &Rc<Net>, node: NodeId, wakers: &mut Wakers) {
        let mut guard = self.state.borrow_mut();
        let st = &mut *guard;
        let ends: Vec<(u64, usize)> = st
            .tcp
            .conns
            .iter()
            .flat_map(|(id, conn)| {
                (0..2)
                    .filter(move |&side| conn.ends[side].node == node)
                    .map(move |side| (id, side))
            })
            .collect();
        for (id, side) in ends {
            st.tcp_end_dies(self, id, side, wakers);
        }
        st.tcp_listeners_killed(self, node, wakers);
        st.tcp_connects_killed(node, wakers);
    }

    /// Re-examines every held pipe after a heal or an unclog: those now free deliver after
    /// one latency (the retransmission).
    pub(crate) fn tcp_release_held(self: &Rc<Net>) {
        let mut guard = self.state.borrow_mut();
        let st = &mut *guard;
        let now = now();
        let held: Vec<(u64, usize)> = st.tcp.held.iter().copied().collect();
        for (id, dir) in held {
            let Some(conn) = st.tcp.conns.get(&id) else {
                st.tcp.held.remove(&(id, dir));
                continue;
            };
            let (from, to) = (index(conn.ends[dir].node), index(conn.ends[1 - dir].node));
            if st.links.verdict(from, to, now) != Verdict::Open {
                continue;
            }
            let delay = st.latency_ns(from, to);
            st.tcp.held.remove(&(id, dir));
            let pipe = &mut st.tcp.conns.get_mut(&id).expect("looked up above").pipes[dir];
            if let Some(timer) = pipe.timer.take() {
                plumbing::timers::cancel(timer);
            }
            if let Hold::Cut { timer, .. } = std::mem::take(&mut pipe.hold) {
                plumbing::timers::cancel(timer);
            }
            pipe.timer = Some(self.arm_delivery(id, dir, now + delay));
        }
    }
}

impl State {
    /// Queues a FIN or RST from end `side`, arming the pipe if it is idle.
    fn tcp_send_mark(&mut self, net: &Rc<Net>, id: u64, side: usize, mark: Mark) {
        let conn = self
            .tcp
            .conns
            .get(&id)
            .expect("marks go on live connections");
        let (from, to) = (index(conn.ends[side].node), index(conn.ends[1 - side].node));
        let delay = self.latency_ns(from, to);
        let conn = self.tcp.conns.get_mut(&id).expect("looked up above");
        match mark {
            Mark::Fin => conn.ends[side].write_shut = true,
            Mark::Rst => conn.ends[side].rst_sent = true,
            Mark::Data => unreachable!("bytes are written, not marked"),
        }
        let pipe = &mut conn.pipes[side];
        let at = pipe.push_mark(mark, now() + delay);
        if pipe.timer.is_none() && pipe.hold == Hold::Flowing {
            let due = pipe.next_due().expect("a mark was just queued");
            pipe.timer = Some(net.arm_delivery(id, side, due));
        }
        let end = side as u8;
        let note = if mark == Mark::Fin {
            NetNote::TcpFin {
                conn: id,
                side: end,
                at_ns: at,
            }
        } else {
            NetNote::TcpRst {
                conn: id,
                side: end,
                at_ns: at,
            }
        };
        trace(conn.ends[side].node, note);
    }

    /// Sends an RST from end `side` unless one left already.
    fn tcp_send_rst(&mut self, net: &Rc<Net>, id: u64, side: usize) {
        let sent = self
            .tcp
            .conns
            .get(&id)
            .is_none_or(|c| c.ends[side].rst_sent);
        if !sent {
            self.tcp_send_mark(net, id, side, Mark::Rst);
        }
    }

    /// An RST reached end `side`: it fails with `ConnectionReset` (`BrokenPipe` if the
    /// peer's FIN came first and this end still writes, as Linux's `CLOSE_WAIT` answers) and
    /// drops its send queue.
    fn tcp_rst_arrived(&mut self, id: u64, side: usize, wakers: &mut Wakers) {
        let conn = self
            .tcp
            .conns
            .get_mut(&id)
            .expect("an RST arrives on a live connection");
        let close_wait = conn.pipes[1 - side].fin && !conn.ends[side].write_shut;
        let end = &mut conn.ends[side];
        end.fail(if close_wait {
            io::ErrorKind::BrokenPipe
        } else {
            io::ErrorKind::ConnectionReset
        });
        end.gone = true;
        end.rst_sent = true;
        end.read_waiters.take_into(wakers);
        end.write_waiters.take_into(wakers);
        self.tcp_purge(id, side);
    }

    /// Empties pipe `dir` of connection `id` and disarms its timers.
    fn tcp_purge(&mut self, id: u64, dir: usize) {
        let conn = self
            .tcp
            .conns
            .get_mut(&id)
            .expect("purging a live connection");
        for timer in conn.pipes[dir].purge() {
            plumbing::timers::cancel(timer);
        }
        self.tcp.held.remove(&(id, dir));
    }

    /// End `side` breaks off: it fails with `kind`, drops what it received, and sends an RST.
    pub(super) fn tcp_abort(
        &mut self,
        net: &Rc<Net>,
        id: u64,
        side: usize,
        kind: io::ErrorKind,
        wakers: &mut Wakers,
    ) {
        if self.tcp_end_fails(id, side, kind, wakers) {
            self.tcp_send_rst(net, id, side);
        }
        self.tcp_forget_if_closed(id);
    }

    /// End `side` of connection `id` dies with its node: it resets, or vanishes without a
    /// word (`NetConfig::kill_resets`).
    pub(super) fn tcp_end_dies(
        &mut self,
        net: &Rc<Net>,
        id: u64,
        side: usize,
        wakers: &mut Wakers,
    ) {
        if self.config.kill_resets {
            self.tcp_abort(net, id, side, io::ErrorKind::ConnectionAborted, wakers);
        } else {
            self.tcp_vanish(id, side, wakers);
        }
    }

    /// End `side` of connection `id` vanishes with its machine: it fails and receives
    /// nothing more, and no RST leaves it. What it sent that stalls behind a partition is
    /// lost: only its own retransmissions would have carried it across. What is on the
    /// wire (in flight, or held by a clog) still arrives.
    fn tcp_vanish(&mut self, id: u64, side: usize, wakers: &mut Wakers) {
        self.tcp_end_fails(id, side, io::ErrorKind::ConnectionAborted, wakers);
        let stalled = self
            .tcp
            .conns
            .get(&id)
            .is_some_and(|conn| matches!(conn.pipes[side].hold, Hold::Cut { .. }));
        if stalled {
            self.tcp_purge(id, side);
        }
        self.tcp_forget_if_closed(id);
    }

    /// End `side` fails with `kind` and is gone: true if it was not gone already.
    fn tcp_end_fails(
        &mut self,
        id: u64,
        side: usize,
        kind: io::ErrorKind,
        wakers: &mut Wakers,
    ) -> bool {
        let Some(conn) = self.tcp.conns.get_mut(&id) else {
            return false;
        };
        let end = &mut conn.ends[side];
        if end.gone {
            return false;
        }
        end.fail(kind);
        end.gone = true;
        assert!(end.is_failed(), "an aborted end reports an error");
        end.read_waiters.take_into(wakers);
        end.write_waiters.take_into(wakers);
        conn.pipes[1 - side].discard_delivered();
        conn.ends[1 - side].write_waiters.take_into(wakers);
        if conn.ends[side].handle == Handle::Queued {
            conn.ends[side].handle = Handle::Closed;
        }
        true
    }

    /// The handle of end `side` is gone: a FIN goes out, or an RST if bytes that arrived were
    /// never read or the end was set to reset on close (as Linux's `close` does), and an RST,
    /// or nothing, if its node is dead (`NetConfig::kill_resets`).
    pub(super) fn tcp_close_end(
        &mut self,
        net: &Rc<Net>,
        id: u64,
        side: usize,
        wakers: &mut Wakers,
    ) {
        let Some(conn) = self.tcp.conns.get_mut(&id) else {
            return;
        };
        let end = &mut conn.ends[side];
        end.handle = Handle::Closed;
        end.read_waiters = WaitList::default();
        end.write_waiters = WaitList::default();
        let crashed = plumbing::life::node_status(end.node) == Some(NodeStatus::Dead);
        if crashed {
            self.tcp_end_dies(net, id, side, wakers);
            return;
        }
        if !end.gone {
            let unread = conn.pipes[1 - side].readable() > 0;
            // A zero linger resets a connection still open either way; once both FINs went,
            // Linux closes it without one.
            let both_fins = end.write_shut && conn.pipes[1 - side].fin;
            let lingers_zero = end.reset_on_close && !both_fins;
            let reset = (unread || lingers_zero) && !end.is_failed();
            let needs_fin = !end.write_shut && !end.is_failed();
            end.gone = true;
            conn.pipes[1 - side].discard_delivered();
            conn.ends[1 - side].write_waiters.take_into(wakers);
            if reset {
                self.tcp_send_rst(net, id, side);
            } else if needs_fin {
                self.tcp_send_mark(net, id, side, Mark::Fin);
            }
        }
        self.tcp_forget_if_closed(id);
    }

    /// Drops connection `id` once neither end has a handle, freeing the client's port.
    pub(super) fn tcp_forget_if_closed(&mut self, id: u64) {
        let closed = self
            .tcp
            .conns
            .get(&id)
            .is_some_and(|c| c.ends.iter().all(|e| e.handle == Handle::Closed));
        if !closed {
            return;
        }
        let mut conn: Conn = self.tcp.conns.remove(&id).expect("checked above");
        assert!(
            conn.ends.iter().all(|end| end.handle == Handle::Closed),
            "a connection is forgotten only once both ends are closed"
        );
        for dir in 0..2 {
            for timer in conn.pipes[dir].purge() {
                plumbing::timers::cancel(timer);
            }
            self.tcp.held.remove(&(id, dir));
        }
        let client = &conn.ends[0];
        self.ports
            .release(index(client.node), Proto::Tcp, client.local.port(), id);
    }
}
