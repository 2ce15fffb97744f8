//! Time: sleeps, resets, intervals (every missed-tick behaviour) and timeouts.

macro_rules! sleep_order {
    ($tokio:ident) => {
        async move {
            use std::sync::{Arc, Mutex};
            use std::time::Duration;
            use $tokio as tokio;
            let start = tokio::time::Instant::now().into_std();
            let seen = Arc::new(Mutex::new(Vec::new()));
            let mut tasks = Vec::new();
            for (label, ms) in [("c", 30), ("a", 10), ("d", 40), ("b", 20), ("zero", 0)] {
                let seen = seen.clone();
                tasks.push(tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    let at = $crate::harness::millis(start, tokio::time::Instant::now().into_std());
                    seen.lock().unwrap().push((label, at));
                }));
            }
            for task in tasks {
                task.await.unwrap();
            }
            let seen = seen.lock().unwrap().clone();
            seen
        }
    };
}

#[test]
fn sleeps_wake_in_deadline_order_at_their_deadlines() {
    conform!(sleep_order);
}

macro_rules! sleep_reset {
    ($tokio:ident) => {
        async move {
            use std::time::Duration;
            use $tokio as tokio;
            let start = tokio::time::Instant::now();
            let at = |now: tokio::time::Instant| {
                $crate::harness::millis(start.into_std(), now.into_std())
            };
            let mut seen = Vec::new();
            let sleep = tokio::time::sleep(Duration::from_millis(100));
            tokio::pin!(sleep);
            seen.push(("deadline", at(sleep.deadline())));
            seen.push(("elapsed before", u64::from(sleep.is_elapsed())));
            sleep.as_mut().reset(start + Duration::from_millis(30));
            seen.push(("moved deadline", at(sleep.deadline())));
            (&mut sleep).await;
            seen.push(("woke", at(tokio::time::Instant::now())));
            seen.push(("elapsed after", u64::from(sleep.is_elapsed())));
            sleep.as_mut().reset(start + Duration::from_millis(50));
            (&mut sleep).await;
            seen.push(("woke again", at(tokio::time::Instant::now())));
            tokio::time::sleep_until(start).await;
            seen.push(("past deadline", at(tokio::time::Instant::now())));
            seen
        }
    };
}

#[test]
fn a_reset_sleep_wakes_at_its_new_deadline_and_can_be_awaited_again() {
    conform!(sleep_reset);
}

macro_rules! missed_ticks {
    ($tokio:ident, $behavior:ident, $late_ms:expr) => {
        async move {
            use std::time::Duration;
            use $tokio as tokio;
            let start = tokio::time::Instant::now();
            let at = |now: tokio::time::Instant| {
                $crate::harness::millis(start.into_std(), now.into_std())
            };
            let mut interval = tokio::time::interval(Duration::from_millis(10));
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::$behavior);
            let mut ticks = Vec::new();
            let due = interval.tick().await;
            ticks.push((at(due), at(tokio::time::Instant::now())));
            tokio::time::sleep(Duration::from_millis($late_ms)).await;
            for _ in 0..5 {
                let due = interval.tick().await;
                ticks.push((at(due), at(tokio::time::Instant::now())));
            }
            ticks
        }
    };
}

macro_rules! burst_late {
    ($tokio:ident) => {
        missed_ticks!($tokio, Burst, 35)
    };
}
macro_rules! delay_late {
    ($tokio:ident) => {
        missed_ticks!($tokio, Delay, 35)
    };
}
macro_rules! skip_late {
    ($tokio:ident) => {
        missed_ticks!($tokio, Skip, 37)
    };
}
macro_rules! delay_barely_late {
    ($tokio:ident) => {
        missed_ticks!($tokio, Delay, 14)
    };
}

#[test]
fn a_bursting_interval_catches_up_on_missed_ticks() {
    conform!(burst_late);
}

#[test]
fn a_delaying_interval_restarts_its_schedule_after_a_missed_tick() {
    conform!(delay_late);
}

#[test]
fn a_skipping_interval_resumes_on_its_original_schedule() {
    conform!(skip_late);
}

#[test]
fn a_tick_less_than_five_milliseconds_late_is_not_missed() {
    conform!(delay_barely_late);
}

macro_rules! interval_resets {
    ($tokio:ident) => {
        async move {
            use std::time::Duration;
            use $tokio as tokio;
            let start = tokio::time::Instant::now();
            let at = |now: tokio::time::Instant| {
                $crate::harness::millis(start.into_std(), now.into_std())
            };
            let mut ticks = Vec::new();
            let mut interval = tokio::time::interval_at(
                start + Duration::from_millis(5),
                Duration::from_millis(10),
            );
            ticks.push(at(interval.tick().await));
            interval.reset();
            ticks.push(at(interval.tick().await));
            interval.reset_immediately();
            ticks.push(at(interval.tick().await));
            interval.reset_after(Duration::from_millis(3));
            ticks.push(at(interval.tick().await));
            interval.reset_at(start + Duration::from_millis(100));
            ticks.push(at(interval.tick().await));
            ticks.push(at(interval.tick().await));
            ticks.push(interval.period().as_millis() as u64);
            ticks
        }
    };
}

#[test]
fn interval_resets_move_the_next_tick() {
    conform!(interval_resets);
}

macro_rules! timeouts {
    ($tokio:ident) => {
        async move {
            use std::time::Duration;
            use $tokio as tokio;
            let start = tokio::time::Instant::now();
            let at = |now: tokio::time::Instant| {
                $crate::harness::millis(start.into_std(), now.into_std())
            };
            let mut seen = Vec::new();
            let quick = tokio::time::timeout(Duration::from_millis(20), async {
                tokio::time::sleep(Duration::from_millis(10)).await;
                "in time"
            });
            seen.push((
                format!("{:?}", quick.await),
                at(tokio::time::Instant::now()),
            ));
            let slow = tokio::time::timeout(
                Duration::from_millis(20),
                tokio::time::sleep(Duration::from_secs(1)),
            );
            let late = slow.await.unwrap_err();
            seen.push((late.to_string(), at(tokio::time::Instant::now())));
            let kind = std::io::Error::from(late).kind();
            seen.push((format!("{kind:?}"), 0));
            let ready = tokio::time::timeout(Duration::ZERO, async { 5 });
            seen.push((
                format!("{:?}", ready.await),
                at(tokio::time::Instant::now()),
            ));
            let past = tokio::time::timeout_at(start, std::future::pending::<()>());
            seen.push((
                format!("{:?}", past.await.is_err()),
                at(tokio::time::Instant::now()),
            ));
            let unwrapped = tokio::time::timeout(Duration::from_secs(1), async { 9 }).into_inner();
            seen.push((
                format!("{}", unwrapped.await),
                at(tokio::time::Instant::now()),
            ));
            seen
        }
    };
}

#[test]
fn timeouts_pass_ready_futures_and_cut_late_ones_at_the_deadline() {
    conform!(timeouts);
}
