//! FoundationDB's Cycle workload on the store: a ring of keys that transactions permute, and
//! a check that it is still one ring.
//!
//! Key `k` of the ring holds the key after it, so the keys form one cycle of length [`RING`].
//! A transaction reads three links `a -> b -> c -> d` and swaps the middle two, `a -> c -> b
//! -> d`, as one [`Command::Cas`] that applies only if the three links still hold: any
//! number of such swaps, applied atomically, leave one cycle. A store that loses a committed
//! transaction, applies one twice, or lets replicas diverge breaks the ring; the check walks
//! it from a consistent read of every key (FoundationDB's `Cycle.cpp`: "Cycle got shorter",
//! "Cycle got longer", invalid values). Stale reads alone cannot break it, since the CAS
//! checks at apply time what the reads saw.

use std::time::Duration;

use crashtest::time::{self, Instant};

use crate::client::Client;
use crate::kv::{Command, Output};

/// Keys in the ring.
pub const RING: u64 = 8;
/// The ring's first key (well away from the linearizability workload's keys).
pub const FIRST: u64 = 1000;

/// The ring's keys.
fn keys() -> Vec<u64> {
    (FIRST..FIRST + RING).collect()
}

/// Runs `command` until it gets an answer.
async fn until_answered(client: &mut Client, command: &Command) -> Output {
    loop {
        if let Ok(output) = client.call(command).await {
            return output;
        }
        time::sleep(Duration::from_millis(50)).await;
    }
}

/// Loads the ring `FIRST -> FIRST + 1 -> ... -> FIRST`, if it is not there yet.
pub async fn load(client: &mut Client) {
    let set = keys()
        .into_iter()
        .map(|key| (key, FIRST + (key - FIRST + 1) % RING))
        .collect();
    let expect = keys().into_iter().map(|key| (key, None)).collect();
    // `false` means an earlier, unanswered try already loaded it.
    until_answered(client, &Command::Cas { expect, set }).await;
}

/// Reads the key after `key`; `None` if the read got no answer.
async fn next(client: &mut Client, key: u64) -> Option<u64> {
    match client.call(&Command::Get(vec![key])).await {
        Ok(Output::Values(values)) => {
            Some(values[0].unwrap_or_else(|| panic!("cycle: key {key} is missing")))
        }
        Ok(other) => panic!("cycle: a read answered {other:?}"),
        Err(_) => None,
    }
}

/// The three links after `a`: `(b, c, d)` for `a -> b -> c -> d`.
async fn links(client: &mut Client, a: u64) -> Option<(u64, u64, u64)> {
    let b = next(client, a).await?;
    let c = next(client, b).await?;
    let d = next(client, c).await?;
    Some((b, c, d))
}

/// One transaction: read `a -> b -> c -> d` from a random `a`, swap `b` and `c`.
async fn swap(client: &mut Client) {
    let a = FIRST + crashtest::rand::rng().with(|rng| rng.index(RING as usize)) as u64;
    let Some((b, c, d)) = links(client, a).await else {
        return;
    };
    let expect = vec![(a, Some(b)), (b, Some(c)), (c, Some(d))];
    let set = vec![(a, c), (c, b), (b, d)];
    // Whatever the outcome, the ring stays whole: the swap applies atomically or not at all.
    let _ = client.call(&Command::Cas { expect, set }).await;
}

/// A Cycle client: transactions until `until`.
pub async fn client(id: usize, servers: Vec<String>, until: Instant) {
    let first = id % servers.len();
    let mut client = Client::new(servers, first);
    while Instant::now() < until {
        swap(&mut client).await;
        let think = crashtest::rand::rng().with(|rng| rng.range_inclusive(0, 20));
        time::sleep(Duration::from_millis(think)).await;
    }
}

/// Reads every key of the ring at one point of the log, retrying until answered.
pub async fn read_ring(client: &mut Client) -> Vec<Option<u64>> {
    match until_answered(client, &Command::Get(keys())).await {
        Output::Values(values) => values,
        other => panic!("cycle: a read answered {other:?}"),
    }
}

/// Checks that `ring` (the values of the ring's keys, in key order) is one cycle through
/// every key.
///
/// # Errors
///
/// What is wrong, in FoundationDB's words.
///
/// ```
/// use raft_kv::cycle::{check, FIRST};
///
/// let whole: Vec<_> = (0..8).map(|i| Some(FIRST + (i + 1) % 8)).collect();
/// assert!(check(&whole).is_ok());
/// let mut short = whole.clone();
/// short[3] = Some(FIRST);
/// assert!(check(&short).unwrap_err().contains("shorter"));
/// ```
pub fn check(ring: &[Option<u64>]) -> Result<(), String> {
    assert_eq!(ring.len() as u64, RING, "the ring has {RING} keys");
    let mut at = FIRST;
    for step in 1..=RING {
        let value = ring[(at - FIRST) as usize].ok_or(format!("key {at} is missing"))?;
        if !(FIRST..FIRST + RING).contains(&value) {
            return Err(format!("key {at} holds an invalid value {value}"));
        }
        at = value;
        if at == FIRST && step < RING {
            return Err(format!(
                "cycle got shorter: back at the start after {step} steps"
            ));
        }
    }
    if at != FIRST {
        return Err(format!(
            "cycle got longer: not back at the start after {RING} steps"
        ));
    }
    Ok(())
}
