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

/// A sleep made, left unpolled for a while, reset and awaited, recording what it shows on
/// the way: the stand-in makes tokio's sleep only on the first poll, from the deadline taken
/// when the sleep was made, and must show and do what tokio's own does.
macro_rules! unpolled_sleep {
    ($tokio:ident) => {
        async {
            let millis = |d: Duration| u64::try_from(d.as_millis()).unwrap();
            let start = $tokio::time::Instant::now();
            let mut seen = Vec::new();
            let first = $tokio::time::sleep(Duration::from_millis(10));
            seen.push(("deadline", millis(first.deadline() - start)));
            seen.push(("elapsed when made", u64::from(first.is_elapsed())));
            $tokio::time::sleep(Duration::from_millis(4)).await;
            first.await;
            seen.push(("first woke at", millis(start.elapsed())));
            let mut second = std::pin::pin!($tokio::time::sleep(Duration::from_millis(50)));
            second.as_mut().reset(start + Duration::from_millis(25));
            seen.push(("reset deadline", millis(second.deadline() - start)));
            second.as_mut().await;
            seen.push(("second woke at", millis(start.elapsed())));
            seen.push(("elapsed when done", u64::from(second.is_elapsed())));
            let late = $tokio::time::sleep(Duration::from_millis(5));
            $tokio::time::sleep(Duration::from_millis(20)).await;
            late.await;
            seen.push(("late woke at", millis(start.elapsed())));
            let mut past = std::pin::pin!($tokio::time::sleep(Duration::from_millis(50)));
            past.as_mut().reset(start);
            seen.push(("reset into the past, elapsed", u64::from(past.is_elapsed())));
            let mut unpolled = std::pin::pin!($tokio::time::sleep(Duration::from_millis(50)));
            unpolled
                .as_mut()
                .reset($tokio::time::Instant::now() + Duration::from_millis(5));
            $tokio::time::sleep(Duration::from_millis(10)).await;
            seen.push(("reset, unpolled, elapsed", u64::from(unpolled.is_elapsed())));
            let century = $tokio::time::sleep(Duration::from_secs(100 * 365 * 86_400));
            let far = century.deadline() - $tokio::time::Instant::now();
            seen.push(("a century's sleep, in days", far.as_secs() / 86_400));
            seen
        }
    };
}

#[test]
fn a_sleep_polled_late_reset_before_its_first_poll_or_of_a_century_behaves_as_tokios() {
    fn on_paused_tokio<T>(script: impl Future<Output = T>) -> T {
        real::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap()
            .block_on(script)
    }
    let expected = on_paused_tokio(unpolled_sleep!(real));
    assert_eq!(on_paused_tokio(unpolled_sleep!(tokio)), expected);
    assert_eq!(
        expected,
        [
            ("deadline", 10),
            ("elapsed when made", 0),
            ("first woke at", 10),
            ("reset deadline", 25),
            ("second woke at", 25),
            ("elapsed when done", 1),
            ("late woke at", 45),
            ("reset into the past, elapsed", 1),
            ("reset, unpolled, elapsed", 1),
            ("a century's sleep, in days", 30 * 365),
        ]
    );
}

#[test]
fn a_sleep_made_outside_any_runtime_panics_as_tokios_does_when_first_polled() {
    let sleep = tokio::time::sleep(Duration::from_millis(1));
    let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        futures::executor::block_on(sleep);
    }));
    let payload = polled.expect_err("tokio's sleep needs a runtime");
    let message = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or_default();
    assert!(message.contains("there is no reactor running"), "{message}");
}
