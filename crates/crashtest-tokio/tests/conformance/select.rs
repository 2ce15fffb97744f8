//! `select!`: preconditions, patterns that disable a branch, `else`, `biased;`, handlers
//! that break out of loops, and futures dropped before the handler runs. Only what tokio
//! defines is compared; which of two ready branches an unbiased select picks is the
//! simulation's choice (see the determinism tests).

macro_rules! select_rules {
    ($tokio:ident) => {
        async move {
            use $tokio as tokio;
            use std::time::Duration;
            let mut seen = Vec::new();
            let (tx, mut rx) = tokio::sync::mpsc::channel::<u32>(4);
            tx.send(1).await.unwrap();
            drop(tx);
            // A precondition disables its branch: the sleep wins though the channel is ready.
            let picked = tokio::select! {
                Some(v) = rx.recv(), if false => format!("channel {v}"),
                _ = tokio::time::sleep(Duration::from_millis(5)) => "sleep".to_string(),
            };
            seen.push(picked);
            // A `mut` binding in a pattern, and the futures are gone when the handler runs
            // (the handler borrows the receiver again).
            let picked = tokio::select! {
                Some(mut v) = rx.recv() => { v += 10; format!("{v} then {:?}", rx.try_recv().is_err()) }
                _ = tokio::time::sleep(Duration::from_secs(1)) => "timeout".to_string(),
            };
            seen.push(picked);
            // A value that does not match disables the branch; the other one goes on.
            let picked = tokio::select! {
                Some(v) = rx.recv() => format!("unexpected {v}"),
                _ = tokio::time::sleep(Duration::from_millis(3)) => "closed channel skipped".to_string(),
            };
            seen.push(picked);
            // Every branch disabled: `else`.
            let picked = tokio::select! {
                Some(v) = rx.recv() => format!("unexpected {v}"),
                Ok(v) = async { Err::<u32, ()>(()) } => format!("unexpected {v}"),
                else => "else".to_string(),
            };
            seen.push(picked);
            // `biased;` polls in order.
            let picked = tokio::select! {
                biased;
                v = async { 1 } => v,
                v = async { 2 } => v,
            };
            seen.push(format!("biased {picked}"));
            // Handlers may break and continue the caller's loop.
            let mut rounds = 0;
            loop {
                rounds += 1;
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(1)), if rounds < 3 => continue,
                    _ = async {} , if rounds >= 3 => break,
                }
            }
            seen.push(format!("rounds {rounds}"));
            seen
        }
    };
}

#[test]
fn select_follows_tokios_rules() {
    conform!(select_rules);
}
