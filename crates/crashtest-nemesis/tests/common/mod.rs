//! What the nemesis's integration tests share.

use crashtest::node::{Node, NodeStatus};
use crashtest::plumbing;

/// Fails the run at the first step after which more than `max` of `nodes` are down (dead or
/// paused): the bound every nemesis action and pattern must keep.
pub(crate) fn check_at_most_down(nodes: &[Node], max: usize) {
    let watched = nodes.to_vec();
    plumbing::checks::add_step_check(format!("at most {max} down"), 1, move || {
        let down = watched
            .iter()
            .filter(|n| n.status() != NodeStatus::Running)
            .count();
        if down > max {
            return Err(format!("{down} nodes down"));
        }
        Ok(())
    });
}
