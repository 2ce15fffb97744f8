//! Bounded channels: `send_timeout` on a full channel, and the senders that permits and weak
//! senders hand back.

macro_rules! send_timeouts {
    ($tokio:ident) => {
        async move {
            use std::time::Duration;
            use tokio::sync::mpsc::error::SendTimeoutError;
            use $tokio as tokio;
            let start = tokio::time::Instant::now().into_std();
            let at = || $crate::harness::millis(start, tokio::time::Instant::now().into_std());
            let mut seen = Vec::new();
            let (tx, mut rx) = tokio::sync::mpsc::channel::<u32>(1);
            seen.push((
                format!("{:?}", tx.send_timeout(1, Duration::from_millis(50)).await),
                at(),
            ));
            // Full: gives up at its deadline and hands the value back.
            let refused = tx.send_timeout(2, Duration::from_millis(50)).await;
            seen.push((
                format!("{:?}", matches!(refused, Err(SendTimeoutError::Timeout(2)))),
                at(),
            ));
            // A slot frees 30 ms into a 100 ms wait: the send goes through then.
            let receiver = tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(30)).await;
                let first = rx.recv().await;
                (first, rx)
            });
            seen.push((
                format!("{:?}", tx.send_timeout(3, Duration::from_millis(100)).await),
                at(),
            ));
            let (first, mut rx) = receiver.await.unwrap();
            seen.push((format!("{first:?} {:?}", rx.recv().await), at()));
            // The receiver gone: closed at once, the value handed back.
            drop(rx);
            let closed = tx.send_timeout(4, Duration::from_millis(100)).await;
            seen.push((
                format!("{:?}", matches!(closed, Err(SendTimeoutError::Closed(4)))),
                at(),
            ));
            seen
        }
    };
}

#[test]
fn send_timeout_gives_up_at_its_deadline_and_sends_once_a_slot_frees() {
    conform!(send_timeouts);
}

macro_rules! handed_back_senders {
    ($tokio:ident) => {
        async move {
            use $tokio as tokio;
            let (tx, mut rx) = tokio::sync::mpsc::channel::<u32>(2);
            let weak = tx.downgrade();
            let permit = tx.clone().reserve_owned().await.unwrap();
            let same = permit.same_channel_as_sender(&tx);
            let tx2 = permit.send(7);
            let full = tx2.clone().try_reserve_owned().unwrap().release();
            let upgraded = weak.upgrade().expect("senders remain");
            let counts = (
                upgraded.strong_count(),
                upgraded.weak_count(),
                upgraded.same_channel(&full),
            );
            drop((tx, tx2, full, upgraded));
            let after = weak.upgrade().is_none();
            (same, counts, rx.recv().await, rx.recv().await, after)
        }
    };
}

#[test]
fn permits_and_weak_senders_hand_back_working_senders() {
    conform!(handed_back_senders);
}

macro_rules! receiver_calls {
    ($tokio:ident) => {
        async move {
            use $tokio as tokio;
            let (tx, mut rx) = tokio::sync::mpsc::channel::<u32>(3);
            let mut seen = vec![format!("{:?}", rx.try_recv())];
            for n in 0..3 {
                tx.send(n).await.unwrap();
            }
            seen.push(format!(
                "len {} empty {} capacity {} max {} senders {}/{}",
                rx.len(),
                rx.is_empty(),
                rx.capacity(),
                rx.max_capacity(),
                rx.sender_strong_count(),
                rx.sender_weak_count()
            ));
            let mut many = Vec::new();
            let moved = rx.recv_many(&mut many, 2).await;
            seen.push(format!("{moved} {many:?}"));
            let polled = std::future::poll_fn(|cx| rx.poll_recv(cx)).await;
            seen.push(format!("{polled:?}"));
            rx.close();
            seen.push(format!(
                "closed {} {:?}",
                rx.is_closed(),
                tx.try_send(9).is_err()
            ));
            seen.push(format!("{:?}", rx.recv().await));
            seen
        }
    };
}

#[test]
fn the_receivers_calls_answer_as_tokios() {
    conform!(receiver_calls);
}

macro_rules! unbounded_receiver_calls {
    ($tokio:ident) => {
        async move {
            use $tokio as tokio;
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<u32>();
            let mut seen = vec![format!("{:?}", rx.try_recv())];
            for n in 0..3 {
                tx.send(n).unwrap();
            }
            seen.push(format!("len {} empty {}", rx.len(), rx.is_empty()));
            let mut many = Vec::new();
            let moved = rx.recv_many(&mut many, 2).await;
            seen.push(format!("{moved} {many:?}"));
            drop(tx);
            seen.push(format!("{:?} {:?}", rx.recv().await, rx.recv().await));
            seen.push(format!("closed {}", rx.is_closed()));
            seen
        }
    };
}

#[test]
fn the_unbounded_receivers_calls_answer_as_tokios() {
    conform!(unbounded_receiver_calls);
}
