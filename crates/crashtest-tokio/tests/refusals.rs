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
