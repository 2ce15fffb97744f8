//! Random partitions and clogging, drawn from the seed ([`crate::RandomPartitions`],
//! [`crate::RandomClogging`]).
//!
//! Each runs as a chain of timer callbacks tagged with the configuration's generation; a new
//! `configure` or the run's heal bumps the generation, so the chains of the old one stop at
//! their next step. They act on the nodes the network knows, never on the supervisor (the
//! test's own client). While a chain runs there is always a timer armed, so a run with random
//! faults never ends in "deadlock": its body must finish.
//!
//! Each fault is drawn in full (who, how, how long) before `fabric::applies` rules on it, and
//! the partition state machine follows its own drawn course whether or not a partition was
//! applied, so that a replay with faults masked draws the same numbers.

use std::rc::Rc;
use std::time::Duration;

use crashtest_core::node::NodeId;
use crashtest_core::plumbing;
use crashtest_protocol::NetNote;

use crate::config::nanos;
use crate::control::{clog_link_until, clog_node_until, release_held, start_swizzle, swizzle_plan};
use crate::fabric::{Net, State, applies, now, trace};
use crate::links::Cause;

/// Starts the random fault chains of the configuration just installed.
pub(crate) fn start(net: &Rc<Net>) {
    let (generation, partitions, clogging) = {
        let mut st = net.state.borrow_mut();
        st.random_partition = false;
        let partitions = st.config.random_partitions.map(|p| nanos(p.every));
        let clogging = st
            .config
            .random_clogging
            .map(|c| st.rng.below_inclusive(nanos(c.every).saturating_mul(2)));
        (st.generation, partitions, clogging)
    };
    if let Some(every) = partitions {
        arm(net, now().saturating_add(every), move |net| {
            partition_step(net, generation)
        });
    }
    if let Some(gap) = clogging {
        arm(net, now().saturating_add(gap), move |net| {
            clog_step(net, generation)
        });
    }
}

fn arm(net: &Rc<Net>, at: u64, step: impl FnOnce(&Rc<Net>) + 'static) {
    let net = Rc::clone(net);
    plumbing::call_at(at, move || step(&net));
}

/// The nodes random faults may touch: every known node but the supervisor.
fn members(st: &State) -> Vec<NodeId> {
    st.nodes
        .values()
        .copied()
        .filter(|&n| n != NodeId::SUPERVISOR)
        .collect()
}

fn names(st: &State, nodes: &[NodeId]) -> String {
    nodes
        .iter()
        .map(|n| st.name_of(n.index() as u32))
        .collect::<Vec<_>>()
        .join(",")
}

/// One step of the partition state machine.
fn partition_step(net: &Rc<Net>, generation: u64) {
    let mut healed = false;
    let next = {
        let mut guard = net.state.borrow_mut();
        let st = &mut *guard;
        if st.generation != generation {
            return;
        }
        let Some(config) = st.config.random_partitions else {
            return;
        };
        if st.random_partition {
            if st.rng.chance(config.heal) {
                st.random_partition = false;
                let cut = st.links.cut_for(Cause::Random);
                healed = !cut.is_empty();
                for (from, to) in cut {
                    st.links.heal(from, to, Cause::Random);
                }
                if healed {
                    trace(NodeId::SUPERVISOR, NetNote::RandomHeal);
                }
            }
        } else {
            let mut nodes = members(st);
            if st.rng.chance(config.start) && nodes.len() >= 2 {
                st.rng.shuffle(&mut nodes);
                let split = st.rng.range_inclusive(1, nodes.len() as u64 - 1) as usize;
                let one_way = st.rng.chance(config.one_way);
                st.random_partition = true;
                let (side, rest) = nodes.split_at(split);
                let arrow = if one_way { "-/->" } else { "<-/->" };
                let (left, right) = (names(st, side), names(st, rest));
                if applies(side[0], || {
                    format!("random partition {{{left}}} {arrow} {{{right}}}")
                }) {
                    for &a in side {
                        for &b in rest {
                            let (a, b) = (a.index() as u32, b.index() as u32);
                            st.links.cut(a, b, Cause::Random);
                            if !one_way {
                                st.links.cut(b, a, Cause::Random);
                            }
                        }
                    }
                    let note = NetNote::RandomPartition {
                        split: split as u64,
                        one_way,
                    };
                    trace(side[0], note);
                }
            }
        }
        now().saturating_add(nanos(config.every))
    };
    if healed {
        release_held(net);
    }
    arm(net, next, move |net| partition_step(net, generation));
}

/// A clog duration up to `max`: log-uniform over ten halvings, so short clogs are common and
/// long ones rare (FoundationDB draws `10·e^(−10u)` seconds).
fn clog_duration(st: &mut State, max: u64) -> u64 {
    let top = max >> st.rng.below_inclusive(10);
    let duration = st.rng.range_inclusive(top / 2, top);
    assert!(
        duration <= max,
        "a clog lasts at most the configured maximum"
    );
    duration
}

/// What one clogging event does, drawn in full before it is ruled on.
enum Clogging {
    Swizzle(Vec<NodeId>, u64),
    Clogs(NodeId, Option<(NodeId, NodeId)>, u64, u64),
}

/// One clogging event.
fn clog_step(net: &Rc<Net>, generation: u64) {
    let (next, event) = {
        let mut guard = net.state.borrow_mut();
        let st = &mut *guard;
        if st.generation != generation {
            return;
        }
        let Some(config) = st.config.random_clogging else {
            return;
        };
        let nodes = members(st);
        let max = nanos(config.max);
        let mut event = None;
        if !nodes.is_empty() {
            let duration = clog_duration(st, max);
            if st.rng.chance(config.swizzle) {
                event = Some(Clogging::Swizzle(nodes, duration));
            } else {
                let node = nodes[st.rng.index(nodes.len())];
                let link = (nodes.len() >= 2).then(|| {
                    let a = nodes[st.rng.index(nodes.len())];
                    let others: Vec<NodeId> = nodes.iter().copied().filter(|&n| n != a).collect();
                    (a, others[st.rng.index(others.len())])
                });
                let link_duration = clog_duration(st, max);
                event = Some(Clogging::Clogs(node, link, duration, link_duration));
            }
        }
        let gap = st
            .rng
            .below_inclusive(nanos(config.every).saturating_mul(2));
        (now().saturating_add(gap), event)
    };
    match event {
        Some(Clogging::Swizzle(nodes, duration)) => {
            let plan = swizzle_plan(net, &nodes, duration);
            let picked = {
                let st = net.state.borrow();
                let picked: Vec<NodeId> = plan.iter().map(|clog| clog.node).collect();
                names(&st, &picked)
            };
            let span = Duration::from_nanos(duration);
            let first = plan.first().map_or(NodeId::SUPERVISOR, |clog| clog.node);
            if applies(first, || {
                format!("random swizzle {{{picked}}} over {span:?}")
            }) {
                start_swizzle(net, plan);
            }
        }
        Some(Clogging::Clogs(node, link, duration, link_duration)) => {
            let (name, link_names) = {
                let st = net.state.borrow();
                let name = st.name_of(node.index() as u32);
                let link_names = link.map(|(a, b)| names(&st, &[a, b]));
                (name, link_names)
            };
            let span = Duration::from_nanos(duration);
            if applies(node, || {
                format!("random clog: every link of {name} held for {span:?}")
            }) {
                clog_node_until(net, node, now().saturating_add(duration));
            }
            if let (Some((a, b)), Some(pair)) = (link, link_names) {
                let span = Duration::from_nanos(link_duration);
                if applies(a, || {
                    format!("random clog: link {{{pair}}} held for {span:?}")
                }) {
                    clog_link_until(net, a, b, now().saturating_add(link_duration));
                }
            }
        }
        None => {}
    }
    arm(net, next, move |net| clog_step(net, generation));
}
