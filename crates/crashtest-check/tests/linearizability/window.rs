//! The failure report: a smallest contiguous window of operations that no order explains.

use crashtest_check::{
    History, OpId, Queue, QueueOp, QueueOutput, Register, RegisterOp, RegisterOutput,
};

type RegisterHistory = History<RegisterOp<u8>, RegisterOutput<u8>>;

fn alone<I, O>(history: &History<I, O>, client: u64, input: I, output: O) -> OpId {
    let op = history.invoke(client, input);
    history.ok(op, output);
    op
}

fn ids(report: &crashtest_check::NonLinearizable) -> Vec<OpId> {
    report.window().iter().map(|op| op.id).collect()
}

/// Noise before and after a stale read: write 1, write 2, then a read of 1.
fn stale_read_amid_noise() -> (RegisterHistory, [OpId; 3]) {
    let history = RegisterHistory::new();
    alone(&history, 0, RegisterOp::Write(5), RegisterOutput::Written);
    alone(&history, 1, RegisterOp::Read, RegisterOutput::Value(5));
    let noise = history.invoke(2, RegisterOp::Write(9));
    history.ok(noise, RegisterOutput::Written);
    let write_one = alone(&history, 0, RegisterOp::Write(1), RegisterOutput::Written);
    let write_two = alone(&history, 0, RegisterOp::Write(2), RegisterOutput::Written);
    let stale = alone(&history, 1, RegisterOp::Read, RegisterOutput::Value(1));
    alone(&history, 2, RegisterOp::Write(3), RegisterOutput::Written);
    alone(&history, 1, RegisterOp::Read, RegisterOutput::Value(3));
    (history, [write_one, write_two, stale])
}

#[test]
fn the_window_is_exactly_the_operations_that_contradict_each_other() {
    let (history, culprits) = stale_read_amid_noise();
    let report = history.check(&Register::new(0)).unwrap_err();
    assert_eq!(ids(&report), culprits);
    assert!(report.window().iter().all(|op| op.returned.is_some()));
}

#[test]
fn the_window_is_minimal_neither_end_can_be_cut() {
    // Cutting an end of the window means: its first operation may or may not have taken effect
    // at any time (rather than vanishing, which would leave the read of 1 unexplained), or its
    // last return never came.
    let window = |first_known: bool, last_known: bool| {
        let history = RegisterHistory::new();
        let write_one = history.invoke(0, RegisterOp::Write(1));
        if first_known {
            history.ok(write_one, RegisterOutput::Written);
        } else {
            history.unknown(write_one);
        }
        alone(&history, 0, RegisterOp::Write(2), RegisterOutput::Written);
        let stale = history.invoke(1, RegisterOp::Read);
        if last_known {
            history.ok(stale, RegisterOutput::Value(1));
        }
        history.check(&Register::new(0)).is_ok()
    };
    assert!(!window(true, true));
    assert!(window(false, true));
    assert!(window(true, false));
}

#[test]
fn operations_overlapping_the_window_stay_in_it_and_late_returns_are_cut() {
    let history = RegisterHistory::new();
    alone(&history, 0, RegisterOp::Write(1), RegisterOutput::Written);
    let slow_read = history.invoke(2, RegisterOp::Read); // returns after the window
    let stale = alone(&history, 1, RegisterOp::Read, RegisterOutput::Value(0));
    history.ok(slow_read, RegisterOutput::Value(1));
    let report = history.check(&Register::new(0)).unwrap_err();
    let window = report.window();
    assert_eq!(window.len(), 3);
    assert_eq!(window[1].id, slow_read);
    assert_eq!(
        window[1].returned, None,
        "it returned after the window closed"
    );
    assert_eq!(window[1].operation, "Read -> ?");
    assert_eq!(window[2].id, stale);
}

#[test]
fn the_report_shows_clients_operations_and_event_positions() {
    let (history, _) = stale_read_amid_noise();
    let text = history.check(&Register::new(0)).unwrap_err().to_string();
    assert!(text.contains("no order of these 3 operations"), "{text}");
    assert!(text.contains("op 3  client 0  invoked @6"), "{text}");
    assert!(text.contains("Write(1) -> Written"), "{text}");
    assert!(text.contains("client 1  invoked @10"), "{text}");
    assert!(text.contains("Read -> Value(1)"), "{text}");
    assert!(text.contains("the 3 earlier operations"), "{text}");
    assert_eq!(
        format!("{:?}", history.check(&Register::new(0)).unwrap_err()),
        text
    );
}

#[test]
fn a_queue_out_of_order_shows_both_enqueues_and_the_dequeue() {
    let history = History::new();
    alone(&history, 0, QueueOp::Enqueue(7), QueueOutput::Enqueued);
    let a = alone(&history, 0, QueueOp::Enqueue(1), QueueOutput::Enqueued);
    let b = alone(&history, 1, QueueOp::Enqueue(2), QueueOutput::Enqueued);
    let wrong = alone(
        &history,
        2,
        QueueOp::Dequeue,
        QueueOutput::Dequeued(Some(2)),
    );
    let report = history.check(&Queue::new()).unwrap_err();
    assert_eq!(ids(&report), [a, b, wrong]);
}

#[test]
fn an_earlier_mutation_that_could_explain_the_window_is_kept_in_it() {
    let history = History::new();
    alone(&history, 0, QueueOp::Enqueue(7), QueueOutput::Enqueued);
    let took_seven = alone(
        &history,
        0,
        QueueOp::Dequeue,
        QueueOutput::Dequeued(Some(7)),
    );
    let a = alone(&history, 0, QueueOp::Enqueue(1), QueueOutput::Enqueued);
    let b = alone(&history, 1, QueueOp::Enqueue(2), QueueOutput::Enqueued);
    let wrong = alone(
        &history,
        2,
        QueueOp::Dequeue,
        QueueOutput::Dequeued(Some(2)),
    );
    let report = history.check(&Queue::new()).unwrap_err();
    // Taken as possibly happening at any time, the first dequeue could have taken item 1 and
    // explained the last one; the window keeps it to show that it took 7.
    assert_eq!(ids(&report), [took_seven, a, b, wrong]);
}

#[test]
fn the_headline_names_a_failing_key_group_and_omits_the_single_group_of_an_unsplit_model() {
    let (history, _) = stale_read_amid_noise();
    let headline = history.check(&Register::new(0)).unwrap_err().to_string();
    let headline = headline.lines().next().unwrap().to_owned();
    assert_eq!(headline, "history is not linearizable");

    let map = History::new();
    for key in ["a", "b", "c"] {
        let get = map.invoke(0, crashtest_check::KvOp::<_, u8>::Get(key));
        let seen = if key == "b" { None } else { Some(1) };
        map.ok(get, crashtest_check::KvOutput::Value(seen));
    }
    let report = map.check(&crashtest_check::KvMap::new()).unwrap_err();
    let headline = report.to_string().lines().next().unwrap().to_owned();
    assert_eq!(
        headline,
        "history is not linearizable: key group \"a\" (2 of 3 key groups fail)"
    );
}
