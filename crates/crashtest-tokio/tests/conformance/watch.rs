//! `sync::watch`, which the stand-in wraps inside a simulation to wake receivers in a seeded
//! order: changes, versions, closing from either side, `wait_for` and `send_if_modified`
//! must be tokio's. Only observations separated in time are compared; which of several woken
//! receivers runs first is the simulation's choice (see the determinism tests).

macro_rules! watch_semantics {
    ($tokio:ident) => {
        async move {
            use std::time::Duration;
            use $tokio as tokio;
            let mut seen: Vec<String> = Vec::new();
            let (tx, mut rx) = tokio::sync::watch::channel(0u32);
            seen.push(format!("fresh {:?}", rx.has_changed()));
            // A waiter wakes at the send, and the value is marked seen.
            let sender = tx.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                sender.send(1).unwrap();
            });
            let start = tokio::time::Instant::now();
            rx.changed().await.unwrap();
            seen.push(format!(
                "changed to {} after {} ms, then {:?}",
                *rx.borrow(),
                start.elapsed().as_millis(),
                rx.has_changed()
            ));
            // An unmodified value wakes nobody; a modified one does.
            let sender = tx.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(2)).await;
                assert!(!sender.send_if_modified(|_| false));
                tokio::time::sleep(Duration::from_millis(2)).await;
                assert!(sender.send_if_modified(|v| {
                    *v += 1;
                    true
                }));
            });
            let start = tokio::time::Instant::now();
            rx.changed().await.unwrap();
            seen.push(format!("modified after {} ms", start.elapsed().as_millis()));
            // `wait_for` skips the values its predicate refuses.
            let sender = tx.clone();
            tokio::spawn(async move {
                for n in 3..8 {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    sender.send(n).unwrap();
                }
            });
            let got = *rx.wait_for(|v| *v >= 6).await.unwrap();
            seen.push(format!("waited for {got}, then {:?}", rx.has_changed()));
            // A subscriber has seen the current value; `mark_changed` undoes that.
            let mut late = tx.subscribe();
            seen.push(format!("subscriber {:?}", late.has_changed()));
            late.mark_changed();
            seen.push(format!("marked {:?}", late.has_changed()));
            tokio::time::sleep(Duration::from_millis(10)).await;
            // The last sender's drop: a value not yet seen still comes, then the error.
            tx.send(100).unwrap();
            let counts = (tx.sender_count(), tx.receiver_count());
            drop(tx);
            let closed = rx.is_closed();
            let last = rx.changed().await;
            let value = *rx.borrow();
            let after = rx.changed().await.is_err();
            seen.push(format!(
                "counts {counts:?}, closed {closed}: {last:?} {value} then {after}"
            ));
            // A waiter parked before the drop wakes to the error.
            let (tx, mut rx) = tokio::sync::watch::channel(());
            let waiter = tokio::spawn(async move { rx.changed().await.is_err() });
            tokio::time::sleep(Duration::from_millis(1)).await;
            drop(tx);
            seen.push(format!("parked waiter sees the close: {:?}", waiter.await));
            // The sender waits for the receivers to go.
            let (tx, rx) = tokio::sync::watch::channel(());
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(3)).await;
                drop(rx);
            });
            let start = tokio::time::Instant::now();
            tx.closed().await;
            seen.push(format!(
                "closed after {} ms, {}",
                start.elapsed().as_millis(),
                tx.is_closed()
            ));
            // A sender with no receiver yet keeps a replaced value.
            let tx = tokio::sync::watch::Sender::new(1u32);
            let old = tx.send_replace(2);
            seen.push(format!(
                "replaced {old} by {}, send fails: {}",
                *tx.borrow(),
                tx.send(3).is_err()
            ));
            seen
        }
    };
}

#[test]
fn watch_channels_behave_as_on_tokio() {
    conform!(watch_semantics);
}
