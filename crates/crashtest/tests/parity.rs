//! Sim/real parity: each script runs once on tokio (a current-thread runtime, its clock paused
//! where time matters; real sockets on loopback; real files in a temporary directory) and once
//! in a simulation, through the same `crashtest::{time, net, fs}` calls, and what it observes
//! must be the same. Where the two worlds legitimately differ, the test asserts the documented
//! difference instead.

use std::cell::RefCell;
use std::future::Future;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crashtest::{Sim, fs, net, time};
use tokio::io::{AsyncReadExt, AsyncSeek, AsyncWriteExt};

/// Runs `script` on a current-thread tokio runtime, its clock paused if `paused`.
fn on_tokio<F: Future>(paused: bool, script: impl FnOnce() -> F) -> F::Output {
    let mut builder = tokio::runtime::Builder::new_current_thread();
    builder.enable_all().start_paused(paused);
    builder
        .build()
        .expect("a current-thread runtime")
        .block_on(script())
}

/// Runs `script` as the body of a simulation and returns what it returned.
fn in_sim<T: 'static, F: Future<Output = T> + 'static>(script: impl FnOnce() -> F) -> T {
    let out = Rc::new(RefCell::new(None));
    let slot = out.clone();
    let body = script();
    Sim::new(1)
        .run(async move { *slot.borrow_mut() = Some(body.await) })
        .expect("the simulation runs");
    out.take().expect("the script finished")
}

/// Milliseconds on the clock of the world the script runs in: tokio's (paused) clock on the
/// real side, virtual time in a simulation. Start it inside the world (in the script's
/// future), where that world's clock is the one that reads.
#[derive(Clone, Copy)]
enum Clock {
    Tokio(tokio::time::Instant),
    Sim(time::Instant),
}

impl Clock {
    fn tokio() -> Clock {
        Clock::Tokio(tokio::time::Instant::now())
    }

    fn sim() -> Clock {
        Clock::Sim(time::Instant::now())
    }

    fn ms(self) -> u128 {
        match self {
            Clock::Tokio(start) => start.elapsed().as_millis(),
            Clock::Sim(start) => (time::Instant::now() - start).as_millis(),
        }
    }
}

mod time_parity {
    use super::*;

    /// Three tasks sleep 30, 10 and 20 ms; returns the order they wake in, with the time.
    async fn sleep_order(clock: Clock) -> Vec<(u64, u128)> {
        let woke = Arc::new(Mutex::new(Vec::new()));
        let tasks: Vec<_> = [30u64, 10, 20]
            .into_iter()
            .map(|ms| {
                let woke = woke.clone();
                crashtest::spawn(async move {
                    time::sleep(Duration::from_millis(ms)).await;
                    woke.lock().unwrap().push((ms, clock.ms()));
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        woke.lock().unwrap().clone()
    }

    #[test]
    fn sleeps_wake_in_deadline_order_on_both_clocks() {
        let real = on_tokio(true, || async { sleep_order(Clock::tokio()).await });
        let sim = in_sim(|| async { sleep_order(Clock::sim()).await });
        assert_eq!(real, [(10, 10), (20, 20), (30, 30)]);
        assert_eq!(sim, real);
    }

    /// An interval of 10 ms whose task stalls 35 ms after the first tick: when the next three
    /// ticks come.
    async fn ticks_after_a_stall(behavior: time::MissedTickBehavior, clock: Clock) -> Vec<u128> {
        let mut ticks = time::interval(Duration::from_millis(10));
        ticks.set_missed_tick_behavior(behavior);
        ticks.tick().await;
        time::sleep(Duration::from_millis(35)).await;
        let mut at = Vec::new();
        for _ in 0..3 {
            ticks.tick().await;
            at.push(clock.ms());
        }
        at
    }

    /// The same stall with tokio's own interval: the behaviour both must match.
    async fn tokio_ticks_after_a_stall(behavior: tokio::time::MissedTickBehavior) -> Vec<u128> {
        let start = tokio::time::Instant::now();
        let mut ticks = tokio::time::interval(Duration::from_millis(10));
        ticks.set_missed_tick_behavior(behavior);
        ticks.tick().await;
        tokio::time::sleep(Duration::from_millis(35)).await;
        let mut at = Vec::new();
        for _ in 0..3 {
            ticks.tick().await;
            at.push(start.elapsed().as_millis());
        }
        at
    }

    #[test]
    fn missed_ticks_are_handled_as_tokio_does_in_each_mode() {
        use time::MissedTickBehavior::{Burst, Delay, Skip};
        use tokio::time::MissedTickBehavior as Tokio;
        for (behavior, theirs) in [
            (Burst, Tokio::Burst),
            (Delay, Tokio::Delay),
            (Skip, Tokio::Skip),
        ] {
            let tokio_own = on_tokio(true, || tokio_ticks_after_a_stall(theirs));
            let real = on_tokio(true, || async move {
                ticks_after_a_stall(behavior, Clock::tokio()).await
            });
            let sim =
                in_sim(move || async move { ticks_after_a_stall(behavior, Clock::sim()).await });
            assert_eq!(real, tokio_own, "{behavior:?} on tokio");
            assert_eq!(sim, real, "{behavior:?} in a simulation");
        }
    }

    /// A timeout that elapses and one that lets its future finish.
    async fn timeouts(clock: Clock) -> (bool, u128, Result<&'static str, ()>) {
        let slow = time::timeout(
            Duration::from_millis(10),
            time::sleep(Duration::from_secs(1)),
        );
        let elapsed = slow.await.is_err();
        let at = clock.ms();
        let quick = time::timeout(Duration::from_millis(10), async { "ready" }).await;
        (elapsed, at, quick.map_err(drop))
    }

    #[test]
    fn a_timeout_elapses_at_its_deadline_or_passes_the_output() {
        let real = on_tokio(true, || async { timeouts(Clock::tokio()).await });
        let sim = in_sim(|| async { timeouts(Clock::sim()).await });
        assert_eq!(real, (true, 10, Ok("ready")));
        assert_eq!(sim, real);
    }
}

mod net_parity {
    use super::*;

    /// What the client and the server of one connection saw.
    #[derive(Debug, PartialEq, Eq)]
    struct Seen {
        server_got: Vec<u8>,
        client_got: Vec<u8>,
    }

    /// The client writes, shuts its write direction down and reads until the server closes;
    /// the server reads to the end of the client's stream, then answers and closes.
    async fn half_close() -> Seen {
        let listener = net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = crashtest::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut got = Vec::new();
            stream.read_to_end(&mut got).await.unwrap();
            stream.write_all(b"bye").await.unwrap();
            got
        });
        let mut client = net::TcpStream::connect(addr).await.unwrap();
        client.write_all(b"hello").await.unwrap();
        client.shutdown().await.unwrap();
        let mut client_got = Vec::new();
        client.read_to_end(&mut client_got).await.unwrap();
        Seen {
            server_got: server.await.unwrap(),
            client_got,
        }
    }

    #[test]
    fn a_half_closed_stream_still_carries_the_answer() {
        let real = on_tokio(false, half_close);
        let sim = in_sim(half_close);
        assert_eq!(
            real,
            Seen {
                server_got: b"hello".to_vec(),
                client_got: b"bye".to_vec()
            }
        );
        assert_eq!(sim, real);
    }

    /// Connects to a port whose listener is gone.
    async fn refused() -> ErrorKind {
        let listener = net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        net::TcpStream::connect(addr).await.unwrap_err().kind()
    }

    #[test]
    fn connecting_to_a_closed_port_is_refused() {
        assert_eq!(on_tokio(false, refused), ErrorKind::ConnectionRefused);
        assert_eq!(in_sim(refused), ErrorKind::ConnectionRefused);
    }

    /// The server accepts and closes at once; the client reads twice.
    async fn read_after_close() -> (usize, usize) {
        let listener = net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = crashtest::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            drop(stream);
        });
        let mut client = net::TcpStream::connect(addr).await.unwrap();
        server.await.unwrap();
        let mut buf = [0; 8];
        let first = client.read(&mut buf).await.unwrap();
        let second = client.read(&mut buf).await.unwrap();
        (first, second)
    }

    #[test]
    fn reads_after_the_peer_closes_see_the_end_of_the_stream() {
        assert_eq!(on_tokio(false, read_after_close), (0, 0));
        assert_eq!(in_sim(read_after_close), (0, 0));
    }

    /// The server writes 10 bytes in two writes; the client reads them 3 at a most. Returns
    /// the bytes and the largest read. How the bytes are cut into reads is the network's
    /// business (it differs between the worlds, and between runs of the real one): only the
    /// content and the bound are compared.
    async fn partial_reads() -> (Vec<u8>, usize) {
        let listener = net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = crashtest::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            stream.write_all(b"01234").await.unwrap();
            stream.write_all(b"56789").await.unwrap();
        });
        let mut client = net::TcpStream::connect(addr).await.unwrap();
        let (mut got, mut largest) = (Vec::new(), 0);
        let mut buf = [0; 3];
        loop {
            let n = client.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            largest = largest.max(n);
            got.extend_from_slice(&buf[..n]);
        }
        server.await.unwrap();
        (got, largest)
    }

    #[test]
    fn short_reads_deliver_every_byte_in_order() {
        let real = on_tokio(false, partial_reads);
        let sim = in_sim(partial_reads);
        assert_eq!(real, (b"0123456789".to_vec(), 3));
        assert_eq!(sim, real);
    }
}

mod fs_parity {
    use super::*;

    /// A step's outcome: the bytes or names it returned, or its error's kind.
    fn outcome<T: std::fmt::Debug>(result: std::io::Result<T>) -> String {
        match result {
            Ok(value) => format!("ok {value:?}"),
            Err(error) => format!("err {:?}", error.kind()),
        }
    }

    /// Writes, reads, renames and removes under `root`; returns each step's outcome.
    async fn namespace_script(root: PathBuf) -> Vec<String> {
        let at = |name: &str| root.join(name);
        let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
        let mut seen = Vec::new();
        seen.push(outcome(fs::write(at("a"), b"one").await));
        seen.push(outcome(fs::read(at("a")).await.map(text)));
        seen.push(outcome(fs::write(at("a"), b"two").await));
        seen.push(outcome(fs::read_to_string(at("a")).await));
        seen.push(outcome(fs::rename(at("a"), at("b")).await));
        seen.push(outcome(fs::read(at("a")).await.map(text)));
        seen.push(outcome(fs::read(at("b")).await.map(text)));
        seen.push(outcome(fs::write(at("c"), b"three").await));
        seen.push(outcome(fs::rename(at("b"), at("c")).await));
        seen.push(outcome(fs::read(at("c")).await.map(text)));
        seen.push(outcome(fs::create_dir(at("d")).await));
        seen.push(outcome(fs::create_dir(at("d")).await));
        seen.push(outcome(fs::write(at("d/f"), b"x").await));
        seen.push(outcome(fs::remove_dir(at("d")).await));
        seen.push(outcome(fs::remove_file(at("d")).await));
        seen.push(outcome(fs::rename(at("d"), at("d/inner")).await));
        seen.push(outcome(fs::remove_file(at("d/f")).await));
        seen.push(outcome(fs::remove_dir(at("d")).await));
        seen.push(outcome(fs::remove_file(at("c")).await));
        seen.push(outcome(fs::remove_file(at("c")).await));
        seen.push(outcome(fs::try_exists(at("c")).await));
        seen.push(outcome(fs::metadata(at("b")).await.map(|m| m.len())));
        let mut names = Vec::new();
        fs::write(at("y"), b"").await.unwrap();
        fs::create_dir(at("x")).await.unwrap();
        let mut listing = fs::read_dir(&root).await.unwrap();
        while let Some(entry) = listing.next_entry().await.unwrap() {
            let is_dir = entry.file_type().await.unwrap().is_dir();
            names.push((entry.file_name().into_string().unwrap(), is_dir));
        }
        names.sort();
        seen.push(format!("listing {names:?}"));
        seen
    }

    /// Writes through a `File` the way a program cut short by a timeout does, then writes to
    /// a file opened read-only (the write fails in the background: a sync waits for it but
    /// does not report it, the next flush or write does); returns each step's outcome and
    /// what the file holds.
    async fn write_behind_script(root: PathBuf) -> Vec<String> {
        let path = root.join("w");
        let mut seen = Vec::new();
        let mut file = fs::File::create(&path).await.unwrap();
        let cut = time::timeout(Duration::ZERO, file.write_all(b"old")).await;
        seen.push(format!(
            "timed write {:?}",
            cut.map(|r| r.map_err(|e| e.kind()))
        ));
        seen.push(outcome(file.write_all(b"newer bytes").await));
        seen.push(outcome(file.flush().await));
        seen.push(outcome(fs::read_to_string(&path).await));
        drop(file);
        let mut read_only = fs::File::open(&path).await.unwrap();
        seen.push(outcome(read_only.write(b"x").await));
        seen.push(outcome(read_only.sync_all().await));
        seen.push(outcome(read_only.flush().await));
        seen.push(outcome(read_only.flush().await));
        seen.push(outcome(read_only.write(b"y").await));
        let mut head = [0; 3];
        seen.push(outcome(read_only.read_exact(&mut head).await));
        seen.push(outcome(read_only.write(b"z").await));
        seen.push(outcome(read_only.write(b"w").await));
        seen.push(outcome(fs::read_to_string(&path).await));
        // A seek started and never completed still moves the cursor before the next write.
        let mut file = fs::File::create(&path).await.unwrap();
        file.write_all(b"abcdef").await.unwrap();
        seen.push(outcome(file.flush().await));
        seen.push(outcome(
            std::pin::Pin::new(&mut file).start_seek(std::io::SeekFrom::Start(1)),
        ));
        seen.push(outcome(file.write_all(b"X").await));
        seen.push(outcome(file.flush().await));
        seen.push(outcome(fs::read_to_string(&path).await));
        seen
    }

    /// A fresh directory for the real side, removed when dropped.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> TempDir {
            let dir = std::env::temp_dir()
                .join(format!("crashtest-parity-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }

        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn writes_reads_renames_and_removals_behave_as_on_a_real_disk() {
        let dir = TempDir::new("namespace");
        let real_root = dir.path().to_path_buf();
        let real = on_tokio(false, || namespace_script(real_root));
        let sim = in_sim(|| namespace_script(PathBuf::from("/")));
        assert_eq!(real.len(), sim.len());
        for (step, (real, sim)) in real.iter().zip(&sim).enumerate() {
            assert_eq!(sim, real, "step {step}");
        }
    }

    #[test]
    fn a_file_is_write_behind_as_tokio_s() {
        let dir = TempDir::new("write-behind");
        let real_root = dir.path().to_path_buf();
        let real = on_tokio(false, || write_behind_script(real_root));
        let sim = in_sim(|| write_behind_script(PathBuf::from("/")));
        assert_eq!(real[3], "ok \"oldnewer bytes\"", "tokio's File: {real:?}");
        assert_eq!(
            real.last().unwrap(),
            "ok \"aXcdef\"",
            "tokio's File: {real:?}"
        );
        assert_eq!(real.len(), sim.len());
        for (step, (real, sim)) in real.iter().zip(&sim).enumerate() {
            assert_eq!(sim, real, "step {step}");
        }
    }
}
