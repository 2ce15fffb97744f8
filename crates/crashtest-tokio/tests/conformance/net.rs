//! The network: TCP half-close, refused connections, owned halves, TCP readiness and peeking,
//! UDP datagrams. The
//! scripts use loopback, which is the host's on tokio and the node's own in a simulation.

macro_rules! half_close {
    ($tokio:ident) => {
        async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            use $tokio as tokio;
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server = tokio::spawn(async move {
                let (mut stream, peer) = listener.accept().await.unwrap();
                let mut got = Vec::new();
                stream.read_to_end(&mut got).await.unwrap();
                stream
                    .write_all(format!("got {} bytes", got.len()).as_bytes())
                    .await
                    .unwrap();
                stream.shutdown().await.unwrap();
                (got, peer)
            });
            let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
            let local = client.local_addr().unwrap();
            let peer_is_server = client.peer_addr().unwrap() == addr;
            client.write_all(b"hello").await.unwrap();
            client.shutdown().await.unwrap();
            let mut reply = String::new();
            client.read_to_string(&mut reply).await.unwrap();
            let again = client.read(&mut [0; 4]).await.unwrap();
            let (got, peer) = server.await.unwrap();
            (reply, again, got, peer == local, peer_is_server)
        }
    };
}

#[test]
fn a_half_closed_stream_still_reads_the_reply_then_the_end() {
    conform!(half_close);
}

macro_rules! std_listener {
    ($tokio:ident) => {
        async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            use $tokio as tokio;
            // As tonic's `serve(addr)` binds: std's listener, handed to tokio.
            let from_std = |addr: &str| {
                let bound = std::net::TcpListener::bind(addr)?;
                bound.set_nonblocking(true)?;
                tokio::net::TcpListener::from_std(bound)
            };
            let listener = from_std("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let client = tokio::spawn(async move {
                let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
                stream.write_all(b"ping").await.unwrap();
                stream.shutdown().await.unwrap();
            });
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut got = Vec::new();
            stream.read_to_end(&mut got).await.unwrap();
            client.await.unwrap();
            let taken = from_std(&addr.to_string()).map(drop);
            (addr.port() != 0, got, taken.unwrap_err().kind())
        }
    };
}

#[test]
fn a_std_listener_handed_to_tokio_accepts_and_its_port_is_taken() {
    conform!(std_listener);
}

macro_rules! refused {
    ($tokio:ident) => {
        async move {
            use $tokio as tokio;
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            drop(listener);
            let err = tokio::net::TcpStream::connect(addr).await.unwrap_err();
            let taken = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let again = tokio::net::TcpListener::bind(taken.local_addr().unwrap()).await;
            let os = |e: std::io::Error| (e.kind(), e.raw_os_error());
            (os(err), os(again.unwrap_err()))
        }
    };
}

#[test]
fn connecting_to_a_closed_port_is_refused_and_a_taken_port_is_in_use() {
    conform!(refused);
}

macro_rules! owned_halves {
    ($tokio:ident) => {
        async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            use $tokio as tokio;
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server = tokio::spawn(async move {
                let (stream, _) = listener.accept().await.unwrap();
                let (mut read, mut write) = stream.into_split();
                write.write_all(b"ready").await.unwrap();
                drop(write);
                let mut got = Vec::new();
                read.read_to_end(&mut got).await.unwrap();
                got
            });
            let first = tokio::net::TcpStream::connect(addr).await.unwrap();
            let (mut read, mut write) = first.into_split();
            let mut ready = [0; 5];
            read.read_exact(&mut ready).await.unwrap();
            let end = read.read(&mut [0; 1]).await.unwrap();
            write.write_all(b"bye").await.unwrap();
            let other = tokio::net::TcpStream::connect(addr);
            let reunited = read.reunite(write).map(|_| ()).map_err(|e| e.to_string());
            drop(other);
            (ready, end, reunited, server.await.unwrap())
        }
    };
}

#[test]
fn a_dropped_owned_write_half_ends_the_peers_reads() {
    conform!(owned_halves);
}

macro_rules! datagrams {
    ($tokio:ident) => {
        async move {
            use $tokio as tokio;
            let a = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let b = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let c = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let b_addr = b.local_addr().unwrap();
            a.send_to(b"one", b_addr).await.unwrap();
            let mut buf = [0; 2];
            let (n, from) = b.recv_from(&mut buf).await.unwrap();
            let truncated = (n, buf, from == a.local_addr().unwrap());
            b.connect(c.local_addr().unwrap()).await.unwrap();
            let unconnected = a.send(b"x").await.map_err(|e| e.raw_os_error());
            a.send_to(b"ignored", b_addr).await.unwrap();
            c.send_to(b"from c", b_addr).await.unwrap();
            let mut buf = [0; 16];
            let n = b.recv(&mut buf).await.unwrap();
            (truncated, unconnected, buf[..n].to_vec())
        }
    };
}

#[test]
fn datagrams_carry_their_sender_truncate_and_a_connected_socket_filters() {
    conform!(datagrams);
}

macro_rules! port_unreachable {
    ($tokio:ident) => {
        async move {
            use $tokio as tokio;
            let os = |e: std::io::Error| e.raw_os_error();
            let wait = || tokio::time::sleep(std::time::Duration::from_millis(1));
            let closed = {
                let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
                socket.local_addr().unwrap()
            };
            let a = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
            a.connect(closed).await.unwrap();
            let mut buf = [0; 8];
            let first = a.send(b"x").await.map_err(os);
            wait().await;
            let recv =
                tokio::time::timeout(std::time::Duration::from_millis(100), a.recv(&mut buf))
                    .await
                    .map(|r| r.map_err(os));
            let again = a.send(b"y").await.map_err(os);
            wait().await;
            let send_after = a.send(b"z").await.map_err(os);
            let send_next = a.send(b"w").await.map_err(os);
            let b = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
            b.send_to(b"x", closed).await.unwrap();
            wait().await;
            let unconnected =
                tokio::time::timeout(std::time::Duration::from_millis(100), b.recv_from(&mut buf))
                    .await
                    .is_err();
            (first, recv.ok(), again, send_after, send_next, unconnected)
        }
    };
}

#[test]
fn a_connected_socket_learns_a_closed_port_from_the_next_call_and_an_unconnected_one_never() {
    conform!(port_unreachable);
}

macro_rules! datagram_readiness {
    ($tokio:ident) => {
        async move {
            use tokio::io::Interest;
            use $tokio as tokio;
            let a = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let b = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let (a_addr, b_addr) = (a.local_addr().unwrap(), b.local_addr().unwrap());
            let writable = a.ready(Interest::WRITABLE).await.unwrap();
            a.writable().await.unwrap();
            let idle = (
                b.try_peek_from(&mut [0; 4]).map_err(|e| e.kind()),
                b.try_peek_sender().map_err(|e| e.kind()),
                b.try_recv(&mut [0; 4]).map_err(|e| e.kind()),
            );
            a.send_to(b"first", b_addr).await.unwrap();
            b.readable().await.unwrap();
            let readable = b.ready(Interest::READABLE).await.unwrap();
            let mut head = [0; 3];
            let (n, from) = b.peek_from(&mut head).await.unwrap();
            let peeked = (
                n,
                head,
                from == a_addr,
                b.peek_sender().await.unwrap() == a_addr,
            );
            let mut again = [0; 16];
            let n = b.try_peek(&mut again).unwrap();
            let peeked_again = again[..n].to_vec();
            let mut got = [0; 16];
            let (n, from) = b.recv_from(&mut got).await.unwrap();
            let received = (got[..n].to_vec(), from == a_addr);
            a.send_to(b"second", b_addr).await.unwrap();
            let mut into = Vec::with_capacity(16);
            let (n, from) = b.recv_buf_from(&mut into).await.unwrap();
            let into_buf = (n, into, from == a_addr);
            (
                (writable.is_writable(), writable.is_readable()),
                idle,
                (readable.is_readable(), readable.is_writable()),
                peeked,
                peeked_again,
                received,
                into_buf,
            )
        }
    };
}

#[test]
fn a_datagram_socket_is_writable_readable_once_one_is_queued_and_peeks_without_receiving() {
    conform!(datagram_readiness);
}

macro_rules! shared_socket_waiters {
    ($tokio:ident) => {
        async move {
            use std::sync::Arc;
            use std::time::Duration;
            use $tokio as tokio;
            // Two tasks await one datagram socket, two await one listener: every datagram
            // and every connection reaches a waiting task, none is left waiting.
            let socket = Arc::new(tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap());
            let listener = Arc::new(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap());
            let (to_socket, to_listener) =
                (socket.local_addr().unwrap(), listener.local_addr().unwrap());
            let receivers: Vec<_> = (0..2)
                .map(|_| {
                    let socket = Arc::clone(&socket);
                    tokio::spawn(async move {
                        let mut buf = [0; 8];
                        let (n, _) = socket.recv_from(&mut buf).await.unwrap();
                        buf[..n].to_vec()
                    })
                })
                .collect();
            let acceptors: Vec<_> = (0..2)
                .map(|_| {
                    let listener = Arc::clone(&listener);
                    tokio::spawn(async move { listener.accept().await.is_ok() })
                })
                .collect();
            // Both of each pair are waiting before anything arrives.
            tokio::time::sleep(Duration::from_millis(1)).await;
            let sender = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
            sender.send_to(b"one", to_socket).await.unwrap();
            sender.send_to(b"two", to_socket).await.unwrap();
            let _first = tokio::net::TcpStream::connect(to_listener).await.unwrap();
            let _second = tokio::net::TcpStream::connect(to_listener).await.unwrap();
            let mut received = Vec::new();
            for receiver in receivers {
                received.push(receiver.await.unwrap());
            }
            received.sort();
            let mut accepted = Vec::new();
            for acceptor in acceptors {
                accepted.push(acceptor.await.unwrap());
            }
            (received, accepted)
        }
    };
}

#[test]
fn tasks_sharing_a_socket_or_a_listener_each_get_a_datagram_or_a_connection() {
    conform!(shared_socket_waiters);
}

macro_rules! stream_readiness {
    ($tokio:ident) => {
        async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt, Interest};
            use $tokio as tokio;
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server = tokio::spawn(async move {
                let (stream, _) = listener.accept().await.unwrap();
                // The server reads through readiness alone: tokio's `readable` + `try_read`
                // loop, to the end of the client's stream.
                let mut got = Vec::new();
                loop {
                    stream.readable().await.unwrap();
                    let mut buf = [0; 3];
                    match stream.try_read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                        Err(e) => panic!("{e}"),
                    }
                }
                // At the end of the stream a read does not wait: readable. (Whether tokio
                // also says read-closed by then depends on when epoll reported the FIN.)
                let closed = stream.ready(Interest::READABLE).await.unwrap();
                stream.writable().await.unwrap();
                let wrote = stream.try_write(b"bye").unwrap();
                (got, closed.is_readable(), wrote)
            });
            let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
            let writable = stream.ready(Interest::WRITABLE).await.unwrap();
            let (mut reader, mut writer) = stream.into_split();
            writer.writable().await.unwrap();
            writer.write_all(b"hello, readiness").await.unwrap();
            writer.shutdown().await.unwrap();
            // A peek waits for bytes and leaves them: the read that follows sees them again.
            let mut head = [0; 8];
            let n = reader.peek(&mut head).await.unwrap();
            let mut read = vec![0; n];
            reader.read_exact(&mut read).await.unwrap();
            let peeked_then_read = n > 0 && head[..n] == read[..];
            let mut rest = Vec::new();
            reader.read_to_end(&mut rest).await.unwrap();
            read.extend_from_slice(&rest);
            let at_end = reader.peek(&mut head).await.unwrap();
            let (got, closed, wrote) = server.await.unwrap();
            (
                (writable.is_writable(), writable.is_readable()),
                peeked_then_read,
                String::from_utf8(read).unwrap(),
                at_end,
                String::from_utf8(got).unwrap(),
                closed,
                wrote,
            )
        }
    };
}

#[test]
fn stream_readiness_and_peeking_work_as_on_tokio() {
    conform!(stream_readiness);
}

macro_rules! resets_on_close {
    ($tokio:ident) => {
        async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            use $tokio as tokio;
            let kind =
                |result: std::io::Result<usize>| result.map_err(|e| (e.kind(), e.raw_os_error()));
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();

            // Closed with a request unread: the client reads the reply, then the reset.
            let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
            let (server, _) = listener.accept().await.unwrap();
            client.write_all(b"request").await.unwrap();
            server.readable().await.unwrap();
            let mut server = server;
            server.write_all(b"reply").await.unwrap();
            drop(server);
            let mut reply = [0; 5];
            client.read_exact(&mut reply).await.unwrap();
            let unread = (
                reply,
                kind(client.read(&mut [0; 8]).await),
                kind(client.write(b"more").await),
                kind(client.read(&mut [0; 8]).await),
            );

            // Closed with a zero linger: a reset though nothing was unread.
            let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
            let (server, _) = listener.accept().await.unwrap();
            server.set_zero_linger().unwrap();
            drop(server);
            let zero_linger = kind(client.read(&mut [0; 8]).await);

            // Closed plainly: a FIN; the client's write draws a reset, which breaks its pipe.
            let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
            let (server, _) = listener.accept().await.unwrap();
            drop(server);
            let fin = kind(client.read(&mut [0; 8]).await);
            let broken = loop {
                match client.write(b"anyone?").await {
                    Ok(_) => tokio::time::sleep(std::time::Duration::from_millis(1)).await,
                    Err(err) => break (err.kind(), err.raw_os_error()),
                }
            };
            let after = kind(client.read(&mut [0; 8]).await);
            (unread, zero_linger, fin, broken, after)
        }
    };
}

#[test]
fn closing_with_bytes_unread_or_a_zero_linger_resets_and_a_reset_after_a_fin_breaks_the_pipe() {
    conform!(resets_on_close);
}

macro_rules! socket_bind_takes_its_port {
    ($tokio:ident) => {
        async move {
            use $tokio as tokio;
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
            let bound = socket.local_addr().unwrap();
            let other = tokio::net::TcpSocket::new_v4().unwrap();
            let taken = other.bind(bound).map_err(|e| (e.kind(), e.raw_os_error()));
            let listener = socket.listen(8).unwrap();
            let client = tokio::net::TcpStream::connect(bound).await.map(drop);
            let (_, _) = listener.accept().await.unwrap();
            let released = {
                drop(listener);
                let again = tokio::net::TcpSocket::new_v4().unwrap();
                again.bind(bound).map_err(|e| e.kind())
            };
            (bound.port() != 0, taken, client.is_ok(), released)
        }
    };
}

#[test]
fn a_sockets_bind_takes_its_port_at_once_and_listening_keeps_it() {
    conform!(socket_bind_takes_its_port);
}
