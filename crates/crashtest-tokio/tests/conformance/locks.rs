//! The locks and the oneshot and broadcast channels, whose blocking calls the stand-in
//! switches: their other calls answer as tokio's.

macro_rules! mutex_calls {
    ($tokio:ident) => {
        async move {
            use std::sync::Arc;
            use $tokio as tokio;
            let mutex = Arc::new(tokio::sync::Mutex::new(vec![1]));
            let mut seen = vec![format!("{mutex:?}")];
            let held = mutex.clone().lock_owned().await;
            seen.push(format!(
                "{mutex:?} {} {}",
                mutex.try_lock().is_err(),
                mutex.clone().try_lock_owned().is_err()
            ));
            // A waiter gets the lock once the holder lets go, in the order waiters came.
            let waiter = {
                let mutex = mutex.clone();
                tokio::spawn(async move { mutex.lock().await.push(2) })
            };
            tokio::task::yield_now().await;
            drop(held);
            waiter.await.unwrap();
            mutex.try_lock().unwrap().push(3);
            let mut owned = Arc::try_unwrap(mutex).unwrap();
            owned.get_mut().push(4);
            let defaulted = tokio::sync::Mutex::<u8>::default().into_inner();
            let from = tokio::sync::Mutex::from(5u8).into_inner();
            seen.push(format!("{:?} {defaulted} {from}", owned.into_inner()));
            seen
        }
    };
}

#[test]
fn a_mutex_answers_as_tokios() {
    conform!(mutex_calls);
}

macro_rules! rwlock_calls {
    ($tokio:ident) => {
        async move {
            use std::sync::Arc;
            use $tokio as tokio;
            let lock = Arc::new(tokio::sync::RwLock::with_max_readers(1, 2));
            let mut seen = vec![format!("{lock:?}")];
            let first = lock.clone().read_owned().await;
            let second = lock.read().await;
            seen.push(format!(
                "{} {} {}",
                lock.try_read().is_err(),
                lock.try_write().is_err(),
                lock.clone().try_write_owned().is_err()
            ));
            let writer = {
                let lock = lock.clone();
                tokio::spawn(async move { *lock.write().await += 10 })
            };
            tokio::task::yield_now().await;
            drop((first, second));
            writer.await.unwrap();
            *lock.clone().write_owned().await += 100;
            let value = *lock.clone().try_read_owned().unwrap();
            seen.push(format!("{value} {lock:?}"));
            let mut owned = Arc::try_unwrap(lock).unwrap();
            *owned.get_mut() += 1000;
            seen.push(format!("{}", owned.into_inner()));
            seen
        }
    };
}

#[test]
fn a_rwlock_answers_as_tokios() {
    conform!(rwlock_calls);
}

macro_rules! oneshot_calls {
    ($tokio:ident) => {
        async move {
            use $tokio as tokio;
            let (tx, mut rx) = tokio::sync::oneshot::channel::<u32>();
            let mut seen = vec![format!(
                "{:?} {} {}",
                rx.try_recv(),
                rx.is_empty(),
                rx.is_terminated()
            )];
            tokio::spawn(async move { tx.send(7).unwrap() });
            seen.push(format!("{:?} {}", (&mut rx).await, rx.is_terminated()));
            let (tx, mut rx) = tokio::sync::oneshot::channel::<u32>();
            rx.close();
            seen.push(format!("{:?} {:?}", tx.send(8), rx.await));
            let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
            drop(tx);
            seen.push(format!("{:?}", rx.await));
            seen
        }
    };
}

#[test]
fn a_oneshot_channel_answers_as_tokios() {
    conform!(oneshot_calls);
}

macro_rules! broadcast_calls {
    ($tokio:ident) => {
        async move {
            use $tokio as tokio;
            let (tx, mut first) = tokio::sync::broadcast::channel::<u32>(2);
            let mut second = tx.subscribe();
            let weak = tx.downgrade();
            let mut seen = vec![format!(
                "{:?} {} {} {}",
                first.try_recv(),
                tx.receiver_count(),
                tx.strong_count(),
                tx.weak_count()
            )];
            for n in 0..3 {
                seen.push(format!("{:?}", tx.send(n)));
            }
            seen.push(format!(
                "{} {} {} {}",
                tx.len(),
                first.len(),
                first.same_channel(&second),
                tx.same_channel(&weak.upgrade().unwrap())
            ));
            seen.push(format!("{:?} {:?}", first.recv().await, first.recv().await));
            let mut third = second.resubscribe();
            seen.push(format!("{:?} {:?}", second.try_recv(), third.try_recv()));
            drop(tx);
            seen.push(format!(
                "{:?} {} {} {}",
                second.recv().await,
                first.is_closed(),
                first.sender_strong_count(),
                weak.upgrade().is_none()
            ));
            let lone = tokio::sync::broadcast::Sender::<u32>::new(1);
            seen.push(format!("{:?} {}", lone.send(9), lone.is_empty()));
            seen
        }
    };
}

#[test]
fn a_broadcast_channel_answers_as_tokios() {
    conform!(broadcast_calls);
}
