//! What a simulation cannot own fails the run with a message that names the call and what to
//! do instead.

use crashtest_tokio as tokio;

/// Runs `body` in a simulation and returns the failure's text.
fn failure_of(body: impl std::future::Future<Output = ()> + 'static) -> String {
    crashtest::Sim::new(1)
        .run(body)
        .expect_err("the run must fail")
        .to_string()
}

#[test]
fn building_a_runtime_inside_a_simulation_fails_the_run() {
    let text = failure_of(async {
        let _ = tokio::runtime::Builder::new_current_thread().build();
    });
    assert!(
        text.contains("tokio::runtime::Builder::build cannot run inside a crashtest simulation")
    );
    assert!(text.contains("spawn tasks with tokio::spawn"));
}

#[test]
fn building_a_local_runtime_inside_a_simulation_fails_the_run() {
    let text = failure_of(async {
        let _ = tokio::runtime::LocalRuntime::new();
    });
    assert!(text.contains("tokio::runtime::LocalRuntime::new cannot run inside"));
    let text = failure_of(async {
        let _ = tokio::runtime::Builder::new_current_thread()
            .build_local(tokio::runtime::LocalOptions::default());
    });
    assert!(text.contains("tokio::runtime::Builder::build_local cannot run inside"));
}

#[test]
fn blocking_on_a_handle_inside_a_simulation_fails_the_run() {
    let text = failure_of(async {
        tokio::runtime::Handle::current().block_on(async {});
    });
    assert!(text.contains("tokio::runtime::Handle::block_on cannot run inside"));
    assert!(text.contains("await the future instead"));
}

#[test]
fn a_refusal_in_a_spawned_task_fails_the_run_too() {
    let text = failure_of(async {
        let task = tokio::spawn(async {
            let _ = tokio::runtime::Handle::current().metrics();
        });
        let _ = task.await;
    });
    assert!(text.contains("tokio::runtime::Handle::metrics cannot run inside"));
}

#[test]
fn raw_io_on_a_simulated_stream_fails_the_run_naming_the_call() {
    let text = failure_of(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let stream = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let _ = stream.try_io(tokio::io::Interest::READABLE, || Ok(()));
    });
    assert!(text.contains("tokio::net::TcpStream::try_io cannot run inside"));
    assert!(text.contains("AsyncRead/AsyncWrite"));
}

/// Runs `body` in a simulation and checks that it failed naming `call` and pointing to the
/// simulated sockets.
#[cfg(unix)]
fn assert_unix_refused(call: &str, body: impl std::future::Future<Output = ()> + 'static) {
    let text = failure_of(body);
    assert!(
        text.contains(&format!("{call} cannot run inside a crashtest simulation")),
        "{text}"
    );
    assert!(text.contains("tokio::net::TcpStream"), "{text}");
}

#[cfg(unix)]
#[test]
fn unix_domain_sockets_fail_the_run_naming_the_call() {
    let listening = std::env::temp_dir().join(format!("crashtest-refusal-{}", std::process::id()));
    let real = std::os::unix::net::UnixListener::bind(&listening).unwrap();
    let path = listening.clone();
    assert_unix_refused("tokio::net::UnixStream::connect", async move {
        let _ = tokio::net::UnixStream::connect(&path).await;
    });
    real.set_nonblocking(true).unwrap();
    assert_eq!(
        real.accept().unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock,
        "the refused connect never reached the host's socket"
    );
    std::fs::remove_file(&listening).unwrap();
    assert_unix_refused("tokio::net::UnixStream::pair", async {
        let _ = tokio::net::UnixStream::pair();
    });
    let path = listening.clone();
    assert_unix_refused("tokio::net::UnixListener::bind", async move {
        let _ = tokio::net::UnixListener::bind(&path);
    });
    let address = tokio::net::unix::SocketAddr::from(
        std::os::unix::net::SocketAddr::from_pathname(&listening).unwrap(),
    );
    assert_unix_refused("tokio::net::UnixListener::bind_addr", async move {
        let _ = tokio::net::UnixListener::bind_addr(&address);
    });
    let address = tokio::net::unix::SocketAddr::from(
        std::os::unix::net::SocketAddr::from_pathname(&listening).unwrap(),
    );
    assert_unix_refused("tokio::net::UnixStream::connect_addr", async move {
        let _ = tokio::net::UnixStream::connect_addr(&address).await;
    });
    assert!(!listening.exists(), "the refused bind made no socket file");
    let std_listener = std::os::unix::net::UnixListener::bind(&listening).unwrap();
    std::fs::remove_file(&listening).unwrap();
    assert_unix_refused("tokio::net::UnixListener::from_std", async move {
        let _ = tokio::net::UnixListener::from_std(std_listener);
    });
    assert_unix_refused("tokio::net::UnixDatagram::unbound", async {
        let _ = tokio::net::UnixDatagram::unbound();
    });
    assert_unix_refused("tokio::net::UnixDatagram::pair", async {
        let _ = tokio::net::UnixDatagram::pair();
    });
}

#[cfg(unix)]
#[test]
fn watching_a_host_descriptor_fails_the_run_naming_the_call() {
    let text = failure_of(async {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let _ = tokio::io::unix::AsyncFd::new(a);
    });
    assert!(text.contains("tokio::io::unix::AsyncFd::new cannot run inside"));
    assert!(text.contains("tokio::net sockets"));
    let text = failure_of(async {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        // SAFETY: `a` owns its descriptor for as long as the `AsyncFd` would live.
        let _ = unsafe { tokio::io::unix::AsyncFd::register(a) };
    });
    assert!(text.contains("tokio::io::unix::AsyncFd::register cannot run inside"));
}

#[cfg(unix)]
#[test]
fn unix_domain_sockets_and_async_fd_are_tokios_outside_a_simulation() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (mut a, mut b) = tokio::net::UnixStream::pair().unwrap();
        a.write_all(b"ping").await.unwrap();
        let mut got = [0; 4];
        b.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"ping");
        // A method tokio's stream has and the wrapper does not write out: reached through it.
        assert!(a.peer_addr().unwrap().is_unnamed());
        let (std_a, std_b) = std::os::unix::net::UnixStream::pair().unwrap();
        std_a.set_nonblocking(true).unwrap();
        let watched = tokio::io::unix::AsyncFd::new(std_a).unwrap();
        std::io::Write::write_all(&mut &std_b, b"x").unwrap();
        let mut ready = watched.readable().await.unwrap();
        let mut byte = [0; 1];
        let read = ready.try_io(|fd| std::io::Read::read(&mut fd.get_ref(), &mut byte));
        assert_eq!(read.unwrap().unwrap(), 1);
        let (dgram_a, dgram_b) = tokio::net::UnixDatagram::pair().unwrap();
        dgram_a.send(b"d").await.unwrap();
        assert_eq!(dgram_b.recv(&mut byte).await.unwrap(), 1);
    });
}

#[test]
fn raw_io_refused_under_a_lock_returns_an_error_and_the_run_fails_with_the_refusal() {
    // A library may call try_io with a mutex held and unwrap that mutex when a handle drops
    // (quinn did, before a datagram socket's raw I/O was simulated): a refusal that panicked
    // there poisoned the lock, the handle's destructor panicked during the unwind, and the
    // process aborted.
    struct LocksOnDrop(std::sync::Arc<std::sync::Mutex<u32>>);
    impl Drop for LocksOnDrop {
        fn drop(&mut self) {
            *self.0.lock().unwrap() += 1;
        }
    }
    let text = failure_of(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let stream = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let state = std::sync::Arc::new(std::sync::Mutex::new(0));
        let _owner = LocksOnDrop(state.clone());
        let _held = state.lock().unwrap();
        let sent = stream.try_io(tokio::io::Interest::WRITABLE, || Ok(()));
        assert_eq!(sent.unwrap_err().kind(), std::io::ErrorKind::Unsupported);
    });
    assert!(
        text.contains("refused: tokio::net::TcpStream::try_io cannot run inside"),
        "{text}"
    );
}

#[test]
fn blocking_send_on_a_full_channel_fails_the_run_instead_of_hanging() {
    let text = failure_of(async {
        let (tx, mut rx) = tokio::sync::mpsc::channel(1);
        tokio::task::spawn_blocking(move || {
            tx.blocking_send(1).expect("a free slot takes the value");
            let _ = tx.blocking_send(2);
        })
        .await
        .expect_err("the task ends at the refusal");
        assert_eq!(rx.recv().await, Some(1));
    });
    assert!(text.contains(
        "tokio::sync::mpsc::Sender::blocking_send on a full channel cannot run inside a \
         crashtest simulation"
    ));
    assert!(text.contains("send(..).await"));
    assert!(
        text.contains(&format!("(called at {}:", file!())),
        "the refusal names the line that made the call: {text}"
    );
}

#[test]
fn blocking_send_with_a_free_slot_or_no_receiver_behaves_as_tokios() {
    crashtest::Sim::new(1)
        .run(async {
            let (tx, mut rx) = tokio::sync::mpsc::channel(1);
            let tx = tokio::task::spawn_blocking(move || {
                tx.blocking_send(7).expect("a free slot takes the value");
                tx
            })
            .await
            .unwrap();
            assert_eq!(rx.recv().await, Some(7));
            drop(rx);
            let refused = tokio::task::spawn_blocking(move || tx.blocking_send(8))
                .await
                .unwrap();
            assert_eq!(refused.unwrap_err().0, 8);
        })
        .unwrap();
}

#[test]
fn blocking_send_from_async_code_fails_the_run_where_tokio_panics() {
    let text = failure_of(async {
        let (tx, _rx) = tokio::sync::mpsc::channel(1);
        let _ = tx.blocking_send(1);
    });
    assert!(text.contains(
        "tokio::sync::mpsc::Sender::blocking_send in async code cannot run inside a crashtest \
         simulation"
    ));
    assert!(text.contains("spawn_blocking closure"));
}

#[test]
fn blocking_recv_takes_what_waits_and_is_refused_where_it_would_wait() {
    crashtest::Sim::new(1)
        .run(async {
            let (tx, mut rx) = tokio::sync::mpsc::channel(4);
            tx.send(1).await.unwrap();
            tx.send(2).await.unwrap();
            tx.send(3).await.unwrap();
            let (rx, got) = tokio::task::spawn_blocking(move || {
                let first = rx.blocking_recv();
                let mut rest = Vec::new();
                let moved = rx.blocking_recv_many(&mut rest, 8);
                (rx, (first, moved, rest))
            })
            .await
            .unwrap();
            assert_eq!(got, (Some(1), 2, vec![2, 3]));
            drop(tx);
            let mut rx = rx;
            let closed = tokio::task::spawn_blocking(move || rx.blocking_recv())
                .await
                .unwrap();
            assert_eq!(closed, None, "a closed, empty channel gives None");
        })
        .unwrap();

    let text = failure_of(async {
        let (_tx, mut rx) = tokio::sync::mpsc::channel::<u32>(1);
        let _ = tokio::task::spawn_blocking(move || rx.blocking_recv()).await;
    });
    assert!(text.contains(
        "tokio::sync::mpsc::Receiver::blocking_recv on an empty channel cannot run inside a \
         crashtest simulation"
    ));
    assert!(text.contains("recv().await"));

    let text = failure_of(async {
        let (_tx, mut rx) = tokio::sync::mpsc::channel::<u32>(1);
        let _ = rx.blocking_recv();
    });
    assert!(text.contains("tokio::sync::mpsc::Receiver::blocking_recv in async code"));
}

#[test]
fn an_unbounded_blocking_recv_is_refused_where_it_would_wait() {
    crashtest::Sim::new(1)
        .run(async {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            tx.send(5).unwrap();
            let got = tokio::task::spawn_blocking(move || rx.blocking_recv())
                .await
                .unwrap();
            assert_eq!(got, Some(5));
        })
        .unwrap();
    let text = failure_of(async {
        let (_tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<u32>();
        let _ = tokio::task::spawn_blocking(move || rx.blocking_recv()).await;
    });
    assert!(text.contains(
        "tokio::sync::mpsc::UnboundedReceiver::blocking_recv on an empty channel cannot run \
         inside a crashtest simulation"
    ));
}

#[test]
fn blocking_locks_take_a_free_lock_and_are_refused_where_they_would_wait() {
    use std::sync::Arc;
    crashtest::Sim::new(1)
        .run(async {
            let mutex = Arc::new(tokio::sync::Mutex::new(1));
            let lock = Arc::new(tokio::sync::RwLock::new(2));
            let (m, l) = (mutex.clone(), lock.clone());
            let sum = tokio::task::spawn_blocking(move || {
                *m.blocking_lock() += 10;
                let owned = m.clone().blocking_lock_owned();
                let read = *l.blocking_read();
                *l.blocking_write() += 20;
                *owned + read
            })
            .await
            .unwrap();
            assert_eq!(sum, 13);
            assert_eq!((*mutex.lock().await, *lock.read().await), (11, 22));
        })
        .unwrap();

    let text = failure_of(async {
        let mutex = Arc::new(tokio::sync::Mutex::new(()));
        let _held = mutex.clone().lock_owned().await;
        let _ = tokio::task::spawn_blocking(move || drop(mutex.blocking_lock())).await;
    });
    assert!(text.contains(
        "tokio::sync::Mutex::blocking_lock on a held lock cannot run inside a crashtest \
         simulation"
    ));
    assert!(text.contains("the holder could never release it"));
    assert!(text.contains("lock().await"));
    assert!(
        text.contains("(called at crates/crashtest-tokio/tests/refusals.rs:"),
        "the refusal names the program's line, not the stand-in's: {text}"
    );

    let text = failure_of(async {
        let lock = Arc::new(tokio::sync::RwLock::new(()));
        let _reading = lock.clone().read_owned().await;
        let _ = tokio::task::spawn_blocking(move || drop(lock.blocking_write())).await;
    });
    assert!(text.contains("tokio::sync::RwLock::blocking_write on a held lock"));
    assert!(text.contains("write().await"));
    assert!(
        text.contains("(called at crates/crashtest-tokio/tests/refusals.rs:"),
        "{text}"
    );
}

#[test]
fn blocking_locks_from_async_code_fail_the_run_where_tokio_panics() {
    let text = failure_of(async {
        let mutex = tokio::sync::Mutex::new(());
        drop(mutex.blocking_lock());
    });
    assert!(text.contains("tokio::sync::Mutex::blocking_lock in async code cannot run inside"));
    let text = failure_of(async {
        let lock = tokio::sync::RwLock::new(());
        drop(lock.blocking_read());
    });
    assert!(text.contains("tokio::sync::RwLock::blocking_read in async code cannot run inside"));
}

#[test]
fn a_oneshot_blocking_recv_takes_a_sent_value_and_is_refused_where_it_would_wait() {
    crashtest::Sim::new(1)
        .run(async {
            let (tx, rx) = tokio::sync::oneshot::channel();
            tx.send(4).unwrap();
            let got = tokio::task::spawn_blocking(move || rx.blocking_recv());
            assert_eq!(got.await.unwrap(), Ok(4));
            let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
            drop(tx);
            let gone = tokio::task::spawn_blocking(move || rx.blocking_recv());
            assert!(gone.await.unwrap().is_err(), "a dropped sender is reported");
        })
        .unwrap();
    let text = failure_of(async {
        let (_tx, rx) = tokio::sync::oneshot::channel::<u32>();
        let _ = tokio::task::spawn_blocking(move || rx.blocking_recv()).await;
    });
    assert!(text.contains(
        "tokio::sync::oneshot::Receiver::blocking_recv before the value is sent cannot run \
         inside a crashtest simulation"
    ));
    let text = failure_of(async {
        let (_tx, rx) = tokio::sync::oneshot::channel::<u32>();
        let _ = rx.blocking_recv();
    });
    assert!(text.contains("tokio::sync::oneshot::Receiver::blocking_recv in async code"));
}

#[test]
fn a_broadcast_blocking_recv_takes_what_waits_and_is_refused_where_it_would_wait() {
    crashtest::Sim::new(1)
        .run(async {
            let (tx, mut rx) = tokio::sync::broadcast::channel(1);
            tx.send(1).unwrap();
            tx.send(2).unwrap();
            let (rx, lagged, got) = tokio::task::spawn_blocking(move || {
                let lagged = rx.blocking_recv();
                let got = rx.blocking_recv();
                (rx, lagged, got)
            })
            .await
            .unwrap();
            assert_eq!(
                lagged,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(1))
            );
            assert_eq!(got, Ok(2));
            drop(tx);
            let mut rx = rx;
            let closed = tokio::task::spawn_blocking(move || rx.blocking_recv());
            assert_eq!(
                closed.await.unwrap(),
                Err(tokio::sync::broadcast::error::RecvError::Closed)
            );
        })
        .unwrap();
    let text = failure_of(async {
        let (_tx, mut rx) = tokio::sync::broadcast::channel::<u32>(1);
        let _ = tokio::task::spawn_blocking(move || rx.blocking_recv()).await;
    });
    assert!(text.contains(
        "tokio::sync::broadcast::Receiver::blocking_recv on an empty channel cannot run inside \
         a crashtest simulation"
    ));
    let text = failure_of(async {
        let (_tx, mut rx) = tokio::sync::broadcast::channel::<u32>(1);
        let _ = rx.blocking_recv();
    });
    assert!(text.contains("tokio::sync::broadcast::Receiver::blocking_recv in async code"));
}

#[test]
fn a_refused_file_call_names_the_callers_line() {
    let text = failure_of(async {
        let _ = tokio::fs::symlink("/a", "/b").await;
    });
    assert!(
        text.contains("tokio::fs::symlink cannot run inside"),
        "{text}"
    );
    assert!(text.contains(&format!("called at {}:", file!())), "{text}");
    let text = failure_of(async {
        let file = tokio::fs::File::create("/data").await.unwrap();
        let _ = file.into_std().await;
    });
    assert!(
        text.contains("tokio::fs::File::into_std cannot run inside"),
        "{text}"
    );
    assert!(text.contains(&format!("called at {}:", file!())), "{text}");
}
