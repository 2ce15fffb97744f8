//! Operations whose client never learned the outcome: they may take effect at any point after
//! their invocation, or never, and many of them must not make the search explode.

use std::time::Duration;

use crashtest_check::{History, KvMap, KvOp, KvOutput, Register, RegisterOp, RegisterOutput};

type RegisterHistory = History<RegisterOp<u32>, RegisterOutput<u32>>;

fn alone<I, O>(history: &History<I, O>, client: u64, input: I, output: O) {
    let op = history.invoke(client, input);
    history.ok(op, output);
}

#[test]
fn an_unknown_write_may_have_taken_effect() {
    let history = RegisterHistory::new();
    let write = history.invoke(0, RegisterOp::Write(1));
    history.unknown(write);
    alone(&history, 1, RegisterOp::Read, RegisterOutput::Value(1));
    assert!(history.check(&Register::new(0)).is_ok());
}

#[test]
fn an_unknown_write_may_never_have_taken_effect() {
    let history = RegisterHistory::new();
    let write = history.invoke(0, RegisterOp::Write(1));
    history.unknown(write);
    alone(&history, 1, RegisterOp::Read, RegisterOutput::Value(0));
    alone(&history, 1, RegisterOp::Read, RegisterOutput::Value(0));
    assert!(history.check(&Register::new(0)).is_ok());
}

#[test]
fn an_unknown_write_may_take_effect_long_after_its_client_gave_up() {
    let history = RegisterHistory::new();
    let write = history.invoke(0, RegisterOp::Write(1));
    history.unknown(write);
    alone(&history, 1, RegisterOp::Read, RegisterOutput::Value(0));
    alone(&history, 1, RegisterOp::Read, RegisterOutput::Value(1));
    assert!(history.check(&Register::new(0)).is_ok());
}

#[test]
fn an_unknown_write_cannot_be_seen_before_it_was_invoked() {
    let history = RegisterHistory::new();
    alone(&history, 1, RegisterOp::Read, RegisterOutput::Value(1));
    let write = history.invoke(0, RegisterOp::Write(1));
    history.unknown(write);
    assert!(history.check(&Register::new(0)).is_err());
}

#[test]
fn an_unknown_write_takes_effect_once_and_stays() {
    let history = RegisterHistory::new();
    let write = history.invoke(0, RegisterOp::Write(1));
    history.unknown(write);
    alone(&history, 1, RegisterOp::Read, RegisterOutput::Value(1));
    alone(&history, 1, RegisterOp::Read, RegisterOutput::Value(0));
    assert!(history.check(&Register::new(0)).is_err());
}

#[test]
fn a_pending_operation_counts_as_unknown() {
    let history = RegisterHistory::new();
    history.invoke(0, RegisterOp::Write(1)); // its client was killed
    alone(&history, 1, RegisterOp::Read, RegisterOutput::Value(1));
    assert!(history.check(&Register::new(0)).is_ok());
}

#[test]
fn an_unknown_compare_and_set_swaps_only_if_it_matched() {
    let history = RegisterHistory::new();
    let cas = history.invoke(
        0,
        RegisterOp::CompareAndSet {
            expected: 5,
            new: 6,
        },
    );
    history.unknown(cas);
    alone(&history, 1, RegisterOp::Read, RegisterOutput::Value(6));
    assert!(
        history.check(&Register::new(0)).is_err(),
        "the register never held 5"
    );
}

/// Hundreds of timed-out writes on one register, then reads: a naive search would try every
/// subset of the writes.
fn many_timeouts(last_read: u32) -> RegisterHistory {
    let history = RegisterHistory::new();
    let mut writes = Vec::new();
    for value in 1..=300 {
        writes.push(history.invoke(value as u64, RegisterOp::Write(value)));
    }
    for write in writes {
        history.unknown(write);
    }
    alone(&history, 0, RegisterOp::Read, RegisterOutput::Value(120));
    alone(&history, 0, RegisterOp::Read, RegisterOutput::Value(7));
    alone(
        &history,
        0,
        RegisterOp::Read,
        RegisterOutput::Value(last_read),
    );
    history
}

#[test]
fn many_unknown_writes_are_checked_quickly_both_ways() {
    #[allow(
        clippy::disallowed_methods,
        reason = "measures the checker's real running time"
    )]
    let start = std::time::Instant::now();
    assert!(many_timeouts(300).check(&Register::new(0)).is_ok());
    assert!(many_timeouts(1000).check(&Register::new(0)).is_err());
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "took {:?}",
        start.elapsed()
    );
}

#[test]
fn unknown_reads_never_matter() {
    let history = History::new();
    for client in 0..200 {
        let get = history.invoke(client, KvOp::<u8, u8>::Get(0));
        history.unknown(get);
    }
    alone(&history, 0, KvOp::Put(0, 1), KvOutput::Done);
    alone(&history, 0, KvOp::Get(0), KvOutput::Value(Some(1)));
    assert!(history.check(&KvMap::new()).is_ok());
}
