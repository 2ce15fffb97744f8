//! Exhaustive mode: every crash point and crash outcome of a small scope, enumerated.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crashtest_core::{node, time};
use crashtest_fs::File;
use crashtest_fs::exhaustive::{Exploration, Explorer, crash_scope};
use std::io::SeekFrom;
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

const SECTOR: u64 = 512;

/// What recovery saw in one case: how many writes the first boot completed before its
/// crash (4 when it also synced), and which of the three sectors hold their new bytes.
type Seen = Arc<Mutex<BTreeSet<(u32, [bool; 3])>>>;

/// Boot 1 prepares a file of three zeroed sectors (synced, outside the scope), then, inside
/// the scope, writes each sector and syncs once. Boot 2 records what survived.
fn three_writes(tears: bool) -> (Exploration, Seen) {
    let seen: Seen = Arc::default();
    let out = seen.clone();
    let exploration = Explorer::new().tears(tears).run(move || {
        let seen = out.clone();
        async move {
            let restarted = Rc::new(Cell::new(false));
            let progress = Rc::new(Cell::new(0u32));
            let (r, p) = (restarted.clone(), progress.clone());
            let db = node::create("db", move || {
                let (restarted, progress, seen) = (r.clone(), p.clone(), seen.clone());
                async move {
                    if restarted.get() {
                        let data = crashtest_fs::read("/data").await.unwrap();
                        let mut sectors = [false; 3];
                        for (i, new) in sectors.iter_mut().enumerate() {
                            let sector = &data[i * SECTOR as usize..][..SECTOR as usize];
                            *new = sector.iter().all(|&b| b == i as u8 + 1);
                        }
                        seen.lock().unwrap().insert((progress.get(), sectors));
                        return;
                    }
                    let mut file = File::create_new("/data").await.unwrap();
                    file.set_len(3 * SECTOR).await.unwrap();
                    file.sync_all().await.unwrap();
                    crashtest_fs::sync_dir("/").await.unwrap();
                    let _scope = crash_scope();
                    for i in 0..3u8 {
                        file.write_all(&[i + 1; SECTOR as usize]).await.unwrap();
                        progress.set(u32::from(i) + 1);
                    }
                    file.sync_data().await.unwrap();
                    progress.set(4);
                }
            });
            time::sleep(Duration::from_secs(1)).await;
            restarted.set(true);
            db.restart();
            time::sleep(Duration::from_secs(1)).await;
        }
    });
    (exploration, seen)
}

#[test]
fn every_crash_point_of_a_three_write_sequence_is_enumerated() {
    let (exploration, seen) = three_writes(false);
    assert!(exploration.exhausted, "{:?}", exploration.failure);
    // Crash before write 1, 2, 3 or the sync (0, 1, 2 or 3 writes pending, each kept or
    // dropped), or no crash (all synced): 1 + 2 + 4 + 8 + 1 cases.
    assert_eq!(exploration.cases, 16);
    let seen = seen.lock().unwrap();
    let points: BTreeSet<u32> = seen.iter().map(|&(progress, _)| progress).collect();
    assert_eq!(points, BTreeSet::from([0, 1, 2, 3, 4]));
    let states: BTreeSet<[bool; 3]> = seen.iter().map(|&(_, sectors)| sectors).collect();
    assert_eq!(
        states.len(),
        8,
        "every subset of the writes survives in some case"
    );
    assert!(
        seen.contains(&(4, [true; 3])),
        "a completed sync keeps every write"
    );
    assert_eq!(
        seen.iter().filter(|&&(progress, _)| progress == 4).count(),
        1
    );
}

#[test]
fn with_tears_every_sector_outcome_is_enumerated_too() {
    let (exploration, seen) = three_writes(true);
    assert!(exploration.exhausted, "{:?}", exploration.failure);
    // Seven outcomes per pending sector: 1 + 7 + 49 + 343 + 1 cases.
    assert_eq!(exploration.cases, 401);
    assert_eq!(seen.lock().unwrap().len(), 1 + 2 + 4 + 8 + 1);
}

/// A commit marker in sector 0 says the data in sector 1 is complete. `correct` syncs the
/// data before writing the marker; the planted bug writes both and syncs once.
fn commit(correct: bool) -> Exploration {
    Explorer::new().tears(false).run(move || async move {
        let restarted = Rc::new(Cell::new(false));
        let r = restarted.clone();
        let db = node::create("db", move || {
            let restarted = r.clone();
            async move {
                if restarted.get() {
                    let mut file = File::open("/db").await.unwrap();
                    let mut image = [0; 2 * SECTOR as usize];
                    file.read_exact(&mut image).await.unwrap();
                    let (marker, data) = image.split_at(SECTOR as usize);
                    if marker[0] == 1 {
                        assert!(
                            data.iter().all(|&b| b == 7),
                            "committed but the data is lost"
                        );
                    }
                    return;
                }
                let mut file = File::create_new("/db").await.unwrap();
                file.set_len(2 * SECTOR).await.unwrap();
                file.sync_all().await.unwrap();
                crashtest_fs::sync_dir("/").await.unwrap();
                let _scope = crash_scope();
                file.seek(SeekFrom::Start(SECTOR)).await.unwrap();
                file.write_all(&[7; SECTOR as usize]).await.unwrap();
                if correct {
                    file.sync_data().await.unwrap();
                }
                file.seek(SeekFrom::Start(0)).await.unwrap();
                file.write_all(&[1]).await.unwrap();
                file.sync_data().await.unwrap();
            }
        });
        time::sleep(Duration::from_secs(1)).await;
        restarted.set(true);
        db.restart();
        time::sleep(Duration::from_secs(1)).await;
    })
}

#[test]
fn a_planted_ordering_bug_is_found_deterministically() {
    let first = commit(false);
    let failure = first
        .failure
        .expect("the missing sync before the marker is found");
    assert!(
        failure
            .to_string()
            .contains("committed but the data is lost")
    );
    let again = commit(false);
    assert_eq!(first.cases, again.cases);
    let again = again.failure.expect("found again");
    assert_eq!(
        (again.case, &again.choices),
        (failure.case, &failure.choices)
    );
}

#[test]
fn the_correct_ordering_passes_every_case() {
    let exploration = commit(true);
    assert!(
        exploration.failure.is_none(),
        "{}",
        exploration.failure.unwrap()
    );
    assert!(exploration.exhausted);
    assert!(exploration.cases > 5);
}

/// A synchronous call cannot stop its caller: at a crash point it kills the node and fails
/// with `EIO`, as does every later call of the dead node, until the task's next `.await`.
#[test]
fn a_crash_point_in_synchronous_code_fails_the_call_with_eio() {
    let errors = Arc::new(AtomicU32::new(0));
    let out = errors.clone();
    let exploration = Explorer::new().tears(false).run(move || {
        let errors = out.clone();
        async move {
            let db = node::create("db", move || {
                let errors = errors.clone();
                async move {
                    let _scope = crash_scope();
                    let file = crashtest_fs::sync::File::create_new("/db");
                    let Ok(file) = file else {
                        errors.fetch_add(1, Ordering::Relaxed);
                        return;
                    };
                    if file.write_all_at(b"x", 0).is_err() {
                        errors.fetch_add(1, Ordering::Relaxed);
                        assert!(file.sync_data().is_err(), "a dead node's calls fail");
                    }
                }
            });
            time::sleep(Duration::from_secs(1)).await;
            db.kill();
        }
    });
    assert!(exploration.exhausted, "{:?}", exploration.failure);
    // Crash before the create (1 case); before the write, with the new entry kept or
    // dropped (2 cases); or not at all, the kill then keeping or dropping the entry and the
    // written sector (4 cases). Calls fail in the first 3.
    assert_eq!(errors.load(Ordering::Relaxed), 3);
    assert_eq!(exploration.cases, 1 + 2 + 4);
}
