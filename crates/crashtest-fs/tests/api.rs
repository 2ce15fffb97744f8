//! The tokio-shaped API: files, directories, errors with the real kinds, the synchronous
//! handle, and the fallback to the real file system outside a simulation.

use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::time::Duration;

use crashtest_core::{Sim, node, time};
use crashtest_fs::{File, OpenOptions};
use tokio::io::{AsyncReadExt, AsyncSeek, AsyncSeekExt, AsyncWriteExt};

fn sim(body: impl Future<Output = ()> + 'static) {
    Sim::new(1).run(body).unwrap();
}

#[test]
fn common_errors_have_the_kinds_of_the_real_calls() {
    sim(async {
        let kind = |r: std::io::Result<()>| r.unwrap_err().kind();
        assert_eq!(
            kind(File::open("/nope").await.map(drop)),
            ErrorKind::NotFound
        );
        crashtest_fs::write("/f", b"x").await.unwrap();
        assert_eq!(
            kind(File::create_new("/f").await.map(drop)),
            ErrorKind::AlreadyExists
        );
        crashtest_fs::create_dir("/d").await.unwrap();
        assert_eq!(
            kind(crashtest_fs::create_dir("/d").await),
            ErrorKind::AlreadyExists
        );
        assert_eq!(
            kind(File::create("/d").await.map(drop)),
            ErrorKind::IsADirectory
        );
        assert_eq!(
            kind(crashtest_fs::remove_file("/d").await),
            ErrorKind::IsADirectory
        );
        assert_eq!(
            kind(crashtest_fs::remove_dir("/f").await),
            ErrorKind::NotADirectory
        );
        assert_eq!(
            kind(crashtest_fs::write("/f/g", b"").await),
            ErrorKind::NotADirectory
        );
        crashtest_fs::write("/d/g", b"").await.unwrap();
        assert_eq!(
            kind(crashtest_fs::remove_dir("/d").await),
            ErrorKind::DirectoryNotEmpty
        );
        assert_eq!(
            kind(crashtest_fs::rename("/nope", "/x").await),
            ErrorKind::NotFound
        );
        assert_eq!(
            kind(crashtest_fs::rename("/f", "/d").await),
            ErrorKind::IsADirectory
        );
        assert_eq!(
            kind(crashtest_fs::rename("/d", "/d/e").await),
            ErrorKind::InvalidInput
        );
        let truncate_read_only = OpenOptions::new()
            .read(true)
            .truncate(true)
            .open("/f")
            .await;
        assert_eq!(kind(truncate_read_only.map(drop)), ErrorKind::InvalidInput);
        assert_eq!(
            kind(crashtest_fs::read_dir("/f").await.map(drop)),
            ErrorKind::NotADirectory
        );
        assert!(crashtest_fs::read_to_string("/f").await.is_ok());
        crashtest_fs::write("/bin", [0xff, 0xfe]).await.unwrap();
        let not_utf8 = crashtest_fs::read_to_string("/bin").await.map(drop);
        assert_eq!(kind(not_utf8), ErrorKind::InvalidData);
        // Write-behind, as tokio: the write returns at once, the flush reports its failure.
        let mut read_only = File::open("/f").await.unwrap();
        read_only.write_all(b"no").await.unwrap();
        assert!(read_only.flush().await.is_err());
    });
}

#[test]
fn files_read_write_seek_and_append_through_tokio_traits() {
    sim(async {
        let mut file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .open("/f")
            .await
            .unwrap();
        file.write_all(b"hello world").await.unwrap();
        assert_eq!(file.seek(SeekFrom::End(-5)).await.unwrap(), 6);
        let mut word = String::new();
        file.read_to_string(&mut word).await.unwrap();
        assert_eq!(word, "world");
        file.seek(SeekFrom::Start(0)).await.unwrap();
        file.write_all(b"J").await.unwrap();
        file.set_len(5).await.unwrap();
        assert_eq!(crashtest_fs::read("/f").await.unwrap(), b"Jello");
        let mut log = File::options().append(true).open("/f").await.unwrap();
        log.write_all(b"!").await.unwrap();
        assert_eq!(crashtest_fs::read("/f").await.unwrap(), b"Jello!");
        assert!(file.seek(SeekFrom::Current(-100)).await.is_err());
        assert_eq!(file.metadata().await.unwrap().len(), 6);
    });
}

/// A write future cut short (by `timeout` or `select!`) never hands its result to the next
/// write's buffer: the file ends up holding what tokio's write-behind `File` would.
#[test]
fn a_write_cut_short_never_answers_for_the_next_buffer() {
    sim(async {
        let mut file = File::create("/f").await.unwrap();
        // A write returns at once, so a timeout cannot cut it after its bytes went in.
        let first = time::timeout(Duration::ZERO, file.write_all(b"old")).await;
        assert!(first.is_ok(), "a write completes in its first poll");
        file.write_all(b"newer bytes").await.unwrap();
        file.flush().await.unwrap();
        assert_eq!(crashtest_fs::read("/f").await.unwrap(), b"oldnewer bytes");
    });
}

/// A write that has to wait for the write before it, dropped during that wait, wrote nothing
/// of its own buffer; the next write then writes all of its own.
#[test]
fn a_write_dropped_while_waiting_for_the_previous_one_writes_nothing() {
    sim(async {
        let mut file = File::create("/f").await.unwrap();
        file.write_all(b"first").await.unwrap();
        let cut = time::timeout(Duration::from_nanos(1), file.write_all(b"dropped")).await;
        assert!(
            cut.is_err(),
            "the second write waits out the first one's latency"
        );
        file.write_all(b" second").await.unwrap();
        file.flush().await.unwrap();
        assert_eq!(crashtest_fs::read("/f").await.unwrap(), b"first second");
    });
}

/// A failed write is reported by the next write or flush, once, as tokio does; a read or a
/// seek in between does not report it but leaves it for them, and a sync does not report it.
#[test]
fn a_failed_write_is_reported_by_the_next_write_or_flush() {
    sim(async {
        crashtest_fs::write("/f", b"abc").await.unwrap();
        let mut file = File::open("/f").await.unwrap();
        assert_eq!(file.write(b"x").await.unwrap(), 1);
        let mut head = [0; 2];
        file.read_exact(&mut head).await.unwrap();
        assert_eq!(&head, b"ab");
        assert_eq!(file.seek(SeekFrom::Start(0)).await.unwrap(), 0);
        assert!(file.write(b"y").await.is_err(), "EBADF, kept by the read");
        file.flush().await.unwrap();
        assert_eq!(file.write(b"z").await.unwrap(), 1);
        file.sync_all().await.unwrap();
        assert!(file.flush().await.is_err());
        assert_eq!(crashtest_fs::read("/f").await.unwrap(), b"abc");
    });
}

/// A sync waits for the write in flight, so what it makes durable includes that write.
#[test]
fn a_sync_waits_for_the_write_in_flight() {
    sim(async {
        let mut file = File::create("/f").await.unwrap();
        let start = time::Instant::now();
        file.write_all(&[7; 1 << 20]).await.unwrap();
        assert_eq!(start.elapsed(), Duration::ZERO, "the write returns at once");
        file.sync_all().await.unwrap();
        // 1 MiB at 50 MB/s is about 21 ms.
        assert!(start.elapsed() >= Duration::from_millis(20));
        file.flush().await.unwrap();
    });
}

#[test]
fn directories_list_rename_and_remove() {
    sim(async {
        crashtest_fs::create_dir_all("/a/b").await.unwrap();
        crashtest_fs::write("/a/b/x", b"1").await.unwrap();
        crashtest_fs::write("/a/y", b"22").await.unwrap();
        let mut names = Vec::new();
        let mut dir = crashtest_fs::read_dir("/a").await.unwrap();
        while let Some(entry) = dir.next_entry().await.unwrap() {
            let is_dir = entry.file_type().await.unwrap().is_dir();
            names.push((entry.file_name().into_string().unwrap(), is_dir));
        }
        names.sort();
        assert_eq!(names, [("b".to_owned(), true), ("y".to_owned(), false)]);
        crashtest_fs::rename("/a/b", "/c").await.unwrap();
        assert_eq!(crashtest_fs::read("/c/x").await.unwrap(), b"1");
        assert!(!crashtest_fs::try_exists("/a/b").await.unwrap());
        crashtest_fs::remove_file("/c/x").await.unwrap();
        crashtest_fs::remove_dir("/c").await.unwrap();
        assert!(!crashtest_fs::try_exists("/c").await.unwrap());
        assert_eq!(crashtest_fs::metadata("/a/y").await.unwrap().len(), 2);
    });
}

#[test]
fn each_node_has_its_own_disk() {
    sim(async {
        crashtest_fs::write("/who", b"supervisor").await.unwrap();
        let n = node::create("n", || async {
            assert!(!crashtest_fs::try_exists("/who").await.unwrap());
            crashtest_fs::write("/who", b"n").await.unwrap();
        });
        time::sleep(std::time::Duration::from_secs(1)).await;
        assert_eq!(crashtest_fs::read("/who").await.unwrap(), b"supervisor");
        n.kill();
    });
}

#[test]
fn each_run_on_a_thread_starts_with_empty_disks() {
    for run in 0..3 {
        sim(async move {
            assert!(
                !crashtest_fs::try_exists("/left").await.unwrap(),
                "run {run} found an earlier run's file"
            );
            crashtest_fs::write("/left", b"by an earlier run")
                .await
                .unwrap();
        });
    }
}
#[test]
fn disk_operations_take_virtual_time() {
    sim(async {
        let start = time::Instant::now();
        crashtest_fs::write("/f", vec![0; 1 << 20]).await.unwrap();
        // 1 MiB at 50 MB/s is about 21 ms.
        assert!(start.elapsed() >= std::time::Duration::from_millis(20));
        crashtest_fs::configure(
            crashtest_fs::DiskConfig::default().latency(crashtest_fs::Latency::ZERO),
        );
        let start = time::Instant::now();
        crashtest_fs::write("/g", vec![0; 1 << 20]).await.unwrap();
        assert_eq!(start.elapsed(), std::time::Duration::ZERO);
    });
}

#[test]
fn the_synchronous_handle_reads_writes_and_seeks_like_std() {
    sim(async {
        let mut file = crashtest_fs::sync::File::options()
            .read(true)
            .write(true)
            .create(true)
            .open("/db")
            .unwrap();
        file.write_all(b"abcdef").unwrap();
        file.seek(SeekFrom::Start(2)).unwrap();
        let mut rest = String::new();
        file.read_to_string(&mut rest).unwrap();
        assert_eq!(rest, "cdef");
        file.write_all_at(b"Z", 0).unwrap();
        file.sync_data().unwrap();
        assert_eq!(crashtest_fs::read("/db").await.unwrap(), b"Zbcdef");
        assert_eq!(file.len().unwrap(), 6);
    });
}

#[test]
fn outside_a_simulation_the_async_api_uses_the_real_file_system() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = std::env::temp_dir().join(format!("crashtest-fs-api-{}", std::process::id()));
        crashtest_fs::create_dir_all(&dir).await.unwrap();
        let path = dir.join("f");
        let mut file = File::create(&path).await.unwrap();
        file.write_all(b"real").await.unwrap();
        file.sync_all().await.unwrap();
        drop(file);
        assert_eq!(crashtest_fs::read(&path).await.unwrap(), b"real");
        assert_eq!(crashtest_fs::metadata(&path).await.unwrap().len(), 4);
        let mut entries = crashtest_fs::read_dir(&dir).await.unwrap();
        let entry = entries.next_entry().await.unwrap().unwrap();
        assert_eq!(entry.file_name(), "f");
        crashtest_fs::sync_dir(&dir).await.unwrap();
        crashtest_fs::remove_file(&path).await.unwrap();
        crashtest_fs::remove_dir(&dir).await.unwrap();
    });
}

#[test]
fn a_cloned_handle_keeps_a_removed_file_open_after_the_first_is_dropped() {
    sim(async {
        let mut first = File::create_new("/f").await.unwrap();
        first.write_all(b"data").await.unwrap();
        let mut clone = first.try_clone().await.unwrap();
        drop(first);
        crashtest_fs::remove_file("/f").await.unwrap();
        assert!(!crashtest_fs::try_exists("/f").await.unwrap());
        clone.rewind().await.unwrap();
        let mut read = Vec::new();
        clone.read_to_end(&mut read).await.unwrap();
        assert_eq!(read, b"data");
        assert_eq!(clone.metadata().await.unwrap().len(), 4);
    });
}

#[test]
fn a_handle_from_before_a_crash_cannot_be_cloned() {
    sim(async {
        let kept = std::rc::Rc::new(std::cell::RefCell::new(None));
        let slot = kept.clone();
        let n = node::create("n", move || {
            let slot = slot.clone();
            async move {
                let file = File::create("/wal").await.unwrap();
                *slot.borrow_mut() = Some(file);
                std::future::pending::<()>().await;
            }
        });
        time::sleep(Duration::from_secs(1)).await;
        let file = kept.borrow_mut().take().expect("the node opened its file");
        let clone = file.try_clone().await.unwrap();
        n.kill();
        let dead = file.try_clone().await.unwrap_err();
        assert_eq!(
            dead.raw_os_error(),
            Some(5),
            "EIO from a dead node's handle"
        );
        n.restart();
        time::sleep(Duration::from_secs(1)).await;
        let stale = clone.try_clone().await.unwrap_err();
        assert_eq!(
            stale.raw_os_error(),
            Some(5),
            "EIO from an earlier boot's handle"
        );
    });
}

#[test]
fn new_entries_get_their_mode_under_the_umask() {
    sim(async {
        let mode = |path| async move { crashtest_fs::metadata(path).await.unwrap().mode() };
        crashtest_fs::write("/plain", b"").await.unwrap();
        OpenOptions::new()
            .write(true)
            .create(true)
            .mode(0o600)
            .open("/private")
            .await
            .unwrap();
        OpenOptions::new()
            .write(true)
            .create(true)
            .mode(0o777)
            .open("/masked")
            .await
            .unwrap();
        crashtest_fs::create_dir_all("/a/b").await.unwrap();
        assert_eq!(mode("/plain").await, 0o644);
        assert_eq!(mode("/private").await, 0o600);
        assert_eq!(
            mode("/masked").await,
            0o755,
            "the umask 022 takes group and other write"
        );
        assert_eq!(mode("/a").await, 0o755);
        assert_eq!(mode("/a/b").await, 0o755);
        // The mode of an existing file is not the open's to change.
        OpenOptions::new()
            .write(true)
            .create(true)
            .mode(0o600)
            .open("/plain")
            .await
            .unwrap();
        assert_eq!(mode("/plain").await, 0o644);
    });
}

#[test]
fn opening_a_file_its_owner_bits_forbid_is_permission_denied() {
    use std::os::unix::fs::PermissionsExt;
    sim(async {
        let denied = |result: std::io::Result<File>| {
            let error = result.unwrap_err();
            assert_eq!(error.kind(), ErrorKind::PermissionDenied);
            assert_eq!(error.raw_os_error(), Some(13), "EACCES, as open(2) sets it");
        };
        crashtest_fs::write("/ro", b"kept").await.unwrap();
        crashtest_fs::set_permissions("/ro", std::fs::Permissions::from_mode(0o444))
            .await
            .unwrap();
        assert_eq!(crashtest_fs::read("/ro").await.unwrap(), b"kept");
        denied(OpenOptions::new().write(true).open("/ro").await);
        denied(OpenOptions::new().append(true).open("/ro").await);
        assert_eq!(
            crashtest_fs::write("/ro", b"lost")
                .await
                .unwrap_err()
                .kind(),
            ErrorKind::PermissionDenied
        );
        assert_eq!(crashtest_fs::read("/ro").await.unwrap(), b"kept");
        crashtest_fs::set_permissions("/ro", std::fs::Permissions::from_mode(0o200))
            .await
            .unwrap();
        denied(File::open("/ro").await);
        OpenOptions::new().write(true).open("/ro").await.unwrap();
        // A file created with bits that forbid writing is still written by the open that
        // created it, as open(2) allows.
        let mut fresh = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o400)
            .open("/fresh")
            .await
            .unwrap();
        fresh.write_all(b"once").await.unwrap();
        fresh.flush().await.unwrap();
        denied(OpenOptions::new().write(true).open("/fresh").await);
        // Removing and renaming need the directory's bits, not the file's.
        crashtest_fs::rename("/fresh", "/moved").await.unwrap();
        crashtest_fs::remove_file("/moved").await.unwrap();
    });
}

#[test]
fn hard_links_share_the_file_and_fail_as_link_does() {
    sim(async {
        let mut file = File::create("/a").await.unwrap();
        file.write_all(b"one").await.unwrap();
        file.flush().await.unwrap();
        crashtest_fs::hard_link("/a", "/b").await.unwrap();
        file.write_all(b" two").await.unwrap();
        file.flush().await.unwrap();
        assert_eq!(crashtest_fs::read("/b").await.unwrap(), b"one two");
        crashtest_fs::remove_file("/a").await.unwrap();
        assert_eq!(crashtest_fs::read("/b").await.unwrap(), b"one two");
        // A rename between two names of one file changes nothing, as rename(2) says.
        crashtest_fs::hard_link("/b", "/c").await.unwrap();
        crashtest_fs::rename("/b", "/c").await.unwrap();
        assert!(crashtest_fs::try_exists("/b").await.unwrap());

        let error = |result: std::io::Result<()>| {
            let error = result.unwrap_err();
            (error.kind(), error.raw_os_error())
        };
        crashtest_fs::create_dir("/d").await.unwrap();
        assert_eq!(
            error(crashtest_fs::hard_link("/d", "/e").await),
            (ErrorKind::PermissionDenied, Some(1)),
            "EPERM: no link to a directory"
        );
        assert_eq!(
            error(crashtest_fs::hard_link("/b", "/c").await),
            (ErrorKind::AlreadyExists, Some(17))
        );
        assert_eq!(
            error(crashtest_fs::hard_link("/missing", "/f").await),
            (ErrorKind::NotFound, Some(2))
        );
    });
}

#[test]
fn a_dot_dot_steps_only_out_of_a_directory_that_exists() {
    sim(async {
        crashtest_fs::create_dir("/d").await.unwrap();
        crashtest_fs::write("/d/f", b"x").await.unwrap();
        crashtest_fs::write("/d/sub/../g", b"y").await.unwrap_err();
        crashtest_fs::create_dir("/d/sub").await.unwrap();
        crashtest_fs::write("/d/sub/../g", b"y").await.unwrap();
        assert_eq!(crashtest_fs::read("/d/g").await.unwrap(), b"y");
        let kind = |result: std::io::Result<Vec<u8>>| result.unwrap_err().kind();
        assert_eq!(
            kind(crashtest_fs::read("/d/f/../g").await),
            ErrorKind::NotADirectory
        );
        assert_eq!(
            kind(crashtest_fs::read("/d/missing/../g").await),
            ErrorKind::NotFound
        );
        assert_eq!(
            crashtest_fs::create_dir_all("/d/f/../h")
                .await
                .unwrap_err()
                .kind(),
            ErrorKind::NotADirectory
        );
        assert!(!crashtest_fs::try_exists("/d/h").await.unwrap());
        // Above the root, `..` stays at the root, as the kernel's walk does.
        assert_eq!(crashtest_fs::read("/../../d/g").await.unwrap(), b"y");
    });
}

#[test]
fn a_clone_made_after_a_started_seek_reads_where_the_seek_went() {
    sim(async {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .open("/f")
            .await
            .unwrap();
        file.write_all(b"abcdef").await.unwrap();
        file.flush().await.unwrap();
        std::pin::Pin::new(&mut file)
            .start_seek(SeekFrom::Start(2))
            .unwrap();
        let mut clone = file.try_clone().await.unwrap();
        let mut two = [0; 2];
        clone.read_exact(&mut two).await.unwrap();
        assert_eq!(
            &two, b"cd",
            "as on tokio, whose seek moved the shared cursor"
        );
        // The original's next read starts where the clone left the cursor.
        let mut rest = Vec::new();
        file.read_to_end(&mut rest).await.unwrap();
        assert_eq!(rest, b"ef");
    });
}

#[test]
fn times_follow_the_nodes_wall_clock_as_data_names_and_bits_change() {
    use std::os::unix::fs::PermissionsExt;
    sim(async {
        let secs = |time: std::time::SystemTime| {
            time.duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs_f64()
        };
        let start = secs(time::system_time());
        let stat = |path| async move { crashtest_fs::metadata(path).await.unwrap() };
        crashtest_fs::create_dir("/d").await.unwrap();
        crashtest_fs::write("/d/f", b"one").await.unwrap();
        let made = stat("/d/f").await;
        let born = secs(made.created().unwrap());
        assert!(born >= start && born < start + 1.0);
        assert_eq!(made.modified().unwrap(), made.created().unwrap());
        assert_eq!(
            made.accessed().unwrap(),
            made.created().unwrap(),
            "no access times"
        );

        time::sleep(Duration::from_secs(10)).await;
        let dir_before = stat("/d").await.modified().unwrap();
        crashtest_fs::write("/d/f", b"two").await.unwrap();
        let written = stat("/d/f").await;
        assert!(
            secs(written.modified().unwrap()) >= born + 10.0,
            "a write stamps the data"
        );
        assert_eq!(written.created().unwrap(), made.created().unwrap());
        assert_eq!(
            stat("/d").await.modified().unwrap(),
            dir_before,
            "no entry changed"
        );

        time::sleep(Duration::from_secs(10)).await;
        crashtest_fs::set_permissions("/d/f", std::fs::Permissions::from_mode(0o600))
            .await
            .unwrap();
        assert_eq!(
            stat("/d/f").await.modified().unwrap(),
            written.modified().unwrap(),
            "a chmod changes the inode, not the data"
        );
        crashtest_fs::rename("/d/f", "/d/g").await.unwrap();
        assert!(
            secs(stat("/d").await.modified().unwrap()) >= born + 20.0,
            "a rename changes the directory's entries"
        );
    });
}

#[test]
fn a_set_modification_time_is_kept_by_its_files_other_names() {
    sim(async {
        let file = File::create("/f").await.unwrap();
        crashtest_fs::hard_link("/f", "/g").await.unwrap();
        let then = std::time::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
        file.set_modified(then).await.unwrap();
        let meta = crashtest_fs::metadata("/g").await.unwrap();
        assert_eq!(meta.modified().unwrap(), then);
        assert!(meta.created().unwrap() > then, "the creation time stays");
        let before_epoch = std::time::UNIX_EPOCH - Duration::from_millis(1500);
        file.set_modified(before_epoch).await.unwrap();
        assert_eq!(
            crashtest_fs::metadata("/f")
                .await
                .unwrap()
                .modified()
                .unwrap(),
            before_epoch
        );
    });
}

#[test]
fn create_dir_all_makes_the_directories_a_dot_dot_walks_through_as_std_does() {
    sim(async {
        crashtest_fs::create_dir_all("/a/b/../c").await.unwrap();
        for dir in ["/a", "/a/b", "/a/c"] {
            assert!(crashtest_fs::metadata(dir).await.unwrap().is_dir(), "{dir}");
        }
    });
}

#[test]
fn truncating_an_empty_file_stamps_its_modification_time() {
    sim(async {
        crashtest_fs::write("/heartbeat", b"").await.unwrap();
        let first = crashtest_fs::metadata("/heartbeat")
            .await
            .unwrap()
            .modified()
            .unwrap();
        time::sleep(Duration::from_secs(30)).await;
        crashtest_fs::write("/heartbeat", b"").await.unwrap();
        let again = crashtest_fs::metadata("/heartbeat")
            .await
            .unwrap()
            .modified()
            .unwrap();
        assert!(again.duration_since(first).unwrap() >= Duration::from_secs(30));
    });
}
