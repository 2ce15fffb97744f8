//! Tasks: outputs, `abort`, detaching, `JoinSet` order and draining, cancellation by drop,
//! `spawn_blocking`, task ids and `LocalSet`.

/// Records, when dropped, that its task's future was dropped.
macro_rules! drop_flag {
    () => {{
        struct Flag(std::sync::Arc<std::sync::atomic::AtomicBool>);
        impl Drop for Flag {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let dropped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        (Flag(dropped.clone()), dropped)
    }};
}

macro_rules! abort {
    ($tokio:ident) => {
        async move {
            use std::sync::atomic::Ordering;
            use std::time::Duration;
            use $tokio as tokio;
            let start = tokio::time::Instant::now();
            let at = || {
                $crate::harness::millis(start.into_std(), tokio::time::Instant::now().into_std())
            };
            let mut seen = Vec::new();

            let (flag, dropped) = drop_flag!();
            let sleeper = tokio::spawn(async move {
                let _flag = flag;
                tokio::time::sleep(Duration::from_secs(1)).await;
                1
            });
            tokio::time::sleep(Duration::from_millis(10)).await;
            seen.push(format!("finished before abort: {}", sleeper.is_finished()));
            sleeper.abort();
            let error = sleeper.await.unwrap_err();
            seen.push(format!(
                "cancelled {} panic {} dropped {} at {}",
                error.is_cancelled(),
                error.is_panic(),
                dropped.load(Ordering::SeqCst),
                at()
            ));
            seen.push(format!("{}", error.to_string().ends_with("was cancelled")));
            seen.push(format!("{:?}", std::io::Error::from(error).kind()));

            let done = tokio::spawn(async { 2 });
            tokio::time::sleep(Duration::from_millis(1)).await;
            seen.push(format!("finished: {}", done.is_finished()));
            done.abort();
            seen.push(format!("aborted after completion: {:?}", done.await.ok()));

            let pending = tokio::spawn(std::future::pending::<()>());
            let remote = pending.abort_handle();
            seen.push(format!("same id: {}", remote.id() == pending.id()));
            remote.abort();
            seen.push(format!(
                "by abort handle: {}",
                pending.await.unwrap_err().is_cancelled()
            ));
            seen.push(format!("handle finished: {}", remote.is_finished()));
            seen
        }
    };
}

#[test]
fn abort_cancels_a_task_and_drops_its_future_but_not_a_finished_one() {
    conform!(abort);
}

macro_rules! detach {
    ($tokio:ident) => {
        async move {
            use std::sync::{Arc, Mutex};
            use std::time::Duration;
            use $tokio as tokio;
            let start = tokio::time::Instant::now();
            let seen = Arc::new(Mutex::new(Vec::new()));
            let log = seen.clone();
            drop(tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                let at = $crate::harness::millis(
                    start.into_std(),
                    tokio::time::Instant::now().into_std(),
                );
                log.lock()
                    .unwrap()
                    .push(format!("detached task ran at {at}"));
            }));
            let log = seen.clone();
            let cut = tokio::time::timeout(Duration::from_millis(10), async move {
                tokio::time::sleep(Duration::from_millis(30)).await;
                log.lock()
                    .unwrap()
                    .push("the timed-out future went on".to_string());
            });
            let timed_out = cut.await.is_err();
            seen.lock().unwrap().push(format!("timeout: {timed_out}"));
            tokio::time::sleep(Duration::from_millis(100)).await;
            let seen = seen.lock().unwrap().clone();
            seen
        }
    };
}

#[test]
fn a_dropped_handle_detaches_and_a_dropped_future_is_cancelled() {
    conform!(detach);
}

macro_rules! join_set {
    ($tokio:ident) => {
        async move {
            use std::time::Duration;
            use $tokio as tokio;
            let mut seen = Vec::new();
            let mut set = tokio::task::JoinSet::new();
            seen.push(format!(
                "empty: {:?}",
                set.join_next().await.map(|r| r.is_ok())
            ));
            for ms in [30u64, 10, 40, 20] {
                set.spawn(async move {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    ms
                });
            }
            seen.push(format!(
                "len {} try {:?}",
                set.len(),
                set.try_join_next().map(|r| r.is_ok())
            ));
            let mut order = Vec::new();
            while let Some(joined) = set.join_next().await {
                order.push(joined.unwrap());
            }
            seen.push(format!("finish order {order:?}, left {}", set.len()));

            let ids: Vec<_> = (0..3)
                .map(|i| {
                    set.spawn(async move {
                        tokio::time::sleep(Duration::from_millis(10 * (3 - i))).await;
                        i
                    })
                    .id()
                })
                .collect();
            let (id, first) = set.join_next_with_id().await.unwrap().unwrap();
            seen.push(format!(
                "first {first}, id of the third spawn: {}",
                id == ids[2]
            ));
            set.abort_all();
            let mut cancelled = 0;
            while let Some(joined) = set.join_next().await {
                cancelled += usize::from(joined.unwrap_err().is_cancelled());
            }
            seen.push(format!("cancelled {cancelled}"));

            let mut all = tokio::task::JoinSet::new();
            for ms in [20u64, 10] {
                all.spawn(async move {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    ms
                });
            }
            seen.push(format!("join_all {:?}", all.join_all().await));

            let mut shut = tokio::task::JoinSet::new();
            shut.spawn(std::future::pending::<()>());
            shut.shutdown().await;
            seen.push(format!("after shutdown {}", shut.len()));

            let (flag, dropped) = drop_flag!();
            let mut dropping = tokio::task::JoinSet::new();
            dropping.spawn(async move {
                let _flag = flag;
                std::future::pending::<()>().await
            });
            tokio::task::yield_now().await;
            drop(dropping);
            tokio::task::yield_now().await;
            seen.push(format!(
                "a dropped set's task dropped: {}",
                dropped.load(std::sync::atomic::Ordering::SeqCst)
            ));
            let blocking: tokio::task::JoinSet<u32> =
                (1..=2u32).map(|n| async move { n }).collect();
            seen.push(format!("collected {}", blocking.len()));
            seen
        }
    };
}

#[test]
fn a_join_set_joins_in_finishing_order_and_cancels_on_abort_shutdown_and_drop() {
    conform!(join_set);
}

macro_rules! odds_and_ends {
    ($tokio:ident) => {
        async move {
            use $tokio as tokio;
            let mut seen = Vec::new();
            let sum = tokio::task::spawn_blocking(|| (1..=10).sum::<u32>())
                .await
                .unwrap();
            seen.push(format!("spawn_blocking {sum}"));
            let handle = tokio::spawn(async { tokio::task::id() });
            let id = handle.id();
            seen.push(format!(
                "id inside is the handle's: {}",
                handle.await.unwrap() == id
            ));
            let in_task = tokio::spawn(async { tokio::task::try_id().is_some() })
                .await
                .unwrap();
            seen.push(format!("try_id in a task: {in_task}"));
            let on_handle = tokio::runtime::Handle::current()
                .spawn(async { 3 })
                .await
                .unwrap();
            seen.push(format!("handle spawn {on_handle}"));
            let local = tokio::task::LocalSet::new();
            let shared = std::rc::Rc::new(std::cell::Cell::new(0));
            let counter = shared.clone();
            local.spawn_local(async move {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                counter.set(counter.get() + 1);
            });
            let inner = local
                .run_until(async { tokio::task::spawn_local(async { 4 }).await.unwrap() })
                .await;
            seen.push(format!("run_until {inner}"));
            local.await;
            seen.push(format!("local set awaited its task: {}", shared.get()));
            seen
        }
    };
}

#[test]
fn spawn_blocking_ids_handles_and_local_sets_behave_as_on_tokio() {
    conform!(odds_and_ends);
}
