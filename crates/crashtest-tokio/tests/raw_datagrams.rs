//! A library that sends and receives datagrams with its own system calls inside a UDP
//! socket's `try_io` (quinn's runtime, through quinn-udp's `sendmsg` and `recvmmsg`) runs on
//! the simulated network: the calls on the socket's descriptor are answered from the
//! simulated socket.

#![cfg(all(target_os = "linux", target_env = "gnu"))]

use std::cell::RefCell;
use std::mem::{size_of, zeroed};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::time::Duration;

use crashtest_tokio as tokio;
use tokio::io::Interest;
use tokio::net::UdpSocket;

/// `UDP_SEGMENT` (linux/udp.h).
const UDP_SEGMENT: libc::c_int = 103;

/// A socket as quinn's runtime makes one: bound with std, then handed to tokio.
fn bind(addr: &str) -> UdpSocket {
    let socket = std::net::UdpSocket::bind(addr).expect("binds on the simulated network");
    socket.set_nonblocking(true).unwrap();
    UdpSocket::from_std(socket).expect("the stand-in adopts it")
}

/// Sends `data` to `to` as datagrams of `segment` bytes with one `sendmsg`, as quinn-udp does
/// when the socket takes `UDP_SEGMENT`.
fn send_segmented(
    socket: &UdpSocket,
    to: SocketAddr,
    data: &[u8],
    segment: u16,
) -> std::io::Result<usize> {
    let SocketAddr::V4(to) = to else {
        panic!("an IPv4 peer")
    };
    // SAFETY: plain C structs, zero is a valid value for each.
    let mut name: libc::sockaddr_in = unsafe { zeroed() };
    name.sin_family = libc::AF_INET as libc::sa_family_t;
    name.sin_port = to.port().to_be();
    name.sin_addr.s_addr = u32::from_ne_bytes(to.ip().octets());
    let mut part = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    // SAFETY: CMSG_SPACE computes a size.
    let mut control = vec![0u8; unsafe { libc::CMSG_SPACE(size_of::<u16>() as u32) } as usize];
    // SAFETY: as above.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_name = (&raw mut name).cast();
    msg.msg_namelen = size_of::<libc::sockaddr_in>() as u32;
    msg.msg_iov = &raw mut part;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = control.len();
    // SAFETY: the control buffer has room for one u16 message.
    unsafe {
        let header = libc::CMSG_FIRSTHDR(&msg);
        (*header).cmsg_level = libc::SOL_UDP;
        (*header).cmsg_type = UDP_SEGMENT;
        (*header).cmsg_len = libc::CMSG_LEN(size_of::<u16>() as u32) as usize;
        libc::CMSG_DATA(header)
            .cast::<u16>()
            .write_unaligned(segment);
    }
    let fd = socket.as_raw_fd();
    socket.try_io(Interest::WRITABLE, || {
        // SAFETY: `msg` and what it points to live through the call.
        let sent = unsafe { libc::sendmsg(fd, &msg, 0) };
        if sent < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(sent as usize)
    })
}

/// Receives up to 8 datagrams with one `recvmmsg`, as quinn-udp does: each one's bytes and
/// sender.
async fn receive_batch(socket: &UdpSocket) -> Vec<(Vec<u8>, SocketAddr)> {
    let fd = socket.as_raw_fd();
    socket
        .async_io(Interest::READABLE, || {
            let mut buffers = [[0u8; 64]; 8];
            // SAFETY: plain C structs, zero is a valid value for each.
            let mut names: [libc::sockaddr_in; 8] = unsafe { zeroed() };
            let mut parts: Vec<libc::iovec> = buffers
                .iter_mut()
                .map(|buffer| libc::iovec {
                    iov_base: buffer.as_mut_ptr().cast(),
                    iov_len: buffer.len(),
                })
                .collect();
            // SAFETY: as above.
            let mut msgs: [libc::mmsghdr; 8] = unsafe { zeroed() };
            for (index, msg) in msgs.iter_mut().enumerate() {
                msg.msg_hdr.msg_name = (&raw mut names[index]).cast();
                msg.msg_hdr.msg_namelen = size_of::<libc::sockaddr_in>() as u32;
                msg.msg_hdr.msg_iov = &raw mut parts[index];
                msg.msg_hdr.msg_iovlen = 1;
            }
            // SAFETY: every message points to live buffers of the lengths given.
            let received =
                unsafe { libc::recvmmsg(fd, msgs.as_mut_ptr(), 8, 0, std::ptr::null_mut()) };
            if received < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok((0..received as usize)
                .map(|index| {
                    let name = names[index];
                    let from = SocketAddr::from((
                        name.sin_addr.s_addr.to_ne_bytes(),
                        u16::from_be(name.sin_port),
                    ));
                    (
                        buffers[index][..msgs[index].msg_len as usize].to_vec(),
                        from,
                    )
                })
                .collect())
        })
        .await
        .expect("a batch arrives")
}

/// What the server received (sorted), and what the client got back.
type Seen = Rc<RefCell<Vec<(Vec<u8>, SocketAddr)>>>;

async fn exchange(seen: Seen) {
    let server_seen = seen.clone();
    crashtest::node::create("server", move || {
        let seen = server_seen.clone();
        async move {
            let socket = bind("0.0.0.0:4433");
            // The datagrams travel apart, each with its own latency: batches until all are in.
            let mut received = Vec::new();
            while received.len() < 3 {
                received.extend(receive_batch(&socket).await);
            }
            received.sort();
            let client = received[0].1;
            seen.borrow_mut().extend(received);
            let echoed = socket.try_io(Interest::WRITABLE, || socket.try_send_to(b"echo", client));
            assert_eq!(echoed.unwrap(), 4);
        }
    });
    tokio::time::sleep(Duration::from_millis(1)).await;
    let socket = bind("0.0.0.0:0");
    let server: SocketAddr = tokio::net::lookup_host("server:4433")
        .await
        .unwrap()
        .next()
        .unwrap();
    let sent = send_segmented(&socket, server, b"0123456789abcdefghijKLMNO", 10);
    assert_eq!(sent.unwrap(), 25);
    let reply = receive_batch(&socket).await;
    seen.borrow_mut().extend(reply);
}

#[test]
fn a_segmented_sendmsg_arrives_as_its_datagrams_through_recvmmsg() {
    let seen = Seen::default();
    crashtest::Sim::new(1)
        .run(exchange(seen.clone()))
        .expect("the exchange completes");
    let seen = seen.borrow();
    let bytes: Vec<&[u8]> = seen.iter().map(|(bytes, _)| bytes.as_slice()).collect();
    assert_eq!(
        bytes,
        [&b"0123456789"[..], b"KLMNO", b"abcdefghij", b"echo"]
    );
    // The server saw the client's address, and the client the server's.
    assert_eq!(seen[0].1, seen[1].1);
    assert_eq!(seen[3].1.port(), 4433);
    assert_ne!(seen[0].1.port(), 4433);
}

#[test]
fn a_receive_with_nothing_queued_would_block_instead_of_waiting() {
    crashtest::Sim::new(1)
        .run(async {
            let socket = bind("0.0.0.0:0");
            let fd = socket.as_raw_fd();
            let mut byte = [0u8; 1];
            // Not readable: try_io does not call the closure.
            let asked = socket.try_io(Interest::READABLE, || Ok(()));
            assert_eq!(asked.unwrap_err().kind(), std::io::ErrorKind::WouldBlock);
            // Called anyway (writable), the receive itself says EAGAIN.
            let received = socket.try_io(Interest::WRITABLE, || {
                // SAFETY: the buffer is one byte long.
                let n = unsafe { libc::recv(fd, byte.as_mut_ptr().cast(), 1, 0) };
                match n {
                    -1 => Err(std::io::Error::last_os_error()),
                    n => Ok(n),
                }
            });
            assert_eq!(received.unwrap_err().kind(), std::io::ErrorKind::WouldBlock);
        })
        .unwrap();
}

#[test]
fn raw_datagram_runs_replay_from_their_seed() {
    let fingerprint = |seed| {
        crashtest::Sim::new(seed)
            .run(exchange(Seen::default()))
            .unwrap()
            .fingerprint
    };
    assert_eq!(fingerprint(5), fingerprint(5));
    assert_ne!(fingerprint(5), fingerprint(6));
}

#[test]
fn a_duplicate_kept_past_the_adoption_is_refused_naming_the_tokio_socket() {
    let failure = crashtest::Sim::new(1)
        .run(async {
            let socket = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
            let duplicate = socket.try_clone().unwrap();
            let _adopted = UdpSocket::from_std(socket).unwrap();
            let sent = duplicate.send_to(b"lost", "10.0.0.9:9");
            assert_eq!(sent.unwrap_err().raw_os_error(), Some(libc::EPERM));
        })
        .expect_err("the run fails");
    let text = failure.to_string();
    assert!(
        text.contains("sendto was called inside the simulation on a duplicate of a socket"),
        "{text}"
    );
    assert!(text.contains("through the tokio socket"), "{text}");
}

thread_local! {
    /// A socket kept past its run, as a client kept in a `static` keeps its sockets.
    static KEPT: RefCell<Option<UdpSocket>> = const { RefCell::new(None) };
}

#[test]
fn a_raw_send_on_a_socket_of_an_earlier_run_fails_the_run_instead_of_aborting() {
    crashtest::Sim::new(1)
        .run(async { KEPT.with(|kept| *kept.borrow_mut() = Some(bind("0.0.0.0:0"))) })
        .unwrap();
    let failure = crashtest::Sim::new(2)
        .run(async {
            KEPT.with(|kept| {
                let kept = kept.borrow();
                let socket = kept.as_ref().expect("kept by the first run");
                let fd = socket.as_raw_fd();
                let sent = socket.try_io(Interest::WRITABLE, || {
                    // SAFETY: a one-byte buffer, and no address (the call fails first).
                    match unsafe { libc::send(fd, b"x".as_ptr().cast(), 1, 0) } {
                        -1 => Err(std::io::Error::last_os_error()),
                        sent => Ok(sent),
                    }
                });
                assert!(sent.is_err(), "nothing is sent on another run's socket");
            });
        })
        .expect_err("the second run fails");
    assert!(failure.to_string().contains("refused"), "{failure}");
    KEPT.with(|kept| kept.borrow_mut().take());
}

#[test]
fn a_datagram_received_with_recvmsg_is_scattered_over_its_buffers_in_order() {
    crashtest::Sim::new(1)
        .run(async {
            let receiver = bind("0.0.0.0:7000");
            let sender = bind("0.0.0.0:0");
            sender
                .send_to(b"0123456789", "127.0.0.1:7000")
                .await
                .unwrap();
            receiver.readable().await.unwrap();
            let fd = receiver.as_raw_fd();
            let (mut first, mut second, mut rest) = ([0u8; 3], [0u8; 4], [0u8; 100]);
            let received = receiver.try_io(Interest::READABLE, || {
                let mut parts = [
                    libc::iovec {
                        iov_base: first.as_mut_ptr().cast(),
                        iov_len: first.len(),
                    },
                    libc::iovec {
                        iov_base: second.as_mut_ptr().cast(),
                        iov_len: second.len(),
                    },
                    libc::iovec {
                        iov_base: rest.as_mut_ptr().cast(),
                        iov_len: rest.len(),
                    },
                ];
                // SAFETY: plain C structs, zero is a valid value for each.
                let mut name: libc::sockaddr_storage = unsafe { zeroed() };
                // SAFETY: as above.
                let mut msg: libc::msghdr = unsafe { zeroed() };
                msg.msg_name = (&raw mut name).cast();
                msg.msg_namelen = size_of::<libc::sockaddr_storage>() as u32;
                msg.msg_iov = parts.as_mut_ptr();
                msg.msg_iovlen = parts.len();
                // SAFETY: every buffer lives through the call, with the lengths given.
                match unsafe { libc::recvmsg(fd, &mut msg, 0) } {
                    -1 => Err(std::io::Error::last_os_error()),
                    n => Ok((n, msg.msg_namelen as usize)),
                }
            });
            assert_eq!(received.unwrap(), (10, size_of::<libc::sockaddr_in>()));
            assert_eq!(
                (&first, &second, &rest[..3]),
                (b"012", b"3456", &b"789"[..])
            );
        })
        .unwrap();
}

#[test]
fn a_segmented_send_of_more_segments_than_linux_allows_is_refused_with_einval() {
    crashtest::Sim::new(1)
        .run(async {
            let socket = bind("0.0.0.0:0");
            let to: SocketAddr = "127.0.0.1:9".parse().unwrap();
            let sent = send_segmented(&socket, to, &[7; 65 * 10], 10);
            assert_eq!(sent.unwrap_err().raw_os_error(), Some(libc::EINVAL));
            assert_eq!(send_segmented(&socket, to, &[7; 64 * 10], 10).unwrap(), 640);
        })
        .unwrap();
}
