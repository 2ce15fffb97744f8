//! Faults injected while the disk runs.

use std::cell::{Cell, RefCell};
use std::io::ErrorKind;
use std::rc::Rc;
use std::time::Duration;

use crashtest_core::rng::Ratio;
use crashtest_core::{Config, InjectedFault, Sim, node, time};
use crashtest_fs::DiskConfig;
use tokio::io::AsyncWriteExt;

/// Runs `body` as the main of a node under `config`; the run's failure report if it fails.
fn on_node<F>(seed: u64, config: DiskConfig, body: impl Fn() -> F + 'static) -> Result<(), String>
where
    F: Future<Output = ()> + 'static,
{
    Sim::new(seed)
        .run(async move {
            crashtest_fs::configure(config);
            node::create("n", body);
            time::sleep(Duration::from_secs(10)).await;
        })
        .map(drop)
        .map_err(|failure| failure.to_string())
}

#[test]
fn io_errors_are_eio_and_listed_as_faults() {
    let config = DiskConfig::default().read_error(Ratio::ALWAYS);
    let failure = on_node(1, config, || async {
        crashtest_fs::write("/f", b"x").await.unwrap();
        let error = crashtest_fs::read("/f").await.unwrap_err();
        assert_eq!(error.raw_os_error(), Some(5));
        panic!("done");
    })
    .unwrap_err();
    assert!(failure.contains("read error (EIO)"), "{failure}");
    let config = DiskConfig::default().write_error(Ratio::ALWAYS);
    on_node(1, config, || async {
        assert!(crashtest_fs::write("/f", b"x").await.is_err());
        assert_eq!(
            crashtest_fs::read("/f").await.unwrap(),
            b"",
            "a failed write does nothing"
        );
    })
    .unwrap();
}

#[test]
fn a_full_disk_refuses_growth_with_enospc() {
    on_node(1, DiskConfig::default().capacity(1000), || async {
        crashtest_fs::write("/a", [0; 600]).await.unwrap();
        let error = crashtest_fs::write("/b", [0; 600]).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::StorageFull);
        crashtest_fs::write("/b", [0; 400]).await.unwrap();
    })
    .unwrap();
}

#[test]
fn a_file_past_the_largest_size_is_refused_with_efbig_not_allocated() {
    on_node(1, DiskConfig::default().max_file_size(4096), || async {
        let file = crashtest_fs::OpenOptions::new()
            .write(true)
            .create(true)
            .open("/f")
            .await
            .unwrap();
        file.set_len(4096).await.unwrap();
        let error = file.set_len(4097).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::FileTooLarge);
        let file = crashtest_fs::sync::File::create("/g").unwrap();
        let error = file.write_at(b"x", 1 << 40).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::FileTooLarge);
        let error = file.write_at(b"xy", u64::MAX).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::FileTooLarge, "no offset overflows");
        assert_eq!(crashtest_fs::metadata("/g").await.unwrap().len(), 0);
    })
    .unwrap();
    // The default limit stops a wild offset long before it asks the host for a terabyte.
    on_node(1, DiskConfig::default(), || async {
        let file = crashtest_fs::File::create("/f").await.unwrap();
        let error = file.set_len(1 << 40).await.unwrap_err();
        assert_eq!(error.raw_os_error(), Some(27), "EFBIG");
    })
    .unwrap();
}

#[test]
fn read_corruption_is_sticky_until_overwritten() {
    let config = DiskConfig::default().read_corruption(Ratio::ALWAYS);
    on_node(1, config, || async {
        crashtest_fs::write("/f", [0; 512]).await.unwrap();
        let first = crashtest_fs::read("/f").await.unwrap();
        assert_eq!(
            first.iter().map(|b| b.count_ones()).sum::<u32>(),
            1,
            "one bit flipped"
        );
        crashtest_fs::configure(DiskConfig::default());
        assert_eq!(crashtest_fs::read("/f").await.unwrap(), first, "sticky");
        crashtest_fs::write("/f", [0; 512]).await.unwrap();
        assert_eq!(crashtest_fs::read("/f").await.unwrap(), [0; 512], "healed");
    })
    .unwrap();
}

/// A cut file loses its rotten sectors with the bytes cut off: grown again, or rewritten
/// after a crash that lost its unsynced growth, it reads back as the program wrote it.
#[test]
fn cutting_a_file_heals_the_rot_it_cuts_off() {
    let config = DiskConfig::default().read_corruption(Ratio::ALWAYS);
    for seed in 0..8 {
        on_node(seed, config, || async {
            let file = crashtest_fs::sync::File::options()
                .read(true)
                .write(true)
                .create(true)
                .open("/f")
                .unwrap();
            file.write_all_at(&[0; 1024], 0).unwrap();
            let mut rotten = [0; 1024];
            file.read_exact_at(&mut rotten, 0).unwrap();
            assert_ne!(rotten, [0; 1024], "a bit flipped");
            crashtest_fs::configure(DiskConfig::default());
            file.set_len(0).unwrap();
            file.set_len(1024).unwrap();
            let mut grown = [1; 1024];
            file.read_exact_at(&mut grown, 0).unwrap();
            let flipped = grown.iter().filter(|&&byte| byte != 0).count();
            assert_eq!(flipped, 0, "a file grown by set_len reads as zeros");
        })
        .unwrap();
    }
}

#[test]
fn the_flipped_bit_is_drawn_from_the_seed() {
    let config = DiskConfig::default().read_corruption(Ratio::ALWAYS);
    let flipped = Rc::new(RefCell::new(std::collections::BTreeSet::new()));
    for seed in 0..8 {
        let flipped = flipped.clone();
        on_node(seed, config, move || {
            let flipped = flipped.clone();
            async move {
                crashtest_fs::write("/f", [0; 512]).await.unwrap();
                let read = crashtest_fs::read("/f").await.unwrap();
                let byte = read.iter().position(|&b| b != 0).expect("one bit flipped");
                flipped.borrow_mut().insert((byte, read[byte]));
            }
        })
        .unwrap();
    }
    assert!(
        flipped.borrow().len() > 1,
        "the same file and sector rot at a bit the seed chooses: {:?}",
        flipped.borrow()
    );
}

#[test]
fn damage_stays_in_one_zone_so_a_second_copy_survives() {
    let config = DiskConfig::default()
        .read_corruption(Ratio::ALWAYS)
        .misdirected_write(Ratio::new(1, 2))
        .zone_size(4096);
    for seed in 0..50 {
        on_node(seed, config, || async {
            // Two copies of a page, in two zones; every read may corrupt, writes may stray.
            // The program repairs a bad copy from the good one, as a correct one would.
            let page = [0x5A; 4096];
            let file = crashtest_fs::sync::File::options()
                .read(true)
                .write(true)
                .create(true)
                .open("/f")
                .unwrap();
            file.set_len(3 * 4096).unwrap();
            file.write_all_at(&page, 0).unwrap();
            file.write_all_at(&page, 8192).unwrap();
            let mut repairs = 0;
            for _ in 0..20 {
                let mut copies = [[0; 4096]; 2];
                file.read_exact_at(&mut copies[0], 0).unwrap();
                file.read_exact_at(&mut copies[1], 8192).unwrap();
                assert!(copies.contains(&page), "both copies damaged");
                for (i, copy) in copies.iter().enumerate() {
                    if *copy != page {
                        file.write_all_at(&page, i as u64 * 8192).unwrap();
                        repairs += 1;
                    }
                }
            }
            assert!(repairs > 0, "the faults were on");
        })
        .unwrap();
    }
}

#[test]
fn a_misdirected_write_leaves_its_target_stale() {
    let config = DiskConfig::default()
        .misdirected_write(Ratio::ALWAYS)
        .zone_size(4096);
    on_node(1, config, || async {
        let file = crashtest_fs::sync::File::options()
            .read(true)
            .write(true)
            .create(true)
            .open("/f")
            .unwrap();
        file.set_len(4096).unwrap();
        file.write_all_at(&[1; 512], 0).unwrap();
        let mut data = vec![0; 4096];
        file.read_exact_at(&mut data, 0).unwrap();
        assert_eq!(data[..512], [0; 512], "the target keeps its old bytes");
        assert_eq!(
            data.iter().filter(|&&b| b == 1).count(),
            512,
            "the write landed elsewhere"
        );
    })
    .unwrap();
}

#[test]
fn healing_the_run_stops_running_faults() {
    let config = DiskConfig::default().read_error(Ratio::ALWAYS);
    on_node(1, config, || async {
        crashtest_fs::write("/f", b"x").await.unwrap();
        assert!(crashtest_fs::read("/f").await.is_err());
        crashtest_core::fault::heal_all();
        assert_eq!(crashtest_fs::read("/f").await.unwrap(), b"x");
    })
    .unwrap();
}

/// Syncs an empty file into place on a node's first boot, writes three pages to it without
/// syncing, and has the node killed; returns what the file holds on the next boot and the
/// faults the run listed (it fails on purpose, to report them).
fn unsynced_write_then_kill(seed: u64, config: Config) -> (Vec<u8>, Vec<InjectedFault>) {
    let survived: Rc<RefCell<Option<Vec<u8>>>> = Rc::default();
    let out = survived.clone();
    let failure = Sim::with_config(seed, config)
        .run(async move {
            let boots = Rc::new(Cell::new(0));
            let n = node::create("n", move || {
                let (boots, out) = (boots.clone(), out.clone());
                async move {
                    boots.set(boots.get() + 1);
                    if boots.get() > 1 {
                        *out.borrow_mut() = Some(crashtest_fs::read("/data").await.unwrap());
                        return;
                    }
                    let mut file = crashtest_fs::File::create("/data").await.unwrap();
                    file.sync_all().await.unwrap();
                    crashtest_fs::sync_dir("/").await.unwrap();
                    file.write_all(&[1; 3 * 4096]).await.unwrap();
                    time::sleep(Duration::from_secs(60)).await;
                }
            });
            time::sleep(Duration::from_secs(1)).await;
            n.restart();
            time::sleep(Duration::from_secs(1)).await;
            panic!("report the faults");
        })
        .unwrap_err();
    let survived = survived.take().expect("the node booted twice");
    (survived, failure.faults)
}

#[test]
fn a_crash_lists_its_damage_as_a_fault_that_masking_spares() {
    let crash_damage = |faults: &[InjectedFault]| -> Vec<u64> {
        faults
            .iter()
            .filter(|f| f.text.starts_with("crash: "))
            .map(|f| f.id.expect("crash damage has a fault id"))
            .collect()
    };
    let mut damaged_seeds = 0;
    for seed in 0..20 {
        let (survived, faults) = unsynced_write_then_kill(seed, Config::default());
        let again = unsynced_write_then_kill(seed, Config::default());
        assert!(
            again.0 == survived,
            "seed {seed}: the same seed crashed differently"
        );
        assert_eq!(
            again.1, faults,
            "seed {seed}: the same seed listed other faults"
        );
        let damage = crash_damage(&faults);
        if survived == [1; 3 * 4096] {
            assert!(damage.is_empty(), "seed {seed}: damage listed, none done");
            continue;
        }
        damaged_seeds += 1;
        assert_eq!(damage.len(), 1, "seed {seed}: one file damaged");
        let (spared, spared_faults) =
            unsynced_write_then_kill(seed, Config::default().mask_faults(damage.clone()));
        assert!(
            spared == [1; 3 * 4096],
            "seed {seed}: masked damage lost data"
        );
        assert!(crash_damage(&spared_faults).is_empty());
        let others = |faults: &[InjectedFault]| -> Vec<(Option<u64>, String)> {
            faults
                .iter()
                .filter(|f| !f.text.starts_with("crash: "))
                .map(|f| (f.id, f.text.clone()))
                .collect()
        };
        assert_eq!(others(&faults), others(&spared_faults), "seed {seed}");
    }
    assert!(
        damaged_seeds >= 5,
        "only {damaged_seeds} of 20 crashes did damage"
    );
}
