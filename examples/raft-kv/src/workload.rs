//! The linearizability workload: clients put, get and delete a few hot keys, and every
//! operation goes into a [`History`] for the checker.
//!
//! Every put writes a value no other put writes (the client's id and sequence number), so a
//! read names exactly the write it saw. Outcomes are recorded as the client knows them: `ok`
//! with the output, `fail` when no server took the command, `unknown` when it was sent and
//! never answered. After the fault phase each client reads every key once more, retrying until
//! a read succeeds: that is the liveness requirement, and the final reads pin the last writes.

use std::time::Duration;

use crashtest::check::{History, KvOp, KvOutput};
use crashtest::time::{self, Instant};

use crate::client::{CallError, Client};
use crate::kv::{Command, Output};

/// The keys the clients share.
pub const KEYS: u64 = 3;

/// The history of a run: map operations on `u64` keys and values.
pub type KvHistory = History<KvOp<u64, u64>, KvOutput<u64>>;

/// The store command for a map operation.
fn command(op: &KvOp<u64, u64>) -> Command {
    match op {
        KvOp::Get(key) => Command::Get(vec![*key]),
        KvOp::Put(key, value) => Command::Put(*key, *value),
        KvOp::Delete(key) => Command::Delete(*key),
        KvOp::CompareAndSet {
            key,
            expected,
            new: Some(new),
        } => Command::Cas {
            expect: vec![(*key, *expected)],
            set: vec![(*key, *new)],
        },
        KvOp::CompareAndSet { new: None, .. } => {
            unreachable!("the clients never compare-and-set a key to absent")
        }
    }
}

/// Runs `op` and records it; true if it completed with an answer.
async fn record(history: &KvHistory, client: &mut Client, id: u64, op: KvOp<u64, u64>) -> bool {
    let request = command(&op);
    let invoked = history.invoke(id, op);
    match client.call(&request).await {
        Ok(Output::Values(values)) => history.ok(invoked, KvOutput::Value(values[0])),
        Ok(Output::Done) => history.ok(invoked, KvOutput::Done),
        Ok(Output::Cas(swapped)) => history.ok(invoked, KvOutput::Swapped(swapped)),
        Err(CallError::Refused) => {
            history.fail(invoked);
            return false;
        }
        Err(CallError::Unknown) => {
            history.unknown(invoked);
            return false;
        }
    }
    true
}

/// Client `id`: random operations until `until`, then a final read of every key.
pub async fn client(id: u64, servers: Vec<String>, history: KvHistory, until: Instant) {
    let first = id as usize % servers.len();
    let mut client = Client::new(servers, first);
    let mut sequence = 0;
    while Instant::now() < until {
        sequence += 1;
        let (key, pick, think_ms) = crashtest::rand::rng().with(|rng| {
            (
                rng.index(KEYS as usize) as u64,
                rng.index(10),
                rng.range_inclusive(0, 20),
            )
        });
        let op = match pick {
            0..5 => KvOp::Get(key),
            5..9 => KvOp::Put(key, id * 1_000_000 + sequence),
            _ => KvOp::Delete(key),
        };
        record(&history, &mut client, id, op).await;
        time::sleep(Duration::from_millis(think_ms)).await;
    }
    for key in 0..KEYS {
        while !record(&history, &mut client, id, KvOp::Get(key)).await {
            time::sleep(Duration::from_millis(50)).await;
        }
    }
}
