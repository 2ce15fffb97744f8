//! The port table: which socket owns which port of which node.
//!
//! A port is owned by one socket per node and protocol: a listener or UDP socket bound to it,
//! or the client end of a TCP connection given it as its ephemeral port. Ephemeral ports are
//! drawn from Linux's default range (`ip_local_port_range`, 32768–60999) starting at a seeded
//! random point, then probed upwards, so they are deterministic and spread like real ones.
//!
//! Invariant: a release names its owner, so a socket closed late (after its node was killed
//! and restarted and the port bound again) cannot free a port that is no longer its own.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::io;

use crashtest_core::rng::Rng;

use crate::errors;

/// The transport a port belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Proto {
    Tcp,
    Udp,
}

const EPHEMERAL_FIRST: u16 = 32768;
const EPHEMERAL_LAST: u16 = 60999;

#[derive(Debug, Default)]
pub(crate) struct Ports {
    owners: BTreeMap<(u32, Proto, u16), u64>,
}

impl Ports {
    /// Gives `port` (or, for 0, an ephemeral port) of `node` to `owner`, as a bind does:
    /// `AddrInUse` if it is taken, or if no ephemeral port is free (Linux's bind says
    /// `EADDRINUSE` there; only a connect says `EADDRNOTAVAIL`).
    pub(crate) fn bind(
        &mut self,
        node: u32,
        proto: Proto,
        port: u16,
        owner: u64,
        rng: &mut Rng,
    ) -> io::Result<u16> {
        if port == 0 {
            return self
                .ephemeral(node, proto, owner, rng)
                .map_err(|_| errors::address_in_use());
        }
        match self.owners.entry((node, proto, port)) {
            Entry::Occupied(_) => Err(errors::address_in_use()),
            Entry::Vacant(slot) => {
                slot.insert(owner);
                Ok(port)
            }
        }
    }

    /// Gives a free ephemeral port of `node` to `owner`.
    pub(crate) fn ephemeral(
        &mut self,
        node: u32,
        proto: Proto,
        owner: u64,
        rng: &mut Rng,
    ) -> io::Result<u16> {
        let span = u64::from(EPHEMERAL_LAST - EPHEMERAL_FIRST) + 1;
        let start = rng.below_inclusive(span - 1);
        for step in 0..span {
            let port = EPHEMERAL_FIRST + ((start + step) % span) as u16;
            assert!(
                (EPHEMERAL_FIRST..=EPHEMERAL_LAST).contains(&port),
                "an ephemeral port is in Linux's range"
            );
            if let Entry::Vacant(slot) = self.owners.entry((node, proto, port)) {
                slot.insert(owner);
                return Ok(port);
            }
        }
        Err(errors::address_not_available())
    }

    /// The owner of `port` of `node`.
    #[inline]
    pub(crate) fn owner(&self, node: u32, proto: Proto, port: u16) -> Option<u64> {
        self.owners.get(&(node, proto, port)).copied()
    }

    /// Frees `port` of `node` if `owner` still holds it.
    pub(crate) fn release(&mut self, node: u32, proto: Proto, port: u16, owner: u64) {
        if let Entry::Occupied(held) = self.owners.entry((node, proto, port))
            && *held.get() == owner
        {
            held.remove();
        }
        assert_ne!(
            self.owner(node, proto, port),
            Some(owner),
            "a released port no longer belongs to its owner"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_port_is_refused_to_another_owner() {
        let mut ports = Ports::default();
        let mut rng = Rng::seed_from(1);
        assert_eq!(ports.bind(1, Proto::Tcp, 80, 7, &mut rng).unwrap(), 80);
        let err = ports.bind(1, Proto::Tcp, 80, 8, &mut rng).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AddrInUse);
        assert_eq!(ports.bind(1, Proto::Udp, 80, 8, &mut rng).unwrap(), 80);
        assert_eq!(ports.bind(2, Proto::Tcp, 80, 9, &mut rng).unwrap(), 80);
    }

    #[test]
    fn release_by_a_former_owner_is_ignored() {
        let mut ports = Ports::default();
        let mut rng = Rng::seed_from(1);
        ports.bind(1, Proto::Tcp, 80, 7, &mut rng).unwrap();
        ports.release(1, Proto::Tcp, 80, 7);
        ports.bind(1, Proto::Tcp, 80, 8, &mut rng).unwrap();
        ports.release(1, Proto::Tcp, 80, 7);
        assert_eq!(ports.owner(1, Proto::Tcp, 80), Some(8));
    }

    #[test]
    fn ephemeral_ports_are_in_range_and_distinct() {
        let mut ports = Ports::default();
        let mut rng = Rng::seed_from(5);
        let mut seen = std::collections::BTreeSet::new();
        for owner in 0..500 {
            let port = ports.bind(1, Proto::Tcp, 0, owner, &mut rng).unwrap();
            assert!((EPHEMERAL_FIRST..=EPHEMERAL_LAST).contains(&port));
            assert!(seen.insert(port));
        }
    }
}
