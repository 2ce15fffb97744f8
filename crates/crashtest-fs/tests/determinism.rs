//! The disk's randomness comes from the seed: same seed, same run; other seeds, other runs.

use std::time::Duration;

use crashtest_core::rng::Ratio;
use crashtest_core::{Config, Sim, check_determinism, node, time};
use crashtest_fs::DiskConfig;
use tokio::io::AsyncWriteExt;

/// Two nodes appending and syncing under running faults, one killed mid-way and restarted.
async fn workload() {
    crashtest_fs::configure(
        DiskConfig::default()
            .write_error(Ratio::new(1, 20))
            .sync_error(Ratio::new(1, 20))
            .read_corruption(Ratio::new(1, 10)),
    );
    let mut nodes = Vec::new();
    for name in ["a", "b"] {
        nodes.push(node::create(name, || async {
            let Ok(mut file) = crashtest_fs::File::options()
                .read(true)
                .append(true)
                .create(true)
                .open("/log")
                .await
            else {
                return;
            };
            for i in 0..20u8 {
                let _ = file.write_all(&[i; 700]).await;
                let _ = file.sync_data().await;
                let _ = crashtest_fs::read("/log").await;
            }
        }));
    }
    time::sleep(Duration::from_millis(7)).await;
    nodes[0].restart();
    time::sleep(Duration::from_secs(1)).await;
}

#[test]
fn the_same_seed_gives_the_same_fingerprint() {
    for seed in 0..5 {
        let outcome = check_determinism(seed, Config::default(), workload);
        assert!(outcome.is_ok(), "seed {seed}: {}", outcome.unwrap_err());
        let first = Sim::new(seed).run(workload()).unwrap().fingerprint;
        let second = Sim::new(seed).run(workload()).unwrap().fingerprint;
        assert_eq!(first, second);
    }
}

#[test]
fn different_seeds_give_different_runs() {
    let fingerprints: std::collections::BTreeSet<u64> = (0..20)
        .map(|seed| Sim::new(seed).run(workload()).unwrap().fingerprint)
        .collect();
    assert_eq!(fingerprints.len(), 20);
}
