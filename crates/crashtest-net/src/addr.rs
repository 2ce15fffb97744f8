//! Addresses: each node's IP, name resolution by node name, and [`ToSocketAddrs`].
//!
//! Node `i` (`NodeId::index`) has the IPv4 address `10.0.0.0 + i`: the supervisor (the test
//! body) is `10.0.0.0`, the first node created `10.0.0.1`, the 256th `10.0.1.0`. A node's name
//! resolves to its address, as a cluster's DNS would, and `localhost` to `127.0.0.1`; loopback
//! addresses (`127.0.0.0/8`, `::1`) reach the calling node itself. Resolution is synchronous
//! and never fails by chance: naming is not part of the fault model.
//!
//! Addresses outside `10.0.0.0/8` and loopback belong to no node: connecting there fails with
//! `NetworkUnreachable`, and datagrams sent there vanish.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use crashtest_core::node::{self, NodeId};
use crashtest_core::plumbing;
use crashtest_io::SimOrReal;

use crate::fabric;

/// The first address of the simulated network (the supervisor's).
const BASE: u32 = u32::from_be_bytes([10, 0, 0, 0]);
/// Node indexes that fit in `10.0.0.0/8`.
const MAX_NODES: u32 = 1 << 24;

/// The address of `node`.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
/// crashtest::Sim::new(1).run(async {
///     let n = crashtest::node::create("db", || async {});
///     assert_eq!(crashtest::net::ip_of(n.id()).to_string(), "10.0.0.1");
/// }).unwrap();
/// ```
pub fn ip_of(node: NodeId) -> IpAddr {
    IpAddr::V4(v4_of(node.index() as u32))
}

/// The address of the node of index `index`.
pub(crate) fn v4_of(index: u32) -> Ipv4Addr {
    assert!(
        index < MAX_NODES,
        "node {index} has no address: the simulated network holds 2^24 nodes"
    );
    Ipv4Addr::from(BASE + index)
}

/// Where an IP address leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// The node of this index.
    Node(u32),
    /// The calling node itself.
    Loopback,
    /// No node: outside the simulated network.
    Nowhere,
}

/// Where `ip` leads.
pub(crate) fn place_of(ip: IpAddr) -> Place {
    // Connecting to the unspecified address reaches the local host, as on Linux.
    if ip.is_loopback() || ip.is_unspecified() {
        return Place::Loopback;
    }
    match ip {
        IpAddr::V4(v4) => {
            let offset = u32::from(v4).wrapping_sub(BASE);
            if offset < MAX_NODES {
                Place::Node(offset)
            } else {
                Place::Nowhere
            }
        }
        IpAddr::V6(_) => Place::Nowhere,
    }
}

/// Checks that a socket of the node of `index` may bind `ip`: unspecified, loopback or its
/// own address.
pub(crate) fn check_bind_ip(index: u32, ip: IpAddr) -> io::Result<()> {
    if ip.is_unspecified() || ip.is_loopback() || place_of(ip) == Place::Node(index) {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::AddrNotAvailable,
            "cannot assign requested address",
        ))
    }
}

/// Things that name one or more socket addresses: `SocketAddr`s, `(ip, port)`,
/// `(host, port)` and `"host:port"` strings. Shaped like `tokio::net::ToSocketAddrs`, and
/// sealed like it.
///
/// Inside a simulation a host is an IP literal, `localhost` or a node's name, resolved against
/// the simulated cluster; outside one it is resolved by the system, as tokio does.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
/// # crashtest::Sim::new(1).run(async {
/// crashtest::node::create("db", || async {});
/// let addrs: Vec<_> = crashtest::net::lookup_host(("db", 5432)).await.unwrap().collect();
/// assert_eq!(addrs, ["10.0.0.1:5432".parse().unwrap()]);
/// # }).unwrap();
/// ```
pub trait ToSocketAddrs: sealed::ToTarget {}

pub(crate) mod sealed {
    use std::net::SocketAddr;

    /// What an address argument names, before resolution.
    #[allow(
        unreachable_pub,
        reason = "the sealed-trait pattern needs public items in a private module"
    )]
    #[derive(Debug)]
    pub enum Target {
        /// Addresses given as such.
        Addrs(Vec<SocketAddr>),
        /// A `"host:port"` string.
        HostPort(String),
        /// A host name and a port.
        Host(String, u16),
    }

    /// The conversion step, hidden so that the trait stays sealed.
    #[allow(
        unreachable_pub,
        reason = "the sealed-trait pattern needs public items in a private module"
    )]
    pub trait ToTarget {
        /// What `self` names.
        fn target(&self) -> Target;
    }
}

use sealed::{Target, ToTarget};

/// Resolves `host` to the addresses it names, like `tokio::net::lookup_host`.
///
/// # Errors
///
/// `NotFound` if no node has that name, `InvalidInput` if the port is missing or malformed;
/// outside a simulation, the system resolver's errors.
///
/// # Cancel safety
///
/// Cancel safe: resolution has no effect to undo. Inside a simulation it completes in its first
/// poll; outside one a dropped lookup is abandoned (tokio's runs on its blocking pool, whose
/// answer is then thrown away).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
/// # crashtest::Sim::new(1).run(async {
/// crashtest::node::create("cache", || async {});
/// let addr = crashtest::net::lookup_host("cache:6379").await.unwrap().next().unwrap();
/// assert_eq!(addr.to_string(), "10.0.0.1:6379");
/// assert!(crashtest::net::lookup_host("nope:1").await.is_err());
/// # }).unwrap();
/// ```
pub async fn lookup_host<T: ToSocketAddrs>(
    host: T,
) -> io::Result<impl Iterator<Item = SocketAddr>> {
    let target = host.target();
    let addrs = if plumbing::is_simulation() {
        resolve(target)?
    } else {
        resolve_real(target).await?
    };
    Ok(addrs.into_iter())
}

/// Resolves a host name (no port) to an IP in the running simulation, at once: an IP
/// literal to itself, `localhost` to `127.0.0.1`, a node's name to its address (see the
/// module docs). [`lookup_host`] resolves host names this way; this is for code that must
/// answer without awaiting, such as a C resolver's stand-in.
///
/// # Errors
///
/// `NotFound` if no node has that name.
///
/// # Panics
///
/// Panics if `host` is a name other than `localhost` and no simulation runs on this thread.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
/// # crashtest::Sim::new(1).run(async {
/// crashtest::node::create("db", || async {});
/// assert_eq!(crashtest::net::resolve_host("db").unwrap().to_string(), "10.0.0.1");
/// assert_eq!(crashtest::net::resolve_host("localhost").unwrap().to_string(), "127.0.0.1");
/// assert!(crashtest::net::resolve_host("example.com").is_err());
/// # }).unwrap();
/// ```
pub fn resolve_host(host: &str) -> io::Result<IpAddr> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(ip);
    }
    if host.eq_ignore_ascii_case("localhost") {
        return Ok(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    match node::lookup(host) {
        Some(found) => {
            fabric::net().learn(found.id());
            Ok(ip_of(found.id()))
        }
        None => Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("failed to lookup address information: no node is called {host:?}"),
        )),
    }
}

fn resolve_host_port(text: &str) -> io::Result<SocketAddr> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let invalid = || io::Error::new(io::ErrorKind::InvalidInput, "invalid socket address");
    let (host, port) = text.rsplit_once(':').ok_or_else(invalid)?;
    let port: u16 = port
        .parse()
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "invalid port value"))?;
    Ok(SocketAddr::new(resolve_host(host)?, port))
}

/// Resolves a target in the simulated cluster.
fn resolve(target: Target) -> io::Result<Vec<SocketAddr>> {
    match target {
        Target::Addrs(addrs) => Ok(addrs),
        Target::HostPort(text) => Ok(vec![resolve_host_port(&text)?]),
        Target::Host(host, port) => Ok(vec![SocketAddr::new(resolve_host(&host)?, port)]),
    }
}

/// Resolves a target with the system's resolver (outside a simulation).
async fn resolve_real(target: Target) -> io::Result<Vec<SocketAddr>> {
    match target {
        Target::Addrs(addrs) => Ok(addrs),
        Target::HostPort(text) => Ok(tokio::net::lookup_host(text).await?.collect()),
        Target::Host(host, port) => Ok(tokio::net::lookup_host((host.as_str(), port))
            .await?
            .collect()),
    }
}

/// Resolves `addr` and opens a socket on it, in one of two worlds.
///
/// Outside a simulation `real` gets every address (tokio's `bind` and `connect` try them in
/// turn). Inside one, `sim` tries each address in turn and the first that succeeds wins, as
/// the real calls do; if none does, the last error is returned. This is the one preamble of
/// `TcpStream::connect`, `TcpListener::bind` and `UdpSocket::bind`.
pub(crate) async fn open<A, S, R, RealFut, SimFut>(
    addr: &A,
    real: impl FnOnce(Vec<SocketAddr>) -> RealFut,
    mut sim: impl FnMut(SocketAddr) -> SimFut,
) -> io::Result<SimOrReal<S, R>>
where
    A: ToSocketAddrs + ?Sized,
    RealFut: Future<Output = io::Result<R>>,
    SimFut: Future<Output = io::Result<S>>,
{
    let addrs = resolve_all(addr).await?;
    if !plumbing::is_simulation() {
        return real(addrs).await.map(SimOrReal::Real);
    }
    let tried = addrs.len();
    let mut last = None;
    for addr in addrs {
        match sim(addr).await {
            Ok(opened) => return Ok(SimOrReal::Sim(opened)),
            Err(err) => last = Some(err),
        }
    }
    assert!(tried > 0, "resolve_all returns at least one address");
    Err(last.expect("every address was tried and failed"))
}

/// Resolves `addrs` for a socket call, failing on an empty list as the OS would.
pub(crate) async fn resolve_all<A: ToSocketAddrs + ?Sized>(
    addrs: &A,
) -> io::Result<Vec<SocketAddr>> {
    let target = addrs.target();
    let resolved = if plumbing::is_simulation() {
        resolve(target)?
    } else {
        resolve_real(target).await?
    };
    if resolved.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "could not resolve to any address",
        ));
    }
    Ok(resolved)
}

macro_rules! addresses {
    ($($ty:ty => |$this:ident| $body:expr;)*) => {$(
        impl ToSocketAddrs for $ty {}
        impl ToTarget for $ty {
            fn target(&self) -> Target {
                let $this = self;
                $body
            }
        }
    )*};
}

addresses! {
    SocketAddr => |a| Target::Addrs(vec![*a]);
    SocketAddrV4 => |a| Target::Addrs(vec![SocketAddr::V4(*a)]);
    SocketAddrV6 => |a| Target::Addrs(vec![SocketAddr::V6(*a)]);
    (IpAddr, u16) => |a| Target::Addrs(vec![SocketAddr::new(a.0, a.1)]);
    (Ipv4Addr, u16) => |a| Target::Addrs(vec![SocketAddr::new(IpAddr::V4(a.0), a.1)]);
    (Ipv6Addr, u16) => |a| Target::Addrs(vec![SocketAddr::new(IpAddr::V6(a.0), a.1)]);
    (&str, u16) => |a| host_target(a.0, a.1);
    (String, u16) => |a| host_target(&a.0, a.1);
    str => |a| match a.parse() {
        Ok(addr) => Target::Addrs(vec![addr]),
        Err(_) => Target::HostPort(a.to_owned()),
    };
    String => |a| a.as_str().target();
    [SocketAddr] => |a| Target::Addrs(a.to_vec());
}

fn host_target(host: &str, port: u16) -> Target {
    match host.parse() {
        Ok(ip) => Target::Addrs(vec![SocketAddr::new(ip, port)]),
        Err(_) => Target::Host(host.to_owned(), port),
    }
}

impl<T: ToSocketAddrs + ?Sized> ToSocketAddrs for &T {}
impl<T: ToSocketAddrs + ?Sized> ToTarget for &T {
    fn target(&self) -> Target {
        (**self).target()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_addresses_round_trip() {
        for index in [0, 1, 255, 256, 70_000] {
            assert_eq!(place_of(IpAddr::V4(v4_of(index))), Place::Node(index));
        }
        assert_eq!(v4_of(257).to_string(), "10.0.1.1");
    }

    #[test]
    fn loopback_and_foreign_addresses_are_told_apart() {
        assert_eq!(place_of("127.0.0.1".parse().unwrap()), Place::Loopback);
        assert_eq!(place_of("::1".parse().unwrap()), Place::Loopback);
        assert_eq!(place_of("192.168.1.1".parse().unwrap()), Place::Nowhere);
        assert_eq!(place_of("11.0.0.1".parse().unwrap()), Place::Nowhere);
    }

    #[test]
    fn literal_addresses_resolve_without_a_simulation() {
        let addrs = resolve("10.0.0.3:80".target()).unwrap();
        assert_eq!(addrs, ["10.0.0.3:80".parse().unwrap()]);
        assert_eq!(
            resolve(("127.0.0.1", 5).target()).unwrap(),
            ["127.0.0.1:5".parse().unwrap()]
        );
        assert_eq!(
            resolve("localhost:9".target()).unwrap(),
            ["127.0.0.1:9".parse().unwrap()]
        );
        let err = resolve("10.0.0.3".target()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }
}
