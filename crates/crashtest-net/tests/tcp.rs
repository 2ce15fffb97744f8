//! TCP behaviour on a healthy network and at the edges users rely on: order, refusals,
//! shutdown, kills, pauses, backpressure, partial writes and split halves.

mod common;

use std::cell::Cell;
use std::io::ErrorKind;
use std::rc::Rc;
use std::time::Duration;

use common::{connect_retrying, echo_server, message, read_frame, write_frame};
use crashtest_core::rng::Ratio;
use crashtest_core::{Sim, node, spawn, time};
use crashtest_net::{NetConfig, TcpListener, TcpStream, configure};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[test]
fn healthy_tcp_delivers_every_message_exactly_once_in_order() {
    for seed in 1..=8 {
        Sim::new(seed)
            .run(async move {
                echo_server("server", 80);
                let stream = connect_retrying("server:80").await;
                let (mut read, mut write) = stream.into_split();
                let writer = spawn(async move {
                    for i in 0..300 {
                        write_frame(&mut write, &message(i)).await.unwrap();
                    }
                });
                for i in 0..300 {
                    assert_eq!(
                        read_frame(&mut read).await.unwrap(),
                        message(i),
                        "seed {seed}"
                    );
                }
                writer.await.unwrap();
            })
            .unwrap();
    }
}

#[test]
fn connecting_to_a_port_nobody_listens_on_is_refused() {
    Sim::new(1)
        .run(async {
            let server = node::create("server", std::future::pending);
            let addr = (crashtest_net::ip_of(server.id()), 81);
            let started = time::Instant::now();
            let err = TcpStream::connect(addr).await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::ConnectionRefused);
            assert!(
                started.elapsed() > Duration::ZERO,
                "a refusal takes a round trip"
            );
        })
        .unwrap();
}

#[test]
fn connecting_to_a_dead_node_times_out_after_the_connect_timeout() {
    Sim::new(2)
        .run(async {
            configure(NetConfig {
                connect_timeout: Duration::from_secs(10),
                ..NetConfig::default()
            });
            let server = echo_server("server", 80);
            let _warm = connect_retrying("server:80").await;
            server.kill();
            let started = time::Instant::now();
            let err = TcpStream::connect("server:80").await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::TimedOut);
            assert_eq!(started.elapsed(), Duration::from_secs(10));
        })
        .unwrap();
}

#[test]
fn a_restarted_server_is_reached_by_a_retransmitted_syn() {
    Sim::new(3)
        .run(async {
            let server = echo_server("server", 80);
            let _warm = connect_retrying("server:80").await;
            server.kill();
            let restarter = spawn(async move {
                time::sleep(Duration::from_millis(2500)).await;
                server.restart();
            });
            let mut stream = TcpStream::connect("server:80").await.unwrap();
            write_frame(&mut stream, b"again").await.unwrap();
            assert_eq!(read_frame(&mut stream).await.unwrap(), b"again");
            restarter.await.unwrap();
        })
        .unwrap();
}

#[test]
fn shutdown_makes_the_peer_read_end_of_stream_after_the_data() {
    Sim::new(4)
        .run(async {
            let listener = TcpListener::bind("0.0.0.0:90").await.unwrap();
            let mut client = TcpStream::connect("127.0.0.1:90").await.unwrap();
            let (mut server, peer) = listener.accept().await.unwrap();
            assert_eq!(peer, client.local_addr().unwrap());
            assert_eq!(server.peer_addr().unwrap(), client.local_addr().unwrap());
            client.write_all(b"last words").await.unwrap();
            client.shutdown().await.unwrap();
            let err = client.write_all(b"more").await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::BrokenPipe);
            let mut got = Vec::new();
            server.read_to_end(&mut got).await.unwrap();
            assert_eq!(got, b"last words");
            // The other direction still works.
            server.write_all(b"reply").await.unwrap();
            let mut reply = [0; 5];
            client.read_exact(&mut reply).await.unwrap();
            assert_eq!(&reply, b"reply");
        })
        .unwrap();
}

#[test]
fn killing_a_node_resets_its_connections() {
    for seed in 1..=4 {
        Sim::new(seed)
            .run(async {
                let server = echo_server("server", 80);
                let mut stream = connect_retrying("server:80").await;
                write_frame(&mut stream, b"before").await.unwrap();
                assert_eq!(read_frame(&mut stream).await.unwrap(), b"before");
                server.kill();
                let mut buf = [0; 16];
                let err = stream.read(&mut buf).await.unwrap_err();
                assert_eq!(err.kind(), ErrorKind::ConnectionReset);
                // As on Linux: the error is reported once, then end of stream / broken pipe.
                assert_eq!(stream.read(&mut buf).await.unwrap(), 0);
                let err = stream.write_all(b"after").await.unwrap_err();
                assert_eq!(err.kind(), ErrorKind::BrokenPipe);
            })
            .unwrap();
    }
}

/// A network whose kills are a machine's power cut: connections vanish without a word.
fn silent_kills() -> NetConfig {
    NetConfig {
        kill_resets: false,
        ..NetConfig::default()
    }
}

/// Asserts that a read on `stream` neither returns data, an end nor an error in an hour: the
/// peer's machine died without a word.
async fn assert_hears_nothing_for_an_hour(stream: &mut TcpStream) {
    let mut buf = [0; 16];
    let waited = time::timeout(Duration::from_secs(3600), stream.read(&mut buf)).await;
    assert!(waited.is_err(), "the reader learnt of the kill: {waited:?}");
}

#[test]
fn a_silently_killed_node_says_nothing_and_once_restarted_answers_with_a_reset() {
    for seed in 1..=4 {
        Sim::new(seed)
            .run(async {
                configure(silent_kills());
                let server = echo_server("server", 80);
                let mut stream = connect_retrying("server:80").await;
                write_frame(&mut stream, b"before").await.unwrap();
                assert_eq!(read_frame(&mut stream).await.unwrap(), b"before");
                server.kill();
                // A machine that lost its power says nothing: a reader keeps waiting.
                assert_hears_nothing_for_an_hour(&mut stream).await;
                // Restarted, the node knows no such connection: what the peer sends next is
                // answered with an RST.
                server.restart();
                stream.write_all(b"after").await.unwrap();
                let mut buf = [0; 16];
                let err = stream.read(&mut buf).await.unwrap_err();
                assert_eq!(err.kind(), ErrorKind::ConnectionReset);
                // As on Linux: the error is reported once, then end of stream / broken pipe.
                assert_eq!(stream.read(&mut buf).await.unwrap(), 0);
                let err = stream.write_all(b"more").await.unwrap_err();
                assert_eq!(err.kind(), ErrorKind::BrokenPipe);
            })
            .unwrap();
    }
}

#[test]
fn a_connection_a_silently_killed_server_never_accepted_vanishes_too() {
    Sim::new(1)
        .run(async {
            configure(silent_kills());
            let server = node::create("server", || async {
                let _listener = TcpListener::bind("0.0.0.0:80").await.unwrap();
                std::future::pending::<()>().await;
            });
            let mut stream = connect_retrying("server:80").await;
            server.kill();
            assert_hears_nothing_for_an_hour(&mut stream).await;
        })
        .unwrap();
}

#[test]
fn what_a_silently_killed_node_sent_behind_a_partition_never_arrives_after_the_heal() {
    for seed in 1..=4 {
        Sim::new(seed)
            .run(async {
                configure(silent_kills());
                let received = Rc::new(Cell::new(0u32));
                let ended = Rc::new(Cell::new(false));
                let (seen, end) = (received.clone(), ended.clone());
                let sink = node::create("sink", move || {
                    let (seen, end) = (seen.clone(), end.clone());
                    async move {
                        let listener = TcpListener::bind("0.0.0.0:80").await.unwrap();
                        let (mut stream, _) = listener.accept().await.unwrap();
                        while read_frame(&mut stream).await.is_ok() {
                            seen.set(seen.get() + 1);
                        }
                        end.set(true);
                    }
                });
                let cut = Rc::new(Cell::new(false));
                let told = cut.clone();
                let source = node::create("source", move || {
                    let told = told.clone();
                    async move {
                        let mut stream = connect_retrying("sink:80").await;
                        write_frame(&mut stream, b"through").await.unwrap();
                        while !told.get() {
                            time::sleep(Duration::from_millis(1)).await;
                        }
                        write_frame(&mut stream, b"stalled").await.unwrap();
                        std::future::pending::<()>().await;
                    }
                });
                while received.get() == 0 {
                    time::sleep(Duration::from_millis(1)).await;
                }
                crashtest_net::partition(source.id(), sink.id());
                cut.set(true);
                time::sleep(Duration::from_millis(100)).await;
                assert_eq!(received.get(), 1);
                // Only the dead machine's retransmissions could have carried the stalled
                // frame across; after the heal nothing arrives, not even an RST or a FIN.
                source.kill();
                crashtest_net::heal(source.id(), sink.id());
                time::sleep(Duration::from_secs(60)).await;
                assert_eq!(received.get(), 1, "a dead machine's stalled bytes arrived");
                assert!(!ended.get(), "the sink learnt of the kill");
            })
            .unwrap();
    }
}

#[test]
fn bytes_sent_to_a_silently_killed_node_that_stays_down_time_out_after_the_tcp_timeout() {
    Sim::new(2)
        .run(async {
            configure(NetConfig {
                tcp_timeout: Duration::from_secs(90),
                ..silent_kills()
            });
            let server = echo_server("server", 80);
            let mut stream = connect_retrying("server:80").await;
            server.kill();
            let killed = time::Instant::now();
            write_frame(&mut stream, b"request").await.unwrap();
            let err = read_frame(&mut stream).await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::TimedOut);
            assert!(
                killed.elapsed() >= Duration::from_secs(90),
                "timed out after {:?}",
                killed.elapsed()
            );
        })
        .unwrap();
}

#[test]
fn writing_to_a_peer_that_closed_breaks_the_pipe_once_its_reset_arrives() {
    Sim::new(5)
        .run(async {
            let listener = TcpListener::bind("0.0.0.0:90").await.unwrap();
            let mut client = TcpStream::connect("127.0.0.1:90").await.unwrap();
            let (server, _) = listener.accept().await.unwrap();
            drop(server);
            let mut buf = [0; 4];
            assert_eq!(
                client.read(&mut buf).await.unwrap(),
                0,
                "the FIN reads as EOF"
            );
            client.write_all(b"anyone?").await.unwrap();
            time::sleep(Duration::from_millis(10)).await;
            // The RST finds the server's FIN arrived and the client still writing (Linux's
            // CLOSE_WAIT): a broken pipe, and reads go on seeing the end of the stream.
            let err = client.write_all(b"hello?").await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::BrokenPipe);
            assert_eq!(client.read(&mut buf).await.unwrap(), 0);
        })
        .unwrap();
}

#[test]
fn closing_with_received_bytes_unread_resets_the_connection() {
    Sim::new(5)
        .run(async {
            let listener = TcpListener::bind("0.0.0.0:90").await.unwrap();
            let mut client = TcpStream::connect("127.0.0.1:90").await.unwrap();
            let (mut server, _) = listener.accept().await.unwrap();
            client.write_all(b"request").await.unwrap();
            server.write_all(b"reply").await.unwrap();
            time::sleep(Duration::from_millis(10)).await;
            // The server closes without reading the request: an RST, not a FIN, goes out
            // behind its reply, as Linux's close sends one.
            drop(server);
            time::sleep(Duration::from_millis(10)).await;
            let mut reply = [0; 5];
            client.read_exact(&mut reply).await.unwrap();
            assert_eq!(
                &reply, b"reply",
                "the bytes before the reset are read first"
            );
            let err = client.read(&mut [0; 8]).await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::ConnectionReset);
            let err = client.write_all(b"more").await.unwrap_err();
            assert_eq!(
                err.kind(),
                ErrorKind::BrokenPipe,
                "the reset is reported once"
            );
        })
        .unwrap();
}

#[test]
fn a_zero_linger_resets_on_close_and_another_linger_closes_with_a_fin() {
    Sim::new(5)
        .run(async {
            let listener = TcpListener::bind("0.0.0.0:90").await.unwrap();
            for (linger, reset) in [
                (Some(Duration::ZERO), true),
                (Some(Duration::from_secs(5)), false),
                (None, false),
            ] {
                let mut client = TcpStream::connect("127.0.0.1:90").await.unwrap();
                let (server, _) = listener.accept().await.unwrap();
                server.set_linger(linger).unwrap();
                assert_eq!(server.linger().unwrap(), linger);
                drop(server);
                let read = client.read(&mut [0; 8]).await;
                if reset {
                    assert_eq!(read.unwrap_err().kind(), ErrorKind::ConnectionReset);
                } else {
                    assert_eq!(read.unwrap(), 0, "a FIN: the end of the stream");
                }
            }
            // Once both FINs went, a zero linger closes without a reset, as Linux's does.
            let mut client = TcpStream::connect("127.0.0.1:90").await.unwrap();
            let (mut server, _) = listener.accept().await.unwrap();
            client.shutdown().await.unwrap();
            server.shutdown().await.unwrap();
            assert_eq!(server.read(&mut [0; 8]).await.unwrap(), 0);
            assert_eq!(client.read(&mut [0; 8]).await.unwrap(), 0);
            server.set_linger(Some(Duration::ZERO)).unwrap();
            drop(server);
            time::sleep(Duration::from_millis(10)).await;
            let err = client.write_all(b"late").await.unwrap_err();
            assert_eq!(
                err.kind(),
                ErrorKind::BrokenPipe,
                "no reset: writing was over"
            );
        })
        .unwrap();
}

#[test]
fn a_paused_node_stops_reading_then_catches_up_when_resumed() {
    Sim::new(6)
        .run(async {
            let received = Rc::new(Cell::new(0u32));
            let seen = received.clone();
            let server = node::create("server", move || {
                let seen = seen.clone();
                async move {
                    let listener = TcpListener::bind("0.0.0.0:80").await.unwrap();
                    let (mut stream, _) = listener.accept().await.unwrap();
                    while read_frame(&mut stream).await.is_ok() {
                        seen.set(seen.get() + 1);
                    }
                }
            });
            let mut stream = connect_retrying("server:80").await;
            write_frame(&mut stream, b"one").await.unwrap();
            time::sleep(Duration::from_millis(10)).await;
            assert_eq!(received.get(), 1);
            server.pause();
            for _ in 0..5 {
                write_frame(&mut stream, b"queued").await.unwrap();
            }
            time::sleep(Duration::from_secs(1)).await;
            assert_eq!(received.get(), 1, "a paused node reads nothing");
            server.resume();
            time::sleep(Duration::from_millis(10)).await;
            assert_eq!(received.get(), 6, "the data waited and arrives whole");
        })
        .unwrap();
}

#[test]
fn a_writer_blocks_when_the_reader_does_not_read() {
    Sim::new(7)
        .run(async {
            configure(NetConfig {
                tcp_buffer: 10_000,
                ..NetConfig::default()
            });
            let listener = TcpListener::bind("0.0.0.0:90").await.unwrap();
            let client = TcpStream::connect("127.0.0.1:90").await.unwrap();
            let (mut server, _) = listener.accept().await.unwrap();
            let written = Rc::new(Cell::new(0usize));
            let progress = written.clone();
            let writer = crashtest_core::task::spawn_local(async move {
                let mut client = client;
                let chunk = [7u8; 1000];
                for _ in 0..50 {
                    client.write_all(&chunk).await.unwrap();
                    progress.set(progress.get() + chunk.len());
                }
            });
            time::sleep(Duration::from_secs(1)).await;
            assert_eq!(
                written.get(),
                10_000,
                "the writer fills the buffer, then waits"
            );
            let mut all = Vec::new();
            let mut buf = [0u8; 4096];
            while all.len() < 50_000 {
                let n = server.read(&mut buf).await.unwrap();
                all.extend_from_slice(&buf[..n]);
            }
            writer.await.unwrap();
            assert_eq!(written.get(), 50_000);
            assert!(all.iter().all(|&b| b == 7));
        })
        .unwrap();
}

#[test]
fn partial_writes_accept_fewer_bytes_and_lose_nothing() {
    Sim::new(8)
        .run(async {
            configure(NetConfig {
                tcp_partial_write: Ratio::new(1, 2),
                ..NetConfig::default()
            });
            let listener = TcpListener::bind("0.0.0.0:90").await.unwrap();
            let mut client = TcpStream::connect("127.0.0.1:90").await.unwrap();
            let (mut server, _) = listener.accept().await.unwrap();
            let payload: Vec<u8> = (0..10_000u32).map(|i| (i % 253) as u8).collect();
            let mut short = 0;
            for chunk in payload.chunks(200) {
                let mut offset = 0;
                while offset < chunk.len() {
                    let n = client.write(&chunk[offset..]).await.unwrap();
                    assert!(n > 0);
                    if n < chunk.len() - offset {
                        short += 1;
                    }
                    offset += n;
                }
            }
            assert!(short > 0, "some writes were partial");
            let mut got = vec![0; payload.len()];
            server.read_exact(&mut got).await.unwrap();
            assert_eq!(got, payload);
        })
        .unwrap();
}

#[test]
fn borrowed_halves_read_and_write_one_stream() {
    Sim::new(9)
        .run(async {
            echo_server("server", 80);
            let mut stream = connect_retrying("server:80").await;
            let (mut read, mut write) = stream.split();
            write_frame(&mut write, b"split").await.unwrap();
            assert_eq!(read_frame(&mut read).await.unwrap(), b"split");
        })
        .unwrap();
}

#[test]
fn binding_another_nodes_address_is_refused() {
    Sim::new(10)
        .run(async {
            let other = node::create("other", std::future::pending);
            let err = TcpListener::bind((crashtest_net::ip_of(other.id()), 80))
                .await
                .unwrap_err();
            assert_eq!(err.kind(), ErrorKind::AddrNotAvailable);
        })
        .unwrap();
}

/// Clients of a server that is killed silently and restarted, each retrying its frame until
/// one is echoed: what they see depends on every draw of the run.
async fn clients_of_a_silently_killed_server() {
    configure(silent_kills());
    let server = echo_server("server", 80);
    let clients: Vec<_> = (0..3)
        .map(|i| {
            spawn(async move {
                loop {
                    let mut stream = connect_retrying("server:80").await;
                    let sent = write_frame(&mut stream, &message(i)).await;
                    let echoed = time::timeout(Duration::from_secs(2), read_frame(&mut stream));
                    if sent.is_ok() && matches!(echoed.await, Ok(Ok(_))) {
                        return;
                    }
                    time::sleep(Duration::from_millis(100)).await;
                }
            })
        })
        .collect();
    time::sleep(Duration::from_millis(3)).await;
    server.kill();
    time::sleep(Duration::from_secs(1)).await;
    server.restart();
    for client in clients {
        client.await.unwrap();
    }
}

#[test]
fn a_seed_replays_silent_kills_exactly_and_seeds_differ() {
    let run = crashtest_core::check_determinism(3, crashtest_core::Config::default(), || {
        clients_of_a_silently_killed_server()
    });
    assert!(run.expect("no divergence").is_ok());
    let fingerprints: std::collections::BTreeSet<u64> = (0..6)
        .map(|seed| {
            Sim::new(seed)
                .run(clients_of_a_silently_killed_server())
                .unwrap()
                .fingerprint
        })
        .collect();
    assert!(fingerprints.len() > 1, "every seed gave one fingerprint");
}

#[test]
fn a_deadlock_report_names_the_socket_each_task_waits_on() {
    let failure = Sim::new(2)
        .run(async {
            node::create("server", || async {
                let listener = TcpListener::bind("0.0.0.0:80").await.unwrap();
                let (_stream, _) = listener.accept().await.unwrap();
                // Never answers, and never accepts again.
                let _second = listener.accept().await;
            });
            time::sleep(Duration::from_millis(1)).await;
            let mut stream = TcpStream::connect("server:80").await.unwrap();
            let mut reply = [0; 4];
            let _ = stream.read_exact(&mut reply).await;
        })
        .unwrap_err();
    let crashtest_core::FailureKind::Deadlock { waiting } = &failure.kind else {
        panic!("expected a deadlock: {failure}");
    };
    let line = |what: &str| {
        waiting
            .iter()
            .find(|line| line.contains(what))
            .unwrap_or_else(|| panic!("no line names {what}: {waiting:#?}"))
    };
    assert!(
        line("reading tcp 10.0.0.").contains("on supervisor"),
        "{waiting:#?}"
    );
    assert!(
        line("accepting tcp on 0.0.0.0:80").contains("on server"),
        "{waiting:#?}"
    );
}

/// A client kept in a `static` between runs, as a connection pool in a `LazyLock` keeps its
/// connections: the sockets of the run that made them.
#[derive(Default)]
struct Kept {
    stream: Option<TcpStream>,
    listener: Option<TcpListener>,
}

thread_local! {
    static KEPT: std::cell::RefCell<Kept> = std::cell::RefCell::new(Kept::default());
}

#[test]
fn a_socket_kept_past_its_run_is_refused_in_the_next_and_leaves_it_alone() {
    Sim::new(1)
        .run(async {
            // The run's first socket: the next run's first has its id.
            let listener = TcpListener::bind("0.0.0.0:81").await.unwrap();
            echo_server("server", 80);
            let stream = connect_retrying("server:80").await;
            KEPT.with(|kept| {
                *kept.borrow_mut() = Kept {
                    stream: Some(stream),
                    listener: Some(listener),
                }
            });
        })
        .unwrap();
    // Dropping the earlier run's sockets inside a later run closes nothing of the later run's.
    Sim::new(1)
        .run(async {
            echo_server("server", 80);
            time::sleep(Duration::from_millis(1)).await;
            KEPT.with(|kept| drop(kept.borrow_mut().listener.take()));
            let mut stream = connect_retrying("server:80").await;
            write_frame(&mut stream, b"still open").await.unwrap();
            assert_eq!(read_frame(&mut stream).await.unwrap(), b"still open");
        })
        .unwrap();
    let failure = Sim::new(1)
        .run(async {
            let mut stream = KEPT.with(|kept| kept.borrow_mut().stream.take()).unwrap();
            let _ = write_frame(&mut stream, b"from an earlier run").await;
        })
        .expect_err("a socket of an earlier run is refused");
    let message = failure.to_string();
    assert!(
        message
            .contains("refused: a TCP stream made in an earlier simulation was used in this one")
            && message.contains("LazyLock"),
        "{message}"
    );
}
