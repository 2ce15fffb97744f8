//! A streamed trace is the recorded trace, event for event, and streaming changes nothing
//! about the run: same seed, same fingerprint; other seeds, other fingerprints.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crashtest_core::node::{self, NodeId};
use crashtest_core::trace::{Event, TraceStream};
use crashtest_core::{Config, Sim, time};

#[derive(Default)]
struct Kept {
    events: Mutex<Vec<Event>>,
    names: Mutex<Vec<(u32, String)>>,
    flushes: Mutex<u64>,
}

impl TraceStream for Kept {
    fn name_node(&self, node: NodeId, name: &str) {
        self.names
            .lock()
            .unwrap()
            .push((node.index() as u32, name.to_owned()));
    }
    fn event(&self, event: &Event) {
        self.events.lock().unwrap().push(event.clone());
    }
    fn flush(&self) {
        *self.flushes.lock().unwrap() += 1;
    }
}

async fn body() {
    let worker = node::create("worker", || async {
        loop {
            time::sleep(Duration::from_millis(
                crashtest_core::rng::node_rng().next_u64() % 50,
            ))
            .await;
        }
    });
    time::sleep(Duration::from_secs(1)).await;
    worker.kill();
}

fn streamed(seed: u64) -> (u64, Arc<Kept>) {
    let kept = Arc::new(Kept::default());
    let config = Config::default().stream_trace(kept.clone());
    let summary = Sim::with_config(seed, config).run(body()).unwrap();
    (summary.fingerprint, kept)
}

#[test]
fn the_stream_is_the_recorded_trace_and_changes_no_fingerprint() {
    let recorded = Sim::with_config(5, Config::default().record_trace(true))
        .run(body())
        .unwrap();
    let (fingerprint, kept) = streamed(5);
    assert_eq!(fingerprint, recorded.fingerprint);
    assert_eq!(*kept.events.lock().unwrap(), recorded.trace.unwrap());
    assert_eq!(
        *kept.names.lock().unwrap(),
        [(0, "supervisor".to_owned()), (1, "worker".to_owned())]
    );
    // The kill, and the end of the run.
    assert!(*kept.flushes.lock().unwrap() >= 2);
    assert_eq!(streamed(5).0, fingerprint, "same seed, same fingerprint");
    assert_ne!(
        streamed(6).0,
        fingerprint,
        "another seed, another fingerprint"
    );
}
