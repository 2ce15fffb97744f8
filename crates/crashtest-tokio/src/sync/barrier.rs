//! `Barrier`: tokio's barrier, rebuilt on the stand-in's [`watch`](super::watch) channel.
//!
//! tokio's `Barrier` releases its waiters through a `watch` channel of tokio's own, whose
//! receivers wait on lists drawn from tokio's per-thread generator (see `watch`): the tasks
//! a barrier releases would wake in a different order on each run of one seed. This one
//! keeps tokio's rules (the `n`-th arrival is the leader and releases its generation, every
//! other arrival waits for that release, `n == 0` acts as `1`) and releases through the
//! stand-in's channel, which inside a simulation wakes its receivers in the order they came.
//! Outside a simulation the channel is tokio's, and so is the behaviour.
//!
//! Invariants: `arrived < n` between calls; a generation is released (the channel holds a
//! value `>= generation`) exactly when its `n`-th task arrived, after which `arrived` starts
//! again from zero for the next generation. A cancelled wait stays counted, as in tokio.

use std::fmt;
use std::sync::{Mutex, PoisonError};

use super::watch;

/// A barrier that `n` tasks reach before any goes on, like `tokio::sync::Barrier`.
///
/// ```
/// use crashtest_tokio as tokio;
/// use std::sync::Arc;
/// crashtest::Sim::new(1).run(async {
///     let barrier = Arc::new(tokio::sync::Barrier::new(3));
///     let mut set = tokio::task::JoinSet::new();
///     for _ in 0..3 {
///         let barrier = barrier.clone();
///         set.spawn(async move { barrier.wait().await.is_leader() });
///     }
///     let leaders = set.join_all().await.into_iter().filter(|&leader| leader).count();
///     assert_eq!(leaders, 1);
/// }).unwrap();
/// ```
pub struct Barrier {
    n: usize,
    state: Mutex<State>,
    /// The last generation released; every waiter of that generation or an earlier one
    /// may go on.
    released: watch::Receiver<usize>,
}

struct State {
    release: watch::Sender<usize>,
    arrived: usize,
    generation: usize,
}

impl Barrier {
    /// A barrier for `n` tasks (`0` acts as `1`), like tokio's `Barrier::new`.
    pub fn new(n: usize) -> Barrier {
        let (release, released) = watch::channel(0);
        Barrier {
            n: n.max(1),
            state: Mutex::new(State {
                release,
                arrived: 0,
                generation: 1,
            }),
            released,
        }
    }

    /// Waits until `n` tasks are waiting, like tokio's `Barrier::wait`; exactly one of each
    /// `n` (the last to arrive) is told it is the leader.
    pub async fn wait(&self) -> BarrierWaitResult {
        let generation = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.arrived += 1;
            assert!(
                state.arrived <= self.n,
                "more arrivals than the barrier holds"
            );
            if state.arrived == self.n {
                let generation = state.generation;
                state.release.send_replace(generation);
                state.arrived = 0;
                state.generation += 1;
                return BarrierWaitResult { leader: true };
            }
            state.generation
        };
        let mut released = self.released.clone();
        released
            .wait_for(|&last| last >= generation)
            .await
            .expect("the barrier holds its own sender");
        BarrierWaitResult { leader: false }
    }
}

impl fmt::Debug for Barrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("Barrier")
            .field("n", &self.n)
            .field("arrived", &state.arrived)
            .field("generation", &state.generation)
            .finish()
    }
}

/// What [`Barrier::wait`] tells a task, like `tokio::sync::BarrierWaitResult`.
#[derive(Clone, Debug)]
pub struct BarrierWaitResult {
    leader: bool,
}

impl BarrierWaitResult {
    /// True for the one task of each `n` that arrived last, like tokio's.
    pub fn is_leader(&self) -> bool {
        self.leader
    }
}
