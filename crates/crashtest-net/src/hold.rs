//! Ports held for sockets the network does not own yet.
//!
//! Inside a simulation the determinism guard answers std's `socket()` with a placeholder
//! (see `crashtest-guard`): std's `TcpListener::bind` and `UdpSocket::bind` make one, bind it
//! and, for a listener, listen, long before a tokio stand-in adopts it and binds it on the
//! simulated network. Linux takes the port at `bind` (or picks one there for port 0, or at
//! `listen` for an unbound socket), and programs rely on it: they read the port with
//! `local_addr` and hand it to their clients, and a second bind of the same port fails with
//! `AddrInUse` at once. So the placeholder takes its port here, as a [`PortHold`]: the port
//! is the node's and taken, no socket, listener or connection of the simulated network gets
//! it, until the hold is dropped, which frees it. The adoption drops the hold just before the
//! stand-in binds the port: a listener or UDP socket binds it at once, in the same poll, so
//! nothing can take it in between; a `TcpSocket` adopted for a connect (hyper-util's
//! connector) binds it when it connects, which such a library does next. The stand-in's own
//! `TcpSocket` holds its port here from `bind` to its `listen` or `connect` too.
//!
//! One port serves one socket per node and protocol, so two binds Linux allows fail here
//! with `AddrInUse`: `SO_REUSEPORT` sockets sharing a port, and an `IPV6_V6ONLY` socket on
//! `[::]` beside one on `0.0.0.0` (the simulated network bound neither pair before either).
//!
//! Invariants: a hold owns its port under an id of the network's socket counter, so a port
//! freed by a kill and bound again is never freed by the old hold's drop (a release names its
//! owner). A killed node's holds end with it, as a dead process's descriptors close.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;

use crashtest_core::node::NodeId;

use crate::fabric::{self, State};
use crate::ports::Proto;

/// A port taken on the calling node for a socket the network does not own yet; freed when
/// dropped.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub use crashtest_net as net; }
/// crashtest::Sim::new(1).run(async {
///     let hold = crashtest::net::hold_port("0.0.0.0:0".parse().unwrap(), false).unwrap();
///     let port = hold.port();
///     assert_ne!(port, 0);
///     // Taken: a listener cannot bind it until the hold is dropped.
///     assert!(crashtest::net::TcpListener::bind(("0.0.0.0", port)).await.is_err());
///     drop(hold);
///     assert!(crashtest::net::TcpListener::bind(("0.0.0.0", port)).await.is_ok());
/// }).unwrap();
/// ```
#[derive(Debug)]
pub struct PortHold {
    /// The run whose network holds the port: a run number, not a pointer, so that a hold is
    /// `Send` like the sockets that keep one (a bound `TcpSocket` of the tokio stand-in).
    run: u32,
    port: u16,
    /// Its id of the network's socket counter, under which the port table lists it.
    owner: u64,
}

impl PortHold {
    /// The port held.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for PortHold {
    fn drop(&mut self) {
        // A hold may outlive its run (a descriptor leaked past it): then nothing is left to
        // free.
        let Some(net) = fabric::try_net_of(self.run) else {
            return;
        };
        let Ok(mut st) = net.state.try_borrow_mut() else {
            panic!("a port hold was dropped under a borrow of the network")
        };
        st.end_hold(self.owner);
    }
}

/// Takes `addr`'s port (a free ephemeral one for port 0) on the calling node, for TCP or, if
/// `datagram`, UDP: `AddrInUse` if the port is taken, `AddrNotAvailable` if the IP is another
/// node's.
///
/// # Panics
///
/// Panics outside a simulation.
pub fn hold_port(addr: SocketAddr, datagram: bool) -> io::Result<PortHold> {
    let net = fabric::net();
    let node = fabric::current_node();
    let proto = if datagram { Proto::Udp } else { Proto::Tcp };
    let mut guard = net.state.borrow_mut();
    let st = &mut *guard;
    let (owner, port) = st.bind_port(node, proto, addr)?;
    let index = node.index() as u32;
    assert!(port != 0, "a held port is a real one");
    assert!(
        st.holds.held.insert(owner, (index, proto, port)).is_none(),
        "a new hold has an id of its own"
    );
    Ok(PortHold {
        run: net.run,
        port,
        owner,
    })
}

/// The holds in force, by owner id.
#[derive(Debug, Default)]
pub(crate) struct Holds {
    held: BTreeMap<u64, (u32, Proto, u16)>,
}

impl State {
    /// Frees hold `owner`'s port, unless a kill already did.
    fn end_hold(&mut self, owner: u64) {
        if let Some((node, proto, port)) = self.holds.held.remove(&owner) {
            self.ports.release(node, proto, port, owner);
        }
        assert!(
            !self.holds.held.contains_key(&owner),
            "an ended hold is no longer held"
        );
    }

    /// A node was killed: its holds end, as a dead process's descriptors close.
    pub(crate) fn end_holds_of(&mut self, node: NodeId) {
        let index = node.index() as u32;
        let ended: Vec<u64> = self
            .holds
            .held
            .iter()
            .filter(|(_, (held_node, _, _))| *held_node == index)
            .map(|(&owner, _)| owner)
            .collect();
        for owner in ended {
            self.end_hold(owner);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashtest_core::{Sim, node};

    #[test]
    fn a_held_port_is_taken_until_dropped_and_a_kill_frees_it() {
        Sim::new(3)
            .run(async {
                let server = node::create("server", || async {
                    let hold = hold_port("0.0.0.0:9000".parse().unwrap(), true).unwrap();
                    let again = hold_port("0.0.0.0:9000".parse().unwrap(), true);
                    assert_eq!(again.unwrap_err().kind(), io::ErrorKind::AddrInUse);
                    // TCP and UDP ports are apart, as on Linux.
                    drop(hold_port("0.0.0.0:9000".parse().unwrap(), false).unwrap());
                    // Leaked, as a descriptor a process never closes: its death frees it.
                    std::mem::forget(hold);
                    std::future::pending::<()>().await;
                });
                crashtest_core::time::sleep(std::time::Duration::from_millis(1)).await;
                let index = server.id().index() as u32;
                let net = fabric::net();
                assert!(
                    net.state
                        .borrow()
                        .ports
                        .owner(index, Proto::Udp, 9000)
                        .is_some()
                );
                assert_eq!(
                    net.state.borrow().ports.owner(index, Proto::Tcp, 9000),
                    None
                );
                server.kill();
                assert_eq!(
                    net.state.borrow().ports.owner(index, Proto::Udp, 9000),
                    None
                );
            })
            .unwrap();
    }

    #[test]
    fn another_nodes_address_cannot_be_held() {
        Sim::new(3)
            .run(async {
                node::create("other", std::future::pending);
                let other = crate::ip_of(node::lookup("other").unwrap().id());
                let error = hold_port(SocketAddr::new(other, 80), false).unwrap_err();
                assert_eq!(error.kind(), io::ErrorKind::AddrNotAvailable);
            })
            .unwrap();
    }
}
