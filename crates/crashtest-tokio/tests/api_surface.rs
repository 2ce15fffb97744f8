//! tokio's stable API that has no simulated meaning of its own is still there, so that code
//! written against tokio compiles against the stand-in: ids, trait impls, builder settings
//! and futures that outlive what made them. What a simulation cannot give is refused.

use crashtest_tokio as tokio;

fn unwind_safe<T: std::panic::UnwindSafe + std::panic::RefUnwindSafe>() {}

#[test]
fn sockets_and_their_halves_are_unwind_safe_and_a_stream_is_as_ref_of_itself() {
    unwind_safe::<tokio::net::TcpStream>();
    unwind_safe::<tokio::net::TcpListener>();
    unwind_safe::<tokio::net::UdpSocket>();
    unwind_safe::<tokio::net::tcp::OwnedReadHalf>();
    unwind_safe::<tokio::net::tcp::OwnedWriteHalf>();
    unwind_safe::<tokio::net::tcp::ReadHalf<'static>>();
    unwind_safe::<tokio::net::tcp::WriteHalf<'static>>();
    unwind_safe::<tokio::net::tcp::ReuniteError>();
    fn as_ref<T: AsRef<T>>() {}
    as_ref::<tokio::net::TcpStream>();
    as_ref::<tokio::net::UnixStream>();
}

/// Compiles only if a command's futures borrow nothing of it, as tokio's do (calling it
/// would start the child).
fn command_futures(
    command: &mut tokio::process::Command,
) -> (
    impl std::future::Future + 'static,
    impl std::future::Future + 'static,
) {
    (command.output(), command.status())
}

#[test]
fn a_command_future_does_not_borrow_the_command() {
    // Named, so that the check above is compiled into this test.
    let _ = command_futures;
}

#[test]
fn runtime_ids_and_the_busy_tick_setting_are_tokios_outside_a_simulation() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .max_io_events_per_busy_tick(64)
        .build()
        .unwrap();
    let set = tokio::task::LocalSet::new();
    let (handle_id, set_id) = set.block_on(&runtime, async {
        let id = tokio::runtime::Handle::current().id();
        (id, tokio::task::LocalSet::new().id())
    });
    assert_eq!(handle_id, runtime.handle().id());
    assert_ne!(handle_id, set_id);
    assert_ne!(set.id(), set_id);
}

#[test]
fn a_simulated_sets_id_is_numbered_in_the_run_and_reading_it_draws_nothing() {
    let ids = |seed| {
        let out = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let ids = out.clone();
        crashtest::Sim::new(seed)
            .run(async move {
                let runtime = tokio::runtime::Handle::current().id();
                let sets = [tokio::task::LocalSet::new(), tokio::task::LocalSet::new()];
                let mut ids = ids.borrow_mut();
                ids.push(runtime.to_string());
                ids.extend(sets.iter().map(|set| set.id().to_string()));
            })
            .unwrap();
        out.take()
    };
    assert_eq!(
        ids(3),
        ["1", "2", "3"],
        "the runtime's, then each set's as first read"
    );
    assert_eq!(ids(4), ids(3), "no seed's draw decides them");
    // Reading an id leaves the run's draws as they were: an unbiased select! picks alike.
    let picks = |read_id: bool| {
        let out = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let picks = out.clone();
        crashtest::Sim::new(5)
            .run(async move {
                if read_id {
                    let _ = tokio::task::LocalSet::new().id();
                }
                for _ in 0..16 {
                    let pick = tokio::select! {
                        _ = std::future::ready(()) => 0,
                        _ = std::future::ready(()) => 1,
                    };
                    picks.borrow_mut().push(pick);
                }
            })
            .unwrap();
        out.take()
    };
    assert_eq!(picks(true), picks(false));
}

#[test]
fn a_simulated_files_descriptor_is_refused_and_a_host_descriptor_is_a_host_file() {
    let failure = crashtest::Sim::new(1)
        .run(async {
            let file = tokio::fs::File::create("/data").await.unwrap();
            let _ = std::os::fd::AsRawFd::as_raw_fd(&file);
        })
        .expect_err("a simulated file has no descriptor")
        .to_string();
    assert!(
        failure.contains("tokio::fs::File::as_fd cannot run inside"),
        "{failure}"
    );
    assert!(failure.contains("no OS descriptor"), "{failure}");

    let host = tempfile_path();
    std::fs::write(&host, b"host").unwrap();
    let fd: std::os::fd::OwnedFd = std::fs::File::open(&host).unwrap().into();
    let raw = std::os::fd::AsRawFd::as_raw_fd(&fd);
    let file = tokio::fs::File::from(fd);
    assert_eq!(std::os::fd::AsRawFd::as_raw_fd(&file), raw);
    std::fs::remove_file(host).unwrap();
}

/// A fresh path in the host's temporary directory.
fn tempfile_path() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("crashtest-api-surface-{}", std::process::id()))
}
