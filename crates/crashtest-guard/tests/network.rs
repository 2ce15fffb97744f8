//! Inside a simulation nothing reaches the real network: connects, sends, accepts and listens
//! on real sockets fail the run with a message that says what to use instead, std's listener
//! is a placeholder that takes no real port (but its port on the simulated network, as Linux
//! takes one at `bind`), a local listener sees no connection,
//! node names resolve to the nodes' simulated addresses without DNS, and a socket configured
//! the way hyper-util's connector configures one can be handed to a tokio stand-in with every
//! option it was given. Outside a simulation real sockets and DNS work as before.

#![cfg(guards)]

use std::future::Future;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs, UdpSocket};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;

mod common;

use crashtest_core::{RunFailure, RunSummary, Sim, node, plumbing};
use socket2::{Domain, Protocol, Socket, TcpKeepalive, Type};

/// Runs `body` under seed 1 on a fresh thread, as the runner runs every seed.
fn run<Fut: Future<Output = ()> + 'static>(
    body: impl FnOnce() -> Fut + Send,
) -> Result<RunSummary, Box<RunFailure>> {
    crashtest_guard::on_fresh_thread(|| Sim::new(1).run(body()))
}

/// Asserts that the run failed because `call` would have reached the real network, with a
/// message that names the call and what to use instead.
fn assert_refused(result: Result<RunSummary, Box<RunFailure>>, call: &str) {
    let failure = result.expect_err("the run must fail");
    common::assert_refused_with(
        &failure,
        &[
            &format!("{call} was called inside the simulation"),
            "A simulation never reaches the real network",
            "crashtest::net",
            "crashtest's tokio stand-in",
            "see the README section on running tokio code",
        ],
    );
}

/// A real loopback listener, made outside any simulation, that must see no connection.
fn local_listener() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    (listener, addr)
}

fn assert_no_connection(listener: &TcpListener) {
    // A loopback connect completes its handshake before `connect` returns, so a connection
    // the guard let through would already wait here.
    std::thread::sleep(Duration::from_millis(20));
    let accepted = listener.accept().map(|(_, peer)| peer);
    assert_eq!(
        accepted.map_err(|e| e.kind()),
        Err(ErrorKind::WouldBlock),
        "the listener saw a connection from inside the simulation"
    );
}

#[test]
fn std_tcp_connect_to_an_outside_address_fails_the_run_naming_the_fix() {
    let result = run(|| async {
        let error = TcpStream::connect("93.184.216.34:80").unwrap_err();
        assert_eq!(error.raw_os_error(), Some(libc::EPERM));
    });
    assert_refused(result, "connect");
}

#[test]
fn std_tcp_connect_to_a_local_listener_reaches_nothing() {
    let (listener, addr) = local_listener();
    let result = run(move || async move {
        assert!(TcpStream::connect(addr).is_err());
    });
    assert_refused(result, "connect");
    assert_no_connection(&listener);
}

#[test]
fn real_tokio_connect_inside_a_simulation_fails_the_run_and_reaches_nothing() {
    let outside = run(|| async {
        let error = tokio::net::TcpStream::connect("10.0.0.1:80")
            .await
            .unwrap_err();
        assert_eq!(error.raw_os_error(), Some(libc::EPERM));
    });
    assert_refused(outside, "connect");

    let (listener, addr) = local_listener();
    let local = run(move || async move {
        assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    });
    assert_refused(local, "connect");
    assert_no_connection(&listener);
}

#[test]
fn udp_send_to_fails_the_run_and_no_datagram_leaves() {
    let receiver = UdpSocket::bind("127.0.0.1:0").unwrap();
    receiver.set_nonblocking(true).unwrap();
    let to = receiver.local_addr().unwrap();
    let result = run(move || async move {
        let socket = UdpSocket::bind("0.0.0.0:0").unwrap();
        assert!(socket.send_to(b"hello", to).is_err());
    });
    assert_refused(result, "sendto");
    std::thread::sleep(Duration::from_millis(20));
    let mut buf = [0; 16];
    assert_eq!(
        receiver.recv_from(&mut buf).map_err(|e| e.kind()).err(),
        Some(ErrorKind::WouldBlock),
        "a datagram left the simulation"
    );
}

#[test]
fn a_std_listener_inside_a_simulation_is_a_placeholder_that_takes_no_real_port() {
    // A real listener holds the port outside: a real bind inside would fail with AddrInUse.
    let (outside, addr) = local_listener();
    run(move || async move {
        let listener = TcpListener::bind(addr).unwrap();
        listener.set_nonblocking(true).unwrap();
        assert_eq!(listener.local_addr().unwrap(), addr);
        let accepting = socket2::SockRef::from(&listener).is_listener().unwrap();
        assert!(accepting, "SO_ACCEPTCONN reads back the recorded listen");
        let placeholder = crashtest_guard::adopt_placeholder(OwnedFd::from(listener)).unwrap();
        assert!(placeholder.listening);
        assert_eq!(placeholder.bound, Some(addr));
        assert!(placeholder.nonblocking);
    })
    .unwrap();
    assert_no_connection(&outside);
}

#[test]
fn a_std_bind_to_port_0_takes_a_simulated_port_that_adoption_hands_over() {
    run(|| async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        assert!((32768..=60999).contains(&addr.port()), "{addr}");
        // Taken, as on Linux: a second bind of the port fails at once, TCP only.
        let again = TcpListener::bind(addr).unwrap_err();
        assert_eq!(again.kind(), ErrorKind::AddrInUse);
        drop(UdpSocket::bind(addr).unwrap());
        let other = TcpListener::bind("127.0.0.1:0").unwrap();
        assert_ne!(
            other.local_addr().unwrap(),
            addr,
            "each bind takes its own port"
        );
        // Adoption hands the port over and frees it, for the adopter to bind at once.
        let placeholder = crashtest_guard::adopt_placeholder(OwnedFd::from(listener)).unwrap();
        assert_eq!(placeholder.bound, Some(addr));
        let simulated = crashtest_net::TcpListener::bind(addr).await.unwrap();
        assert_eq!(simulated.local_addr().unwrap(), addr);
    })
    .unwrap();
}

#[test]
fn a_closed_placeholder_frees_its_port_and_a_listen_unbound_takes_one() {
    run(|| async {
        let socket = UdpSocket::bind("0.0.0.0:7000").unwrap();
        assert_eq!(
            UdpSocket::bind("0.0.0.0:7000").unwrap_err().kind(),
            ErrorKind::AddrInUse
        );
        drop(socket);
        drop(UdpSocket::bind("0.0.0.0:7000").unwrap());

        let unbound = Socket::new(Domain::IPV6, Type::STREAM, None).unwrap();
        unbound.listen(16).unwrap();
        let addr = unbound.local_addr().unwrap().as_socket().unwrap();
        assert!(addr.ip().is_unspecified() && addr.is_ipv6(), "{addr}");
        assert!((32768..=60999).contains(&addr.port()), "{addr}");
    })
    .unwrap();
}

#[test]
fn a_placeholder_lives_until_its_last_descriptor_closes() {
    run(|| async {
        let listener = TcpListener::bind("0.0.0.0:7100").unwrap();
        let copy = listener.try_clone().unwrap();
        drop(listener);
        // The duplicate still holds the socket, its record and its port, as on Linux.
        assert_eq!(
            TcpListener::bind("0.0.0.0:7100").unwrap_err().kind(),
            ErrorKind::AddrInUse
        );
        assert_eq!(copy.local_addr().unwrap().port(), 7100);
        drop(copy);
        drop(TcpListener::bind("0.0.0.0:7100").unwrap());
    })
    .unwrap();
}

#[test]
fn a_killed_nodes_placeholders_free_their_ports() {
    run(|| async {
        let server = node::create("server", || async {
            // Bound, listening, and never closed: only the node's death ends it.
            std::mem::forget(TcpListener::bind("0.0.0.0:7200").unwrap());
            std::future::pending::<()>().await
        });
        crashtest_core::time::sleep(Duration::from_millis(1)).await;
        server.kill();
        server.restart();
        crashtest_core::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(server.status(), crashtest_core::node::NodeStatus::Running);
    })
    .unwrap();
}

#[test]
fn a_std_bind_to_another_nodes_address_fails_as_on_linux() {
    run(|| async {
        node::create("other", std::future::pending);
        let other = ("other", 80).to_socket_addrs().unwrap().next().unwrap();
        let error = TcpListener::bind(other).unwrap_err();
        assert_eq!(error.raw_os_error(), Some(libc::EADDRNOTAVAIL));
    })
    .unwrap();
}

#[test]
fn accepting_on_a_std_listener_inside_a_simulation_fails_the_run() {
    let result = run(|| async {
        let listener = TcpListener::bind("0.0.0.0:8080").unwrap();
        assert!(listener.accept().is_err());
    });
    assert_refused(result, "accept4");
}

#[test]
fn listen_on_a_real_socket_inside_a_simulation_fails_the_run() {
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    socket
        .bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
        .unwrap();
    let result = run(move || async move {
        assert!(socket.listen(1).is_err());
    });
    assert_refused(result, "listen");
}

#[test]
fn a_socket_made_before_the_simulation_cannot_send_inside_it() {
    let (listener, addr) = local_listener();
    let stream = TcpStream::connect(addr).unwrap();
    let result = run(move || async move {
        let mut stream = stream;
        assert!(stream.write(b"leak").is_err());
    });
    assert_refused(result, "send");
    // The run dropped the stream, so the server side reads the end of the stream, and
    // nothing before it.
    let (mut server_side, _) = listener.accept().unwrap();
    let mut received = Vec::new();
    server_side.read_to_end(&mut received).unwrap();
    assert_eq!(received, b"", "bytes left the simulation");
}

#[test]
fn unix_socket_pairs_stay_usable_inside_a_simulation() {
    run(|| async {
        let (mut a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
        a.write_all(b"local").unwrap();
        let mut buf = [0; 5];
        b.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"local");
    })
    .unwrap();
}

#[test]
fn node_names_resolve_to_the_nodes_simulated_addresses_without_dns() {
    run(|| async {
        node::create("db", std::future::pending);
        node::create("cache", std::future::pending);
        let db: Vec<SocketAddr> = "db:5432".to_socket_addrs().unwrap().collect();
        assert_eq!(db, ["10.0.0.1:5432".parse().unwrap()]);
        let cache: Vec<SocketAddr> = ("cache", 6379).to_socket_addrs().unwrap().collect();
        assert_eq!(cache, ["10.0.0.2:6379".parse().unwrap()]);
        let local: Vec<SocketAddr> = "localhost:1".to_socket_addrs().unwrap().collect();
        assert_eq!(local, ["127.0.0.1:1".parse().unwrap()]);
        let addrs = tokio::net::lookup_host("10.0.0.1:80").await.unwrap();
        assert_eq!(addrs.count(), 1);
    })
    .unwrap();
}

#[test]
fn an_unknown_name_fails_the_run_with_eai_noname() {
    let failure = run(|| async {
        let error = "example.com:443".to_socket_addrs().unwrap_err();
        assert!(
            error.to_string().contains("Name or service not known"),
            "{error}"
        );
    })
    .unwrap_err();
    common::assert_refused_with(
        &failure,
        &[
            "getaddrinfo was asked for \"example.com\" inside the simulation",
            "never asks the real DNS",
            "crashtest::node::create(\"example.com\", ..)",
        ],
    );
}

#[test]
#[ignore = "run alone in a child process by resolver_answers_are_freed_by_glibcs_freeaddrinfo"]
fn count_the_bytes_resolver_answers_leave_allocated() {
    run(|| async {
        node::create("db", std::future::pending);
        let resolve = || {
            let mut list: *mut libc::addrinfo = std::ptr::null_mut();
            let mut hints: libc::addrinfo = unsafe_zeroed();
            hints.ai_flags = libc::AI_CANONNAME;
            // SAFETY: the strings are NUL-terminated, `hints` and `list` are valid.
            let code =
                unsafe { libc::getaddrinfo(c"db".as_ptr(), c"80".as_ptr(), &hints, &mut list) };
            assert_eq!(code, 0);
            // SAFETY: getaddrinfo succeeded, so `list` is a list of three entries.
            let first = unsafe { &*list };
            // SAFETY: as above; the canonical name is NUL-terminated.
            let name = unsafe { std::ffi::CStr::from_ptr(first.ai_canonname) };
            assert_eq!(name, c"db");
            // SAFETY: `list` came from getaddrinfo and is freed once.
            unsafe { libc::freeaddrinfo(list) };
        };
        resolve();
        // SAFETY: mallinfo2 only reads the allocator's counters.
        let before = unsafe { libc::mallinfo2() }.uordblks;
        for _ in 0..1000 {
            resolve();
        }
        // SAFETY: as above.
        let after = unsafe { libc::mallinfo2() }.uordblks;
        println!("leaked {} bytes", after.saturating_sub(before));
    })
    .unwrap();
}

#[test]
fn resolver_answers_are_freed_by_glibcs_freeaddrinfo() {
    // The allocator's counters are the whole process's: count in a process of its own, where
    // no other test allocates meanwhile. A thousand leaked answers would be over 250 kB.
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "count_the_bytes_resolver_answers_leave_allocated",
            "--nocapture",
            "--test-threads=1",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "child failed: {output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let leaked: u64 = stdout
        .split_once("leaked ")
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("child printed {stdout}"));
    assert!(leaked <= 4096, "{leaked} bytes leaked");
}

/// A zeroed C struct.
fn unsafe_zeroed<T: Copy>() -> T {
    // SAFETY: used only for C structs of integers and pointers, for which zero is valid.
    unsafe { std::mem::zeroed() }
}

/// What hyper-util's `HttpConnector` does to a new socket before it hands it to tokio, plus
/// the options it sets through tokio afterwards.
fn configure_like_hyper_util(local: SocketAddr) -> Socket {
    let socket = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).unwrap();
    socket.set_nonblocking(true).unwrap();
    let keepalive = TcpKeepalive::new()
        .with_time(Duration::from_secs(60))
        .with_interval(Duration::from_secs(10))
        .with_retries(4);
    socket.set_tcp_keepalive(&keepalive).unwrap();
    socket.bind_device(Some(b"eth0")).unwrap();
    socket
        .set_tcp_user_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    socket.bind(&local.into()).unwrap();
    socket.set_reuse_address(true).unwrap();
    socket.set_send_buffer_size(1 << 16).unwrap();
    socket.set_recv_buffer_size(1 << 17).unwrap();
    socket.set_tcp_nodelay(true).unwrap();
    socket
}

#[test]
fn hyper_utils_socket2_sequence_succeeds_on_a_placeholder_and_adoption_returns_its_options() {
    run(|| async {
        let local: SocketAddr = "10.0.0.0:0".parse().unwrap();
        let socket = configure_like_hyper_util(local);
        // The program reads back what it set, as it would from a real socket.
        assert!(socket.tcp_nodelay().unwrap());
        assert!(socket.keepalive().unwrap());
        assert_eq!(
            socket.tcp_keepalive_time().unwrap(),
            Duration::from_secs(60)
        );
        // Bound to port 0, the socket took a free ephemeral port, as Linux would give it.
        let bound = socket.local_addr().unwrap().as_socket().unwrap();
        assert_eq!(bound.ip(), local.ip());
        assert!((32768..=60999).contains(&bound.port()), "{bound}");
        assert_eq!(socket.r#type().unwrap(), Type::STREAM);
        assert_eq!(
            socket.peer_addr().unwrap_err().raw_os_error(),
            Some(libc::ENOTCONN)
        );
        let stream: TcpStream = socket.into();
        let placeholder = crashtest_guard::adopt_placeholder(stream.into()).unwrap();
        assert_eq!(
            (placeholder.domain, placeholder.ty, placeholder.protocol),
            (libc::AF_INET, libc::SOCK_STREAM, libc::IPPROTO_TCP)
        );
        assert!(placeholder.nonblocking);
        assert_eq!(placeholder.bound, Some(bound));
        let options = placeholder.options;
        assert!(options.nodelay && options.keepalive && options.reuse_address);
        assert_eq!(options.keepalive_time, Some(Duration::from_secs(60)));
        assert_eq!(options.keepalive_interval, Some(Duration::from_secs(10)));
        assert_eq!(options.keepalive_retries, Some(4));
        assert_eq!(options.user_timeout, Some(Duration::from_secs(30)));
        assert_eq!(options.send_buffer_size, Some(1 << 16));
        assert_eq!(options.recv_buffer_size, Some(1 << 17));
        assert_eq!(options.bound_device.as_deref(), Some(&b"eth0"[..]));
    })
    .unwrap();
}

#[test]
fn adoption_takes_only_placeholders_of_the_running_simulation() {
    let file = || -> OwnedFd { std::fs::File::open("Cargo.toml").unwrap().into() };
    assert!(crashtest_guard::adopt_placeholder(file()).is_err());
    run(move || async move {
        let file = file();
        let raw = file.as_raw_fd();
        let handed_back = crashtest_guard::adopt_placeholder(file).unwrap_err();
        assert_eq!(
            handed_back.as_raw_fd(),
            raw,
            "the file is handed back untouched"
        );

        // A duplicate is the same socket; once adopted, neither is a placeholder any more.
        let socket = Socket::new(Domain::IPV6, Type::DGRAM, None).unwrap();
        socket.set_only_v6(true).unwrap();
        let copy = socket.try_clone().unwrap();
        let adopted = crashtest_guard::adopt_placeholder(copy.into()).unwrap();
        assert_eq!(
            (adopted.domain, adopted.ty),
            (libc::AF_INET6, libc::SOCK_DGRAM)
        );
        assert!(adopted.options.only_v6);
        assert!(crashtest_guard::adopt_placeholder(socket.into()).is_err());

        // A closed placeholder is forgotten.
        let closed = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
        drop(closed);
        let fresh = Socket::new(Domain::IPV4, Type::DGRAM, None).unwrap();
        assert_eq!(
            crashtest_guard::adopt_placeholder(fresh.into()).unwrap().ty,
            libc::SOCK_DGRAM
        );
    })
    .unwrap();
}

#[test]
fn a_placeholder_never_blocks_and_holds_nothing() {
    run(|| async {
        let socket = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
        let fd = socket.as_raw_fd();
        let mut buf = [0u8; 4];
        // SAFETY: `buf` is valid for its length; the descriptor is open. It is blocking, so a
        // placeholder that could block would hang this test.
        let read = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        assert_eq!(read, 0);
        // SAFETY: as above.
        let written = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        assert_eq!(written, -1);
        assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::EPERM)
        );
        // A socket call the guards do not answer fails as on any non-socket.
        // SAFETY: the descriptor is open; SHUT_RDWR is a valid mode.
        assert_eq!(unsafe { libc::shutdown(fd, libc::SHUT_RDWR) }, -1);
        assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::ENOTSOCK)
        );
    })
    .unwrap();
}

#[test]
fn outside_a_simulation_real_sockets_and_loopback_dns_work() {
    // On a thread where a simulation ran and ended, as the runner's threads are.
    crashtest_guard::on_fresh_thread(|| {
        Sim::new(1).run(async {}).unwrap();
        let port = {
            let (listener, addr) = local_listener();
            listener.set_nonblocking(false).unwrap();
            let mut client = TcpStream::connect(addr).unwrap();
            client.set_nodelay(true).unwrap();
            assert!(client.nodelay().unwrap());
            client.write_all(b"ping").unwrap();
            let (mut server, _) = listener.accept().unwrap();
            let mut buf = [0; 4];
            server.read_exact(&mut buf).unwrap();
            assert_eq!(&buf, b"ping");
            addr.port()
        };
        let resolved: Vec<SocketAddr> = ("localhost", port).to_socket_addrs().unwrap().collect();
        assert!(
            resolved
                .iter()
                .all(|a| a.ip().is_loopback() && a.port() == port)
        );
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        udp.send_to(b"dgram", udp.local_addr().unwrap()).unwrap();
        let mut buf = [0; 8];
        assert_eq!(udp.recv_from(&mut buf).unwrap().0, 5);
        assert!(crashtest_guard::adopt_placeholder(udp.into()).is_err());
    });
}

/// A program that resolves names, builds and configures sockets and adopts them, recording
/// what it sees; its cluster's size is drawn from the seed.
async fn resolves_and_configures_sockets() {
    let nodes = 1 + crashtest_core::rng::node_rng().next_u64() % 8;
    for i in 0..nodes {
        node::create(format!("n{i}"), std::future::pending);
    }
    let last = format!("n{}:80", nodes - 1);
    let addr = last.to_socket_addrs().unwrap().next().unwrap();
    let SocketAddr::V4(v4) = addr else {
        panic!("nodes have IPv4 addresses")
    };
    let local = SocketAddr::from(([0, 0, 0, 0], 0));
    let placeholder = crashtest_guard::adopt_placeholder(
        TcpStream::from(configure_like_hyper_util(local)).into(),
    )
    .unwrap();
    plumbing::notes::record(
        "resolved",
        [
            u32::from(*v4.ip()).into(),
            placeholder.bound.unwrap().port().into(),
            placeholder.options.raw.len() as u64,
        ],
        String::new(),
    );
}

#[test]
fn the_same_seed_gives_the_same_fingerprint_with_sockets_and_names() {
    let print = |seed| {
        crashtest_guard::on_fresh_thread(move || {
            let config = crashtest_core::Config::default().record_trace(true);
            let summary = Sim::with_config(seed, config)
                .run(resolves_and_configures_sockets())
                .unwrap();
            (summary.fingerprint, summary.trace.unwrap().len())
        })
    };
    for seed in 0..3 {
        assert_eq!(print(seed), print(seed), "seed {seed}");
    }
    let prints: std::collections::BTreeSet<u64> = (0..6).map(|seed| print(seed).0).collect();
    assert_eq!(prints.len(), 6);
}
