//! The side-effect service: the outside world the engine acts on (a payment provider, a
//! booking system, a mail server), deduplicating requests by idempotency key.
//!
//! It applies each key once: the first request with a key draws the effect's output and
//! records the effect in the [`Ledger`]; every later request with that key gets the same
//! output and changes nothing. It takes a few milliseconds per request, as a remote system
//! does, and handles each connection in its own task. Its state is in memory: it stands for
//! the world outside the test, which the test never crashes, and the ledger it keeps is what
//! the oracle reads.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use crashtest::net::TcpListener;
use crashtest::{task, time};

use crate::protocol::{self, Connection, PORT, Reply, Request};
use crate::workflow::Action;

/// How long the service takes to apply one request, at most.
const MAX_SERVICE_TIME: Duration = Duration::from_millis(50);

/// An effect the service applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Effect {
    /// The idempotency key it was applied under.
    pub key: u64,
    /// The workflow it belongs to.
    pub workflow: u32,
    /// The step's index.
    pub step: u32,
    /// What was done.
    pub action: Action,
    /// The input it was applied with.
    pub input: u64,
    /// What it produced.
    pub output: u64,
}

/// Every effect the service applied, in order, and the output of every key it has seen.
///
/// ```
/// use workflow::{protocol::Request, service::Ledger, Action};
///
/// let mut ledger = Ledger::default();
/// let request = Request { key: 9, workflow: 0, step: 0, action: Action::ChargeCard, input: 1 };
/// assert_eq!(ledger.apply(&request, || 100), 100);
/// assert_eq!(ledger.apply(&request, || 200), 100, "a repeated key is not applied again");
/// assert_eq!(ledger.effects().len(), 1);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Ledger {
    effects: Vec<Effect>,
    outputs: BTreeMap<u64, u64>,
}

impl Ledger {
    /// Applies `request` unless its key was applied already, and returns the key's output
    /// (`fresh` draws it for a new key).
    pub fn apply(&mut self, request: &Request, fresh: impl FnOnce() -> u64) -> u64 {
        if let Some(&output) = self.outputs.get(&request.key) {
            return output;
        }
        let output = fresh();
        self.outputs.insert(request.key, output);
        self.effects.push(Effect {
            key: request.key,
            workflow: request.workflow,
            step: request.step,
            action: request.action,
            input: request.input,
            output,
        });
        output
    }

    /// The effects applied, oldest first.
    pub fn effects(&self) -> &[Effect] {
        &self.effects
    }
}

/// The service node's main: accepts connections for ever, recording effects in `ledger`.
///
/// # Panics
///
/// Panics if the port cannot be bound.
pub async fn serve(ledger: Rc<RefCell<Ledger>>) {
    let listener = TcpListener::bind(("0.0.0.0", PORT))
        .await
        .expect("the service binds its port");
    loop {
        if let Ok((stream, _)) = listener.accept().await {
            task::spawn_local(handle(protocol::framed(stream), ledger.clone()));
        }
    }
}

/// Answers the requests of one connection until it fails or closes.
async fn handle(mut connection: Connection, ledger: Rc<RefCell<Ledger>>) {
    while let Ok(request) = protocol::receive::<Request>(&mut connection).await {
        let work =
            crashtest::rand::rng().with(|r| r.below_inclusive(MAX_SERVICE_TIME.as_millis() as u64));
        time::sleep(Duration::from_millis(work)).await;
        let output = ledger
            .borrow_mut()
            .apply(&request, || crashtest::rand::rng().next_u64());
        let reply = Reply {
            key: request.key,
            output,
        };
        if protocol::send(&mut connection, &reply).await.is_err() {
            return;
        }
    }
}
