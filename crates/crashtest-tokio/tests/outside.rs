//! Outside a simulation the stand-in is tokio: `#[tokio::test]` builds a real runtime
//! through it, and tasks, sleeps, timeouts and join sets run on that runtime.

use crashtest_tokio as tokio;
use std::time::Duration;

#[tokio::test(crate = "crashtest_tokio")]
async fn tokio_test_builds_a_real_runtime_through_the_stand_in() {
    assert!(crashtest_hooks::current().is_none());
    let handle = tokio::runtime::Handle::current();
    assert_eq!(
        handle.runtime_flavor(),
        tokio::runtime::RuntimeFlavor::CurrentThread
    );
    let task = tokio::spawn(async {
        tokio::time::sleep(Duration::from_millis(1)).await;
        tokio::task::id()
    });
    let id = task.id();
    assert_eq!(task.await.unwrap(), id);
}

#[tokio::test(crate = "crashtest_tokio", flavor = "multi_thread", worker_threads = 2)]
async fn tasks_joins_and_timeouts_run_on_the_real_runtime() {
    let mut set = tokio::task::JoinSet::new();
    for ms in [3, 1, 2] {
        set.spawn(async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            ms
        });
    }
    let mut total = 0;
    while let Some(done) = set.join_next().await {
        total += done.unwrap();
    }
    assert_eq!(total, 6);
    let late = tokio::time::timeout(Duration::from_millis(1), std::future::pending::<()>()).await;
    assert!(late.is_err());
    let pending = tokio::spawn(std::future::pending::<()>());
    pending.abort();
    assert!(pending.await.unwrap_err().is_cancelled());
    let sum = tokio::task::spawn_blocking(|| 2 + 2).await.unwrap();
    assert_eq!(sum, 4);
    assert_eq!(tokio::task::block_in_place(|| 5), 5);
}

#[test]
fn a_runtime_built_by_hand_runs_a_panicking_task_to_a_join_error() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let error = rt
        .block_on(async { tokio::spawn(async { panic!("on purpose") }).await })
        .unwrap_err();
    assert!(error.is_panic());
    let payload = error.into_panic();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"on purpose"));
}

#[test]
fn an_interval_outside_a_simulation_ticks_on_tokios_clock() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut ticks = tokio::time::interval(Duration::from_millis(1));
        let first = ticks.tick().await;
        let second = ticks.tick().await;
        assert!(second - first >= Duration::from_millis(1));
    });
}

#[tokio::test(crate = "crashtest_tokio")]
async fn an_unbiased_select_runs_on_the_real_runtime() {
    let mut zeros = 0;
    for _ in 0..64 {
        zeros += tokio::select! {
            _ = std::future::ready(()) => 1,
            _ = std::future::ready(()) => 0,
        };
    }
    // tokio's generator picks the start: both branches win now and then.
    assert!(zeros > 0 && zeros < 64, "{zeros} of 64");
}

#[cfg(unix)]
#[test]
fn a_command_hands_std_what_was_set_on_it() {
    let mut command = tokio::process::Command::new("true");
    command.arg0("renamed").arg("--flag").current_dir("/");
    let std = command.into_std();
    assert_eq!(std.get_program(), "true");
    assert_eq!(std.get_args().collect::<Vec<_>>(), ["--flag"]);
    assert_eq!(std.get_current_dir(), Some(std::path::Path::new("/")));
}
