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

use crate::errors;
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

/// The text of a fault between two endpoints, `"{kind} {from} -> {to}{what}"`, as `format!`
/// writes it. A swarm run applies thousands of packet faults, and formatting two socket
/// addresses through `core::fmt` cost more than the rest of the datagram's send.
pub(crate) fn between(kind: &str, from: SocketAddr, to: SocketAddr, what: &str) -> String {
    let mut text = String::with_capacity(kind.len() + what.len() + 48);
    text.push_str(kind);
    text.push(' ');
    push_socket_addr(&mut text, from);
    text.push_str(" -> ");
    push_socket_addr(&mut text, to);
    text.push_str(what);
    debug_assert!(
        text.starts_with(kind) && text.ends_with(what) && text.contains(" -> "),
        "a fault text names its kind, its two endpoints and what happened: {text:?}"
    );
    text
}

/// Appends `addr` as its `Display` writes it: IPv4 ones digit by digit, IPv6 ones (which
/// no simulated node has) through `core::fmt`.
fn push_socket_addr(text: &mut String, addr: SocketAddr) {
    match addr {
        SocketAddr::V4(v4) => {
            let mut digits = itoa::Buffer::new();
            for (i, octet) in v4.ip().octets().into_iter().enumerate() {
                if i > 0 {
                    text.push('.');
                }
                text.push_str(digits.format(octet));
            }
            text.push(':');
            text.push_str(digits.format(v4.port()));
        }
        SocketAddr::V6(v6) => {
            use std::fmt::Write;
            write!(text, "{v6}").expect("formatting into a String cannot fail");
        }
    }
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
        Err(errors::address_not_available())
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

    /// What an address argument names, before resolution, borrowed from the argument: a
    /// program that sends each datagram to `(name, port)` resolves it on every send.
    #[allow(
        unreachable_pub,
        reason = "the sealed-trait pattern needs public items in a private module"
    )]
    #[derive(Debug)]
    pub enum Target<'a> {
        /// One address given as such.
        One(SocketAddr),
        /// Addresses given as such.
        Addrs(&'a [SocketAddr]),
        /// A `"host:port"` string.
        HostPort(&'a str),
        /// A host name and a port.
        Host(&'a str, u16),
    }

    /// The conversion step, hidden so that the trait stays sealed.
    #[allow(
        unreachable_pub,
        reason = "the sealed-trait pattern needs public items in a private module"
    )]
    pub trait ToTarget {
        /// What `self` names.
        fn target(&self) -> Target<'_>;
    }
}

use sealed::{Target, ToTarget};

/// The addresses a target resolved to: one held inline (a node's name, an address given as
/// such), so that resolving allocates nothing, or several.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Resolved {
    One(SocketAddr),
    Many(Vec<SocketAddr>),
}

impl Resolved {
    pub(crate) fn as_slice(&self) -> &[SocketAddr] {
        match self {
            Resolved::One(addr) => std::slice::from_ref(addr),
            Resolved::Many(addrs) => addrs,
        }
    }

    /// The first address (a send goes there); `resolve_all` never returns none.
    pub(crate) fn first(&self) -> SocketAddr {
        *self
            .as_slice()
            .first()
            .expect("resolve_all returns at least one address")
    }
}

impl IntoIterator for Resolved {
    type Item = SocketAddr;
    // One address, or a list (an empty `Vec` allocates nothing).
    type IntoIter =
        std::iter::Chain<std::option::IntoIter<SocketAddr>, std::vec::IntoIter<SocketAddr>>;

    fn into_iter(self) -> Self::IntoIter {
        match self {
            Resolved::One(addr) => Some(addr).into_iter().chain(Vec::new()),
            Resolved::Many(addrs) => None.into_iter().chain(addrs),
        }
    }
}

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
    // An IPv4 literal starts with a digit and an IPv6 one holds a colon: a node's name is
    // neither, and is resolved on every send of a program that names its peers.
    let literal = host.starts_with(|c: char| c.is_ascii_digit()) || host.contains(':');
    if literal && let Ok(ip) = host.parse::<IpAddr>() {
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
fn resolve(target: Target<'_>) -> io::Result<Resolved> {
    match target {
        Target::One(addr) => Ok(Resolved::One(addr)),
        Target::Addrs(addrs) => Ok(Resolved::Many(addrs.to_vec())),
        Target::HostPort(text) => Ok(Resolved::One(resolve_host_port(text)?)),
        Target::Host(host, port) => Ok(Resolved::One(SocketAddr::new(resolve_host(host)?, port))),
    }
}

/// Resolves a target with the system's resolver (outside a simulation).
async fn resolve_real(target: Target<'_>) -> io::Result<Resolved> {
    match target {
        Target::One(addr) => Ok(Resolved::One(addr)),
        Target::Addrs(addrs) => Ok(Resolved::Many(addrs.to_vec())),
        Target::HostPort(text) => Ok(Resolved::Many(
            tokio::net::lookup_host(text).await?.collect(),
        )),
        Target::Host(host, port) => Ok(Resolved::Many(
            tokio::net::lookup_host((host, port)).await?.collect(),
        )),
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
        return real(addrs.into_iter().collect()).await.map(SimOrReal::Real);
    }
    let tried = addrs.as_slice().len();
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
pub(crate) async fn resolve_all<A: ToSocketAddrs + ?Sized>(addrs: &A) -> io::Result<Resolved> {
    if plumbing::is_simulation() {
        return resolve_in_sim(addrs);
    }
    not_empty(resolve_real(addrs.target()).await?)
}

/// [`resolve_all`] inside a simulation, where resolving never waits: a call on a simulated
/// socket resolves without building the system resolver's future (a send to a named peer
/// resolves on every datagram).
pub(crate) fn resolve_in_sim<A: ToSocketAddrs + ?Sized>(addrs: &A) -> io::Result<Resolved> {
    not_empty(resolve(addrs.target())?)
}

fn not_empty(resolved: Resolved) -> io::Result<Resolved> {
    if resolved.as_slice().is_empty() {
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
            fn target(&self) -> Target<'_> {
                let $this = self;
                $body
            }
        }
    )*};
}

addresses! {
    SocketAddr => |a| Target::One(*a);
    SocketAddrV4 => |a| Target::One(SocketAddr::V4(*a));
    SocketAddrV6 => |a| Target::One(SocketAddr::V6(*a));
    (IpAddr, u16) => |a| Target::One(SocketAddr::new(a.0, a.1));
    (Ipv4Addr, u16) => |a| Target::One(SocketAddr::new(IpAddr::V4(a.0), a.1));
    (Ipv6Addr, u16) => |a| Target::One(SocketAddr::new(IpAddr::V6(a.0), a.1));
    (&str, u16) => |a| Target::Host(a.0, a.1);
    (String, u16) => |a| Target::Host(&a.0, a.1);
    str => |a| Target::HostPort(a);
    String => |a| Target::HostPort(a);
    [SocketAddr] => |a| Target::Addrs(a);
}

impl<T: ToSocketAddrs + ?Sized> ToSocketAddrs for &T {}
impl<T: ToSocketAddrs + ?Sized> ToTarget for &T {
    fn target(&self) -> Target<'_> {
        (**self).target()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_texts_name_their_endpoints_as_display_does() {
        for (from, to) in [
            ("10.0.0.1:5", "10.0.0.2:65535"),
            ("0.0.0.0:0", "255.255.255.255:80"),
            ("[::1]:7", "[fe80::1%2]:9"),
        ] {
            let (from, to): (SocketAddr, SocketAddr) = (from.parse().unwrap(), to.parse().unwrap());
            assert_eq!(
                between("udp datagram", from, to, " lost"),
                format!("udp datagram {from} -> {to} lost")
            );
        }
    }

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
        let one = |text: &str| Resolved::One(text.parse().unwrap());
        assert_eq!(resolve("10.0.0.3:80".target()).unwrap(), one("10.0.0.3:80"));
        assert_eq!(
            resolve(("127.0.0.1", 5).target()).unwrap(),
            one("127.0.0.1:5")
        );
        assert_eq!(resolve(("::1", 5).target()).unwrap(), one("[::1]:5"));
        assert_eq!(resolve("localhost:9".target()).unwrap(), one("127.0.0.1:9"));
        let list: [SocketAddr; 2] = ["10.0.0.1:1".parse().unwrap(), "10.0.0.2:2".parse().unwrap()];
        let many = resolve(list[..].target()).unwrap();
        assert_eq!(many.as_slice(), list);
        assert_eq!(many.first(), list[0]);
        assert_eq!(many.into_iter().collect::<Vec<_>>(), list);
        let err = resolve("10.0.0.3".target()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }
}
