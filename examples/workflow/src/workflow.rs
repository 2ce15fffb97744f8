//! Workflow definitions: what the engine is asked to run.
//!
//! A workflow is a numbered list of steps, each an [`Action`] on the outside world (charge a
//! card, reserve a seat, send an email). Steps run one after another: the input of a step is
//! the output the service gave for the step before it (the first step takes the workflow's
//! own input), as a booking flow passes the charge's receipt to the reservation and the
//! reservation's seat to the email. A run's workflows are drawn from the seed.

use serde::{Deserialize, Serialize};

/// An effect on the outside world, applied by the side-effect service.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Action {
    /// Charge the customer's card; the output is a receipt number.
    ChargeCard,
    /// Reserve a seat; the output is the seat.
    ReserveSeat,
    /// Issue a ticket; the output is the ticket number.
    IssueTicket,
    /// Send the confirmation email; the output is the message id.
    SendEmail,
}

impl Action {
    /// Every action, in the order a booking flow takes them.
    pub const ALL: [Action; 4] = [
        Action::ChargeCard,
        Action::ReserveSeat,
        Action::IssueTicket,
        Action::SendEmail,
    ];
}

/// One workflow: its id, its input and its steps, run in order.
///
/// ```
/// use workflow::{Action, Workflow};
///
/// let booking = Workflow { id: 1, input: 42, steps: vec![Action::ChargeCard, Action::SendEmail] };
/// assert_eq!(booking.steps.len(), 2);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workflow {
    /// Unique within a run.
    pub id: u32,
    /// The first step's input (say, an order number).
    pub input: u64,
    /// The actions, in the order they must take effect.
    pub steps: Vec<Action>,
}

/// Draws `count` workflows of two to four steps from the calling node's seeded stream: a
/// booking flow with some of its middle steps left out.
///
/// ```
/// crashtest::Sim::new(1).run(async {
///     let workflows = workflow::workflow::draw(5);
///     assert_eq!(workflows.len(), 5);
///     assert!(workflows.iter().all(|w| (2..=4).contains(&w.steps.len())));
/// }).unwrap();
/// ```
pub fn draw(count: u32) -> Vec<Workflow> {
    let mut rng = crashtest::rand::rng();
    (0..count)
        .map(|id| {
            rng.with(|r| {
                let [first, middle @ .., last] = Action::ALL;
                let mut steps = vec![first];
                steps.extend(middle.into_iter().filter(|_| r.boolean()));
                steps.push(last);
                Workflow {
                    id,
                    input: r.next_u64(),
                    steps,
                }
            })
        })
        .collect()
}
