//! The simulated deployment: the store's server on one node, a client on another, a nemesis
//! that kills, partitions and clogs the server, and the checks.
//!
//! The client puts unique keys over gRPC and now and then reads an acknowledged one back over
//! HTTP; an acknowledged put must read back, mid-run and after the run heals. Everything is
//! the library's ordinary tokio code; only this file names crashtest.

#![allow(dead_code, unreachable_pub)]

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use crashtest::nemesis::Nemesis;
use crashtest::node;
use tonic_kv::{Bug, Config};

const GRPC_PORT: u16 = 50051;
const HTTP_PORT: u16 = 8080;

/// What to run.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    /// A planted bug in the server.
    pub bug: Option<Bug>,
    /// How many puts the client makes.
    pub puts: usize,
    /// Whether a kill cuts the server's power for the network too: its connections vanish
    /// without a word (`NetConfig::kill_resets` off), and the clients learn of it only from
    /// their own timeouts and keep-alives.
    pub silent_kills: bool,
}

impl Default for Setup {
    fn default() -> Setup {
        Setup {
            bug: Bug::from_env(),
            puts: 30,
            silent_kills: false,
        }
    }
}

/// Acknowledged puts: key to value.
type Acked = Rc<RefCell<BTreeMap<String, String>>>;

/// The whole scenario, as a simulation's body.
pub async fn run(setup: Setup) {
    crashtest::net::configure(crashtest::net::NetConfig {
        kill_resets: !setup.silent_kills,
        ..crashtest::net::NetConfig::default()
    });
    let server = node::create("kv", move || async move {
        let config = Config {
            grpc: ([0, 0, 0, 0], GRPC_PORT).into(),
            http: ([0, 0, 0, 0], HTTP_PORT).into(),
            data: "/data".into(),
            bug: setup.bug,
        };
        if let Err(error) = tonic_kv::server::run(config).await {
            panic!("the server stopped: {error}");
        }
    });
    // By name, as in production: the clients resolve it with getaddrinfo, which the
    // determinism guard answers from the simulation's nodes.
    let grpc_url = format!("http://kv:{GRPC_PORT}");
    let http_url = format!("http://kv:{HTTP_PORT}");
    let acked: Acked = Rc::default();
    let done = Rc::new(Cell::new(false));

    let client = {
        let (acked, done, grpc_url, http_url) = (
            acked.clone(),
            done.clone(),
            grpc_url.clone(),
            http_url.clone(),
        );
        node::create("client", move || {
            let (acked, done) = (acked.clone(), done.clone());
            let (grpc_url, http_url) = (grpc_url.clone(), http_url.clone());
            async move {
                let mut grpc = tonic_kv::grpc::client(&grpc_url).unwrap();
                let http = tonic_kv::http::client();
                for i in 0..setup.puts {
                    let (key, value) = (format!("k{i}"), format!("v{i}"));
                    if tonic_kv::grpc::put(&mut grpc, &key, &value).await.is_ok() {
                        acked.borrow_mut().insert(key, value);
                    }
                    if i % 3 == 2 {
                        let newest = acked
                            .borrow()
                            .iter()
                            .next_back()
                            .map(|(k, v)| (k.clone(), v.clone()));
                        if let Some((key, value)) = newest
                            && let Ok(read) = tonic_kv::http::fetch(&http, &http_url, &key).await
                        {
                            assert_eq!(
                                read.as_deref(),
                                Some(value.as_str()),
                                "acknowledged put {key}={value} read back over HTTP as {read:?}"
                            );
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                done.set(true);
                std::future::pending::<()>().await;
            }
        })
    };

    Nemesis::default()
        .every(Duration::from_millis(500), Duration::from_secs(2))
        .lasting(Duration::from_millis(500), Duration::from_secs(3))
        .protect("client")
        .weights(3, 0, 2, 2, 0, 0)
        .start(&[server, client]);
    while !done.get() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    verify(&acked, &grpc_url, &http_url).await;
}

/// After healing every fault, every acknowledged put must read back over gRPC and HTTP.
async fn verify(acked: &Acked, grpc_url: &str, http_url: &str) {
    let unverified: Acked = Rc::new(RefCell::new(acked.borrow().clone()));
    let checking = unverified.clone();
    let (grpc_url, http_url) = (grpc_url.to_owned(), http_url.to_owned());
    tokio::task::spawn_local(async move {
        let mut grpc = tonic_kv::grpc::client(&grpc_url).unwrap();
        let http = tonic_kv::http::client();
        loop {
            let left: Vec<(String, String)> = checking.borrow().clone().into_iter().collect();
            if left.is_empty() {
                return;
            }
            for (key, value) in left {
                let (Ok(over_grpc), Ok(over_http)) = (
                    tonic_kv::grpc::get(&mut grpc, &key).await,
                    tonic_kv::http::fetch(&http, &http_url, &key).await,
                ) else {
                    continue;
                };
                assert_eq!(
                    over_grpc.as_deref(),
                    Some(value.as_str()),
                    "acknowledged put {key}={value} lost (gRPC read {over_grpc:?})"
                );
                assert_eq!(
                    over_http.as_deref(),
                    Some(value.as_str()),
                    "acknowledged put {key}={value} lost (HTTP read {over_http:?})"
                );
                checking.borrow_mut().remove(&key);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    crashtest::check::liveness::converge(Duration::from_secs(60), || {
        unverified
            .borrow()
            .keys()
            .map(|k| format!("reading back {k}"))
            .collect()
    })
    .await;
}
