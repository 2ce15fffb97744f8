//! The textbook cases: concurrent histories that are linearizable, and the classic anomalies
//! that are not (stale read, lost update, queue out of order).

use crashtest_check::{
    History, KvMap, KvOp, KvOutput, Queue, QueueOp, QueueOutput, Register, RegisterOp,
    RegisterOutput,
};

type RegisterHistory = History<RegisterOp<u8>, RegisterOutput<u8>>;

/// Runs an operation that overlaps nothing.
fn alone<I, O>(history: &History<I, O>, client: u64, input: I, output: O) {
    let op = history.invoke(client, input);
    history.ok(op, output);
}

#[test]
fn register_reads_concurrent_with_a_write_may_see_either_value() {
    let history = RegisterHistory::new();
    let write = history.invoke(0, RegisterOp::Write(1));
    let first = history.invoke(1, RegisterOp::Read);
    let second = history.invoke(2, RegisterOp::Read);
    history.ok(first, RegisterOutput::Value(1));
    history.ok(second, RegisterOutput::Value(0));
    history.ok(write, RegisterOutput::Written);
    // first saw the write and second did not, yet both overlap it: write between them.
    assert!(history.check(&Register::new(0)).is_ok());
}

#[test]
fn register_stale_read_after_a_completed_write_is_rejected() {
    let history = RegisterHistory::new();
    alone(&history, 0, RegisterOp::Write(1), RegisterOutput::Written);
    alone(&history, 1, RegisterOp::Read, RegisterOutput::Value(0));
    assert!(history.check(&Register::new(0)).is_err());
}

#[test]
fn register_reads_that_go_back_in_time_are_rejected() {
    let history = RegisterHistory::new();
    let write = history.invoke(0, RegisterOp::Write(1));
    alone(&history, 1, RegisterOp::Read, RegisterOutput::Value(1));
    // The write has not returned, but a read already saw it: it took effect.
    alone(&history, 2, RegisterOp::Read, RegisterOutput::Value(0));
    history.ok(write, RegisterOutput::Written);
    assert!(history.check(&Register::new(0)).is_err());
}

#[test]
fn register_lost_update_two_swaps_from_the_same_value_is_rejected() {
    let history = RegisterHistory::new();
    let a = history.invoke(
        0,
        RegisterOp::CompareAndSet {
            expected: 0,
            new: 1,
        },
    );
    let b = history.invoke(
        1,
        RegisterOp::CompareAndSet {
            expected: 0,
            new: 2,
        },
    );
    history.ok(a, RegisterOutput::Swapped(true));
    history.ok(b, RegisterOutput::Swapped(true));
    assert!(history.check(&Register::new(0)).is_err());
}

#[test]
fn register_swaps_where_one_loses_are_accepted() {
    let history = RegisterHistory::new();
    let a = history.invoke(
        0,
        RegisterOp::CompareAndSet {
            expected: 0,
            new: 1,
        },
    );
    let b = history.invoke(
        1,
        RegisterOp::CompareAndSet {
            expected: 0,
            new: 2,
        },
    );
    history.ok(b, RegisterOutput::Swapped(false));
    history.ok(a, RegisterOutput::Swapped(true));
    alone(&history, 2, RegisterOp::Read, RegisterOutput::Value(1));
    assert!(history.check(&Register::new(0)).is_ok());
}

#[test]
fn kv_histories_over_many_keys_are_checked_key_by_key() {
    let history = History::new();
    for key in 0..50u64 {
        let put = history.invoke(key, KvOp::Put(key, key * 10));
        let get = history.invoke(key + 100, KvOp::Get(key));
        history.ok(get, KvOutput::Value(None));
        history.ok(put, KvOutput::Done);
        alone(
            &history,
            key,
            KvOp::Get(key),
            KvOutput::Value(Some(key * 10)),
        );
        alone(&history, key, KvOp::Delete(key), KvOutput::Done);
    }
    assert!(history.check(&KvMap::new()).is_ok());
}

#[test]
fn kv_a_read_of_a_deleted_key_after_the_delete_returned_is_rejected() {
    let history = History::new();
    alone(&history, 0, KvOp::Put("a", 1), KvOutput::Done);
    alone(&history, 0, KvOp::Put("b", 2), KvOutput::Done);
    alone(&history, 1, KvOp::Delete("a"), KvOutput::Done);
    alone(&history, 2, KvOp::Get("b"), KvOutput::Value(Some(2)));
    alone(&history, 2, KvOp::Get("a"), KvOutput::Value(Some(1)));
    let violation = history.check(&KvMap::new()).unwrap_err();
    assert_eq!(violation.partition(), "\"a\"");
    assert_eq!(violation.failing_partitions(), 1);
}

#[test]
fn kv_lost_update_is_rejected() {
    // Two clients read-modify-write the same key; both writes "win" but a later read sees one.
    let history = History::new();
    let put_a = history.invoke(0, KvOp::Put("n", 1));
    let put_b = history.invoke(1, KvOp::Put("n", 2));
    history.ok(put_a, KvOutput::Done);
    history.ok(put_b, KvOutput::Done);
    alone(&history, 2, KvOp::Get("n"), KvOutput::Value(Some(2)));
    alone(&history, 3, KvOp::Get("n"), KvOutput::Value(Some(1)));
    assert!(history.check(&KvMap::new()).is_err());
}

#[test]
fn queue_concurrent_enqueues_may_leave_in_either_order() {
    let history = History::new();
    let a = history.invoke(0, QueueOp::Enqueue('a'));
    let b = history.invoke(1, QueueOp::Enqueue('b'));
    history.ok(a, QueueOutput::Enqueued);
    history.ok(b, QueueOutput::Enqueued);
    alone(
        &history,
        2,
        QueueOp::Dequeue,
        QueueOutput::Dequeued(Some('b')),
    );
    alone(
        &history,
        2,
        QueueOp::Dequeue,
        QueueOutput::Dequeued(Some('a')),
    );
    alone(&history, 2, QueueOp::Dequeue, QueueOutput::Dequeued(None));
    assert!(history.check(&Queue::new()).is_ok());
}

#[test]
fn queue_out_of_order_dequeue_is_rejected() {
    let history = History::new();
    alone(&history, 0, QueueOp::Enqueue('a'), QueueOutput::Enqueued);
    alone(&history, 1, QueueOp::Enqueue('b'), QueueOutput::Enqueued);
    alone(
        &history,
        2,
        QueueOp::Dequeue,
        QueueOutput::Dequeued(Some('b')),
    );
    assert!(history.check(&Queue::new()).is_err());
}

#[test]
fn queue_an_item_dequeued_twice_is_rejected() {
    let history = History::new();
    alone(&history, 0, QueueOp::Enqueue('a'), QueueOutput::Enqueued);
    let first = history.invoke(1, QueueOp::Dequeue);
    let second = history.invoke(2, QueueOp::Dequeue);
    history.ok(first, QueueOutput::Dequeued(Some('a')));
    history.ok(second, QueueOutput::Dequeued(Some('a')));
    assert!(history.check(&Queue::new()).is_err());
}

#[test]
fn failed_operations_never_take_effect() {
    let history = RegisterHistory::new();
    let write = history.invoke(0, RegisterOp::Write(1));
    history.fail(write);
    alone(&history, 1, RegisterOp::Read, RegisterOutput::Value(1));
    assert!(history.check(&Register::new(0)).is_err());
}
