//! A synchronous file that outlives its simulation fails with an I/O error, not a panic, so a
//! library's destructor at teardown cannot hide the run's own failure report.

use std::cell::RefCell;
use std::rc::Rc;

use crashtest_core::Sim;
use crashtest_fs::sync;

#[test]
fn a_sync_file_used_after_its_run_ended_returns_an_error() {
    let kept: Rc<RefCell<Option<sync::File>>> = Rc::default();
    let slot = kept.clone();
    Sim::new(1)
        .run(async move {
            let file = sync::OpenOptions::new()
                .create(true)
                .write(true)
                .read(true)
                .open("/f")
                .unwrap();
            file.write_at(b"data", 0).unwrap();
            *slot.borrow_mut() = Some(file);
        })
        .unwrap();
    let file = kept.take().unwrap();
    let mut buf = [0u8; 4];
    assert!(file.read_at(&mut buf, 0).is_err());
    assert!(file.write_at(b"more", 4).is_err());
    assert!(file.sync_data().is_err());
    assert!(file.len().is_err());
}

#[test]
fn a_file_kept_past_its_run_is_refused_in_the_next_and_leaves_its_disk_alone() {
    let kept: Rc<RefCell<Option<sync::File>>> = Rc::default();
    let slot = kept.clone();
    Sim::new(1)
        .run(async move {
            let file = sync::OpenOptions::new()
                .create(true)
                .write(true)
                .open("/kept")
                .unwrap();
            *slot.borrow_mut() = Some(file);
        })
        .unwrap();
    let failure = Sim::new(1)
        .run(async move {
            // The next run's disk has an inode where the kept file's was.
            std::mem::drop(sync::File::create("/mine").unwrap());
            let file = kept.take().unwrap();
            assert!(file.write_at(b"stale", 0).is_err());
            drop(file);
            assert_eq!(
                sync::read("/mine").unwrap(),
                b"",
                "the later run's file is untouched"
            );
        })
        .expect_err("a file of an earlier run is refused");
    let message = failure.to_string();
    assert!(
        message.contains(
            "refused: a file of the simulated disk opened in an earlier simulation was used"
        ) && message.contains("OnceLock"),
        "{message}"
    );
}
