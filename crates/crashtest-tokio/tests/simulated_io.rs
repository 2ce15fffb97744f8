//! tokio's network and file calls inside a simulation: they reach the simulated network and
//! disk (with their faults), never the host's.

use crashtest_tokio as tokio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[test]
fn nodes_talk_over_tokio_sockets_and_a_kill_resets_the_connection() {
    crashtest::Sim::new(11)
        .run(async {
            let server = crashtest::node::create("server", || async {
                let listener = tokio::net::TcpListener::bind("0.0.0.0:9000").await.unwrap();
                loop {
                    let (mut stream, _) = listener.accept().await.unwrap();
                    tokio::spawn(async move {
                        let mut buf = [0; 4];
                        while stream.read_exact(&mut buf).await.is_ok() {
                            let n = u32::from_be_bytes(buf) + 1;
                            stream.write_all(&n.to_be_bytes()).await.unwrap();
                        }
                    });
                }
            });
            tokio::time::sleep(Duration::from_millis(1)).await;
            let mut stream = tokio::net::TcpStream::connect("server:9000").await.unwrap();
            stream.write_all(&41u32.to_be_bytes()).await.unwrap();
            let mut reply = [0; 4];
            stream.read_exact(&mut reply).await.unwrap();
            assert_eq!(u32::from_be_bytes(reply), 42);
            server.kill();
            let cut = stream.read_exact(&mut reply).await.unwrap_err();
            assert_eq!(cut.kind(), std::io::ErrorKind::ConnectionReset);
        })
        .unwrap();
}

#[test]
fn a_connect_inside_a_simulation_never_reaches_a_real_listener() {
    let real = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    real.set_nonblocking(true).unwrap();
    let addr = real.local_addr().unwrap();
    crashtest::Sim::new(1)
        .run(async move {
            // The node's own loopback, where nothing listens on that port.
            let err = tokio::net::TcpStream::connect(addr).await.unwrap_err();
            assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
            // An address outside the simulated network.
            let outside = tokio::net::TcpStream::connect("192.0.2.1:80").await;
            assert!(outside.is_err());
        })
        .unwrap();
    let accepted = real.accept().unwrap_err();
    assert_eq!(accepted.kind(), std::io::ErrorKind::WouldBlock);
}

/// Starts node `server` listening on port 80 (it accepts one connection, then idles) and
/// returns its address.
async fn accepting_server() -> std::net::SocketAddr {
    crashtest::node::create("server", || async {
        let listener = tokio::net::TcpListener::bind("0.0.0.0:80").await.unwrap();
        let _ = listener.accept().await;
        std::future::pending::<()>().await;
    });
    tokio::time::sleep(Duration::from_millis(1)).await;
    tokio::net::lookup_host("server:80")
        .await
        .unwrap()
        .next()
        .unwrap()
}

#[test]
fn a_socket_made_by_hand_is_adopted_and_keeps_its_options() {
    crashtest::Sim::new(2)
        .run(async {
            let server = accepting_server().await;
            // What hyper-util's connector does: socket2, options, then hand it to tokio.
            let made =
                socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
            made.set_tcp_nodelay(true).unwrap();
            let socket = tokio::net::TcpSocket::from_std_stream(made.into());
            assert!(socket.nodelay().unwrap());
            let stream = socket.connect(server).await.unwrap();
            assert!(stream.nodelay().unwrap());
            assert_eq!(stream.peer_addr().unwrap(), server);
        })
        .unwrap();
}

#[test]
fn a_std_listener_bound_to_port_0_serves_on_the_port_it_reports() {
    crashtest::Sim::new(3)
        .run(async {
            // axum's and tonic's tests do this: bind port 0 with std, read the port, hand
            // the listener to tokio.
            let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = std_listener.local_addr().unwrap();
            assert_ne!(addr.port(), 0, "bind took a port, as on Linux");
            std_listener.set_nonblocking(true).unwrap();
            let listener = tokio::net::TcpListener::from_std(std_listener).unwrap();
            assert_eq!(listener.local_addr().unwrap(), addr);
            tokio::spawn(async move {
                let (mut stream, _) = listener.accept().await.unwrap();
                stream.write_all(b"hi").await.unwrap();
            });
            let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
            let mut reply = [0; 2];
            client.read_exact(&mut reply).await.unwrap();
            assert_eq!(&reply, b"hi");

            let std_udp = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
            let udp_addr = std_udp.local_addr().unwrap();
            assert_ne!(udp_addr.port(), 0);
            let udp = tokio::net::UdpSocket::from_std(std_udp).unwrap();
            assert_eq!(udp.local_addr().unwrap(), udp_addr);
        })
        .unwrap();
}

#[test]
fn a_deadlock_report_names_tokio_tasks_by_where_they_were_spawned() {
    let lines = std::rc::Rc::new(std::cell::Cell::new((0, 0, 0)));
    let keep = lines.clone();
    let failure = crashtest::Sim::new(1)
        .run(async move {
            let (_keep, receiver) = tokio::sync::oneshot::channel::<()>();
            let mut set = tokio::task::JoinSet::new();
            let set_line = line!() + 1;
            set.spawn(async move {
                let _ = receiver.await;
            });
            let extend_line = line!() + 1;
            set.extend([std::future::pending::<()>()]);
            let spawn_line = line!() + 1;
            let handle = tokio::spawn(std::future::pending::<()>());
            keep.set((set_line, extend_line, spawn_line));
            let _ = handle.await;
        })
        .unwrap_err();
    let text = failure.kind.to_string();
    let (set_line, extend_line, spawn_line) = lines.get();
    let at = |line| format!("(spawned at {}:{line}:", file!());
    // The JoinSet's tasks (spawned, and added by `extend`) and the spawned one, each by the
    // line of the program that spawned it, and the body awaiting the last.
    assert!(text.contains(&at(set_line)), "{text}");
    assert!(text.contains(&at(extend_line)), "{text}");
    assert!(
        text.contains(&format!("awaiting the end of t3 {}", at(spawn_line))),
        "{text}"
    );
}

#[test]
fn a_socket_bound_by_hand_connects_from_the_port_its_bind_took() {
    crashtest::Sim::new(4)
        .run(async {
            let server = accepting_server().await;
            // hyper-util's connector with a local address set: bind, then hand it to tokio.
            let made =
                socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
            let any: std::net::SocketAddr = "0.0.0.0:0".parse().unwrap();
            made.bind(&any.into()).unwrap();
            let bound = made.local_addr().unwrap().as_socket().unwrap();
            assert_ne!(bound.port(), 0);
            let socket = tokio::net::TcpSocket::from_std_stream(made.into());
            let stream = socket.connect(server).await.unwrap();
            assert_eq!(stream.local_addr().unwrap().port(), bound.port());

            // Another node's address is not its to bind, as on Linux.
            let other = tokio::net::TcpSocket::new_v4().unwrap();
            let refused = other.bind(server).unwrap_err();
            assert_eq!(refused.kind(), std::io::ErrorKind::AddrNotAvailable);
            // Bound to loopback, it connects only to its own node, as on Linux.
            let looped = tokio::net::TcpSocket::new_v4().unwrap();
            looped.bind("127.0.0.1:0".parse().unwrap()).unwrap();
            let again = looped.bind("127.0.0.1:0".parse().unwrap()).unwrap_err();
            assert_eq!(again.kind(), std::io::ErrorKind::InvalidInput);
            let refused = looped.connect(server).await.unwrap_err();
            assert_eq!(refused.kind(), std::io::ErrorKind::InvalidInput);
        })
        .unwrap();
}

#[test]
fn a_panic_in_a_blocking_closure_names_where_it_was_spawned() {
    let line = std::rc::Rc::new(std::cell::Cell::new(0));
    let keep = line.clone();
    let failure = crashtest::Sim::new(1)
        .run(async move {
            keep.set(line!() + 1);
            let handle = tokio::task::spawn_blocking(|| panic!("the closure broke"));
            let _ = handle.await;
        })
        .unwrap_err();
    let task = failure.task.expect("a panic names its task");
    let place = format!("(spawn_blocking, spawned at {}:{}:", file!(), line.get());
    assert!(task.contains(&place), "{task}");
}

#[test]
fn a_socket_connected_for_real_is_refused() {
    let real = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let connected = std::net::TcpStream::connect(real.local_addr().unwrap()).unwrap();
    let failure = crashtest::Sim::new(1)
        .run(async move {
            let _ = tokio::net::TcpSocket::from_std_stream(connected);
        })
        .unwrap_err();
    let text = failure.to_string();
    assert!(text.contains("tokio::net::TcpSocket::from_std_stream cannot run inside"));
    assert!(text.contains("connected to a real peer"));
}

#[test]
fn files_written_through_tokio_live_on_the_nodes_disk_and_survive_a_synced_crash() {
    crashtest::Sim::new(3)
        .run(async {
            let db = crashtest::node::create("db", || async {
                if tokio::fs::try_exists("/state").await.unwrap() {
                    assert_eq!(tokio::fs::read("/state").await.unwrap(), b"v1");
                    return;
                }
                let mut file = tokio::fs::File::create("/state").await.unwrap();
                file.write_all(b"v1").await.unwrap();
                file.sync_all().await.unwrap();
                crashtest::fs::sync_dir("/").await.unwrap();
                std::future::pending::<()>().await;
            });
            tokio::time::sleep(Duration::from_secs(1)).await;
            db.restart();
            tokio::time::sleep(Duration::from_secs(1)).await;
            // The supervisor has a disk of its own: the node's file is not on it.
            assert!(!tokio::fs::try_exists("/state").await.unwrap());
        })
        .unwrap();
}

/// A write-ahead log's recovery as tokio code writes it: the log's length from `metadata`,
/// after a crash that may have kept any part of what was not synced. Returns the lengths
/// that metadata, the open file's metadata, the directory listing and a read gave.
async fn wal_length_after_a_crash() -> Vec<u64> {
    let lengths = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = lengths.clone();
    let db = crashtest::node::create("db", move || {
        let seen = seen.clone();
        async move {
            if tokio::fs::try_exists("/wal").await.unwrap() {
                let by_path = tokio::fs::metadata("/wal").await.unwrap();
                assert!(by_path.is_file() && !by_path.is_dir());
                let file = tokio::fs::File::open("/wal").await.unwrap();
                let by_handle = file.metadata().await.unwrap();
                let mut listing = tokio::fs::read_dir("/").await.unwrap();
                let entry = listing.next_entry().await.unwrap().unwrap();
                let by_entry = entry.metadata().await.unwrap();
                let read = tokio::fs::read("/wal").await.unwrap();
                let root = tokio::fs::symlink_metadata("/").await.unwrap();
                assert!(root.is_dir());
                seen.lock().unwrap().extend([
                    by_path.len(),
                    by_handle.len(),
                    by_entry.len(),
                    read.len() as u64,
                ]);
                return;
            }
            let mut wal = tokio::fs::File::create("/wal").await.unwrap();
            wal.write_all(b"sync").await.unwrap();
            wal.sync_all().await.unwrap();
            crashtest::fs::sync_dir("/").await.unwrap();
            wal.write_all(b"d-tail").await.unwrap();
            std::future::pending::<()>().await;
        }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    db.restart();
    tokio::time::sleep(Duration::from_secs(1)).await;
    lengths.lock().unwrap().clone()
}

#[test]
fn std_metadata_tells_the_simulated_length_the_crash_left() {
    let mut kept = std::collections::BTreeSet::new();
    for seed in 0..16 {
        let lengths = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let out = lengths.clone();
        crashtest::Sim::new(seed)
            .run(async move { *out.borrow_mut() = wal_length_after_a_crash().await })
            .unwrap();
        let lengths = lengths.take();
        assert_eq!(lengths.len(), 4, "seed {seed}: the node recovered once");
        assert!(
            lengths.iter().all(|&len| len == lengths[0]),
            "seed {seed}: metadata and the read disagree: {lengths:?}"
        );
        assert!((4..=10).contains(&lengths[0]), "seed {seed}: {lengths:?}");
        kept.insert(lengths[0]);
    }
    assert!(kept.len() > 1, "every seed kept the same length: {kept:?}");
}

#[test]
fn a_seed_replays_the_same_run_through_std_metadata() {
    let run = crashtest::check_determinism(5, crashtest::Config::default(), || async {
        wal_length_after_a_crash().await;
    });
    assert!(run.expect("no divergence").is_ok());
}

#[test]
fn file_times_are_refused_naming_the_call() {
    let failure = crashtest::Sim::new(1)
        .run(async {
            let file = tokio::fs::File::create("/f").await.unwrap();
            let times = tokio::fs::FileTimes::new().set_modified(std::time::SystemTime::UNIX_EPOCH);
            let _ = file.set_times(times).await;
        })
        .unwrap_err();
    assert!(
        failure
            .to_string()
            .contains("tokio::fs::File::set_times cannot run inside")
    );
}

#[cfg(target_os = "linux")]
#[test]
fn a_simulated_stream_remembers_its_quick_acknowledgement_setting() {
    crashtest::Sim::new(1)
        .run(async {
            let listener = tokio::net::TcpListener::bind("0.0.0.0:80").await.unwrap();
            let stream = tokio::net::TcpStream::connect("127.0.0.1:80")
                .await
                .unwrap();
            assert!(stream.quickack().unwrap(), "on for a new connection");
            stream.set_quickack(false).unwrap();
            assert!(!stream.quickack().unwrap());
            drop(listener);
        })
        .unwrap();
}

#[test]
fn stdin_is_refused_inside_a_simulation() {
    let failure = crashtest::Sim::new(1)
        .run(async {
            let _ = tokio::io::stdin();
        })
        .unwrap_err();
    assert!(
        failure
            .to_string()
            .contains("tokio::io::stdin cannot run inside")
    );
}

#[test]
fn vectored_try_reads_and_writes_work_on_a_simulated_stream() {
    crashtest::Sim::new(1)
        .run(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let client = tokio::spawn(tokio::net::TcpStream::connect(addr));
            let (server, _) = listener.accept().await.unwrap();
            let client = client.await.unwrap().unwrap();
            let sent = client
                .try_write_vectored(&[std::io::IoSlice::new(&[]), std::io::IoSlice::new(b"hi")])
                .unwrap();
            assert_eq!(sent, 2);
            // The bytes cross the simulated network (readiness calls are refused).
            tokio::time::sleep(Duration::from_secs(1)).await;
            let mut buf = [0; 8];
            let read = server
                .try_read_vectored(&mut [std::io::IoSliceMut::new(&mut buf)])
                .unwrap();
            assert_eq!(&buf[..read], b"hi");
        })
        .unwrap();
}

#[test]
fn the_halves_of_a_simulated_stream_try_reads_and_writes_as_the_stream_does() {
    crashtest::Sim::new(1)
        .run(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let client = tokio::spawn(tokio::net::TcpStream::connect(addr));
            let (mut server, _) = listener.accept().await.unwrap();
            let (_client_read, client_write) = client.await.unwrap().unwrap().into_split();
            assert_eq!(client_write.try_write(b"owned").unwrap(), 5);
            let sent = client_write
                .try_write_vectored(&[std::io::IoSlice::new(b" half")])
                .unwrap();
            assert_eq!(sent, 5);
            tokio::time::sleep(Duration::from_secs(1)).await;
            let (read, _write) = server.split();
            let mut got = bytes::BytesMut::with_capacity(64);
            let n = read.try_read_buf(&mut got).unwrap();
            assert_eq!(&got[..n], b"owned half");
            assert_eq!(
                read.try_read(&mut [0; 4]).unwrap_err().kind(),
                std::io::ErrorKind::WouldBlock,
                "nothing more has come"
            );
        })
        .unwrap();
}

#[cfg(target_os = "linux")]
#[test]
fn a_simulated_socket_remembers_its_type_of_service_and_lingers_zero_when_asked() {
    crashtest::Sim::new(1)
        .run(async {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.set_tos_v4(0x10).unwrap();
            assert_eq!(socket.tos_v4().unwrap(), 0x10);
            socket.set_zero_linger().unwrap();
            assert_eq!(socket.linger().unwrap(), Some(Duration::ZERO));
            let udp = tokio::net::UdpSocket::bind("0.0.0.0:9").await.unwrap();
            udp.set_tclass_v6(0x20).unwrap();
            assert_eq!(udp.tclass_v6().unwrap(), 0x20);
        })
        .unwrap();
}

/// Starts cleanup work when dropped, as tokio programs' guards and connection pools do: a
/// task that marks `ran` and writes a file.
struct CleanupOnDrop {
    ran: &'static AtomicBool,
}

impl Drop for CleanupOnDrop {
    fn drop(&mut self) {
        let ran = self.ran;
        tokio::spawn(async move {
            ran.store(true, Ordering::SeqCst);
            tokio::fs::write("cleanup.done", b"after death")
                .await
                .unwrap();
        });
    }
}

/// A node whose main task holds a [`CleanupOnDrop`] and waits forever.
fn holding_cleanup(name: &str, ran: &'static AtomicBool) -> crashtest::node::Node {
    crashtest::node::create(name, move || async move {
        let _guard = CleanupOnDrop { ran };
        std::future::pending::<()>().await;
    })
}

#[test]
fn a_killed_nodes_destructor_cannot_start_tokio_work_on_the_killers_node() {
    static RAN: AtomicBool = AtomicBool::new(false);
    crashtest::Sim::new(3)
        .run(async {
            let victim = holding_cleanup("victim", &RAN);
            tokio::time::sleep(Duration::from_millis(1)).await;
            victim.kill();
            tokio::time::sleep(Duration::from_secs(1)).await;
            // Nothing ran after the kill: not on the victim, and not on the killer's disk.
            let killers = tokio::fs::read("cleanup.done").await.unwrap_err();
            assert_eq!(killers.kind(), std::io::ErrorKind::NotFound);
        })
        .unwrap();
    assert!(!RAN.load(Ordering::SeqCst));
}

#[test]
fn a_server_left_running_at_the_end_may_spawn_from_its_destructors() {
    static RAN: AtomicBool = AtomicBool::new(false);
    // The server's destructors run inside the run, once it is over: the spawn is refused
    // quietly, where a tokio runtime outside the simulation would be missing.
    crashtest::Sim::new(4)
        .run(async {
            holding_cleanup("server", &RAN);
            tokio::time::sleep(Duration::from_millis(1)).await;
        })
        .unwrap();
    assert!(!RAN.load(Ordering::SeqCst));
}

#[test]
fn readiness_of_a_simulated_stream_follows_its_peer_and_a_reset() {
    crashtest::Sim::new(5)
        .run(async {
            let server = crashtest::node::create("server", || async {
                let listener = tokio::net::TcpListener::bind("0.0.0.0:9000").await.unwrap();
                let (mut stream, _) = listener.accept().await.unwrap();
                // Reads nothing: the client's send buffer fills up.
                stream.write_all(b"ready").await.unwrap();
                std::future::pending::<()>().await
            });
            tokio::time::sleep(Duration::from_millis(1)).await;
            let stream = tokio::net::TcpStream::connect("server:9000").await.unwrap();
            let ready = stream.ready(tokio::io::Interest::READABLE).await.unwrap();
            assert!(ready.is_readable() && !ready.is_read_closed(), "{ready:?}");
            let mut head = [0; 5];
            assert_eq!(stream.peek(&mut head).await.unwrap(), 5);
            assert_eq!(&head, b"ready", "a peek copies what arrived");
            assert_eq!(stream.try_read(&mut [0; 16]).unwrap(), 5, "and leaves it");
            // Writing until the buffer is full: then `writable` waits, and the write it
            // guarded reports `WouldBlock` no more once it returns.
            let chunk = [7u8; 4096];
            let mut sent = 0usize;
            loop {
                match stream.try_write(&chunk) {
                    Ok(n) => sent += n,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => panic!("{e}"),
                }
            }
            assert!(sent > 0, "the send buffer took some bytes first");
            let full = tokio::time::timeout(Duration::from_secs(1), stream.writable()).await;
            assert!(full.is_err(), "a full send buffer is not writable");
            // A reset wakes a reader waiting on readiness, and says the stream is closed.
            let waiting = tokio::spawn(async move {
                let error = stream.ready(tokio::io::Interest::ERROR).await.unwrap();
                let ready = stream.ready(tokio::io::Interest::READABLE).await.unwrap();
                let read = stream.try_read(&mut [0; 16]).map_err(|e| e.kind());
                let writable = stream.ready(tokio::io::Interest::WRITABLE).await.unwrap();
                (error, ready, read, writable)
            });
            tokio::time::sleep(Duration::from_millis(10)).await;
            server.kill();
            let (error, ready, read, writable) = waiting.await.unwrap();
            assert!(error.is_error() && !error.is_readable(), "{error:?}");
            assert!(ready.is_readable() && ready.is_read_closed(), "{ready:?}");
            assert_eq!(read, Err(std::io::ErrorKind::ConnectionReset));
            assert!(writable.is_write_closed(), "{writable:?}");
        })
        .unwrap();
}

#[test]
fn standard_output_and_error_are_written_inside_a_simulation_and_replay() {
    let run = crashtest::check_determinism(2, crashtest::Config::default(), || async {
        for node in 0..2 {
            crashtest::node::create(format!("printer{node}"), move || async move {
                let mut out = tokio::io::stdout();
                out.write_all(format!("node {node} says hello\n").as_bytes())
                    .await
                    .unwrap();
                out.flush().await.unwrap();
                let mut err = tokio::io::stderr();
                err.write_all(b"and a warning\n").await.unwrap();
            });
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    });
    assert!(run.expect("no divergence").is_ok());
}

#[test]
fn a_try_read_of_one_task_leaves_another_waiting_on_readiness_to_be_woken() {
    crashtest::Sim::new(9)
        .run(async {
            crashtest::node::create("server", || async {
                let listener = tokio::net::TcpListener::bind("0.0.0.0:9000").await.unwrap();
                let (mut stream, _) = listener.accept().await.unwrap();
                tokio::time::sleep(Duration::from_millis(50)).await;
                stream.write_all(b"late").await.unwrap();
                std::future::pending::<()>().await
            });
            tokio::time::sleep(Duration::from_millis(1)).await;
            let stream =
                std::sync::Arc::new(tokio::net::TcpStream::connect("server:9000").await.unwrap());
            let waiter = {
                let stream = stream.clone();
                tokio::spawn(async move {
                    stream.readable().await.unwrap();
                    let mut buf = [0; 8];
                    let n = stream.try_read(&mut buf).unwrap();
                    buf[..n].to_vec()
                })
            };
            // The waiter registers first; then this task's `try_read` finds nothing.
            tokio::task::yield_now().await;
            let empty = stream.try_read(&mut [0; 8]).unwrap_err();
            assert_eq!(empty.kind(), std::io::ErrorKind::WouldBlock);
            let got = tokio::time::timeout(Duration::from_secs(1), waiter)
                .await
                .expect("the waiting task was woken by the bytes")
                .unwrap();
            assert_eq!(got, b"late");
        })
        .unwrap();
}

#[test]
fn every_task_waiting_on_a_stream_is_woken_and_a_shut_write_side_closes_with_the_peers() {
    crashtest::Sim::new(4)
        .run(async {
            crashtest::node::create("server", || async {
                let listener = tokio::net::TcpListener::bind("0.0.0.0:9000").await.unwrap();
                let (mut stream, _) = listener.accept().await.unwrap();
                tokio::time::sleep(Duration::from_millis(50)).await;
                stream.write_all(b"news").await.unwrap();
                // Reads to the client's FIN, then ends its own side too.
                let mut rest = Vec::new();
                stream.read_to_end(&mut rest).await.unwrap();
                stream.shutdown().await.unwrap();
                std::future::pending::<()>().await
            });
            tokio::time::sleep(Duration::from_millis(1)).await;
            let stream =
                std::sync::Arc::new(tokio::net::TcpStream::connect("server:9000").await.unwrap());
            // A peek into no room waits for something to read, as a socket's does.
            let empty_peek =
                tokio::time::timeout(Duration::from_millis(10), stream.peek(&mut [])).await;
            assert!(
                empty_peek.is_err(),
                "an empty peek returned before any byte arrived"
            );
            let waiters: Vec<_> = (0..3)
                .map(|_| {
                    let stream = stream.clone();
                    tokio::spawn(async move { stream.readable().await.is_ok() })
                })
                .collect();
            for waiter in waiters {
                let woken = tokio::time::timeout(Duration::from_secs(1), waiter).await;
                assert!(woken.expect("every waiter was woken").unwrap());
            }
            let mut stream = std::sync::Arc::into_inner(stream).expect("the waiters are done");
            let mut news = [0; 4];
            stream.read_exact(&mut news).await.unwrap();
            stream.shutdown().await.unwrap();
            // Shut by this end alone, the write side is still writable (a write then fails),
            // not closed; once the peer's FIN came too, it is closed.
            let alone = stream.ready(tokio::io::Interest::WRITABLE).await.unwrap();
            assert!(alone.is_writable() && !alone.is_write_closed(), "{alone:?}");
            assert_eq!(stream.read(&mut [0; 4]).await.unwrap(), 0, "the peer's FIN");
            let both = stream.ready(tokio::io::Interest::WRITABLE).await.unwrap();
            assert!(both.is_write_closed(), "{both:?}");
            let write = stream.try_write(b"late").unwrap_err();
            assert_eq!(write.kind(), std::io::ErrorKind::BrokenPipe);
        })
        .unwrap();
}

#[test]
fn std_metadata_of_a_simulated_entry_is_the_disks_and_the_same_on_every_host() {
    use std::os::unix::fs::MetadataExt;
    // The process's own user and group, as the OS gives them its /proc entry.
    let me = std::fs::metadata("/proc/self").unwrap();
    let (uid, gid) = (me.uid(), me.gid());
    crashtest::Sim::new(1)
        .run(async move {
            let before = crashtest::time::system_time();
            tokio::fs::write("/wal", b"entries").await.unwrap();
            tokio::fs::hard_link("/wal", "/wal.bak").await.unwrap();
            tokio::fs::create_dir_all("/data/segments").await.unwrap();
            let wal = tokio::fs::metadata("/wal").await.unwrap();
            let listed = tokio::fs::read_dir("/").await.unwrap();
            let mut listed = listed;
            let mut inodes = std::collections::BTreeMap::new();
            while let Some(entry) = listed.next_entry().await.unwrap() {
                inodes.insert(entry.file_name().into_string().unwrap(), entry.ino());
            }
            assert_eq!(
                inodes["wal"],
                wal.ino(),
                "a listing gives the entry's inode"
            );
            assert_eq!(inodes["wal.bak"], wal.ino(), "both names are one inode");
            assert_ne!(inodes["data"], wal.ino());
            assert_eq!(wal.nlink(), 2);
            assert_eq!((wal.len(), wal.blocks()), (7, 1));
            assert_eq!(
                (wal.uid(), wal.gid()),
                (uid, gid),
                "owned by the calling user"
            );
            // Times are the node's wall clock when the file was made and changed.
            let created = wal.created().unwrap();
            assert!(created >= before, "made during the run");
            assert!(wal.modified().unwrap() >= created);
            assert_eq!(wal.accessed().unwrap(), created, "no access times are kept");
            assert!(
                wal.ctime() >= wal.mtime(),
                "the link changed the inode after the data"
            );
            let file = tokio::fs::File::open("/wal").await.unwrap();
            let then = std::time::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
            file.set_modified(then).await.unwrap();
            assert_eq!(
                tokio::fs::metadata("/wal.bak")
                    .await
                    .unwrap()
                    .modified()
                    .unwrap(),
                then
            );
            let data = tokio::fs::metadata("/data").await.unwrap();
            assert_eq!(
                data.nlink(),
                3,
                "its name, its `.`, and the subdirectory's `..`"
            );
            assert_eq!(data.dev(), wal.dev(), "one disk");
            let root = tokio::fs::metadata("/").await.unwrap();
            assert_eq!(root.ino(), 1);
        })
        .unwrap();
}

#[test]
fn a_refused_datagram_makes_the_socket_ready_for_the_raw_call_that_reports_it() {
    crashtest::Sim::new(5)
        .run(async {
            let closed = {
                let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
                socket.local_addr().unwrap()
            };
            let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
            socket.connect(closed).await.unwrap();
            socket.send(b"ping").await.unwrap();
            tokio::time::sleep(Duration::from_millis(1)).await;
            // quinn's loop: wait for readiness, then the raw call; an erring socket is ready.
            std::future::poll_fn(|cx| socket.poll_recv_ready(cx))
                .await
                .unwrap();
            let raw = socket.try_io(tokio::io::Interest::READABLE, || Ok("called"));
            assert_eq!(raw.unwrap(), "called");
            let refused = socket.try_recv(&mut [0; 8]).unwrap_err();
            assert_eq!(refused.raw_os_error(), Some(111));
        })
        .unwrap();
}
