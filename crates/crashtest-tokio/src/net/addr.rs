//! Addresses: tokio's `ToSocketAddrs`, and resolving them in the simulation or for real.
//!
//! tokio's trait is sealed, so the stand-in has its own with the same implementations.
//! Resolving never leaves the simulation inside one: a literal address is itself, a host
//! name is looked up among the simulated nodes (`crashtest_hooks::net::Network::resolve`).
//! Outside, a name goes to tokio's resolver.

use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use crate::seam;

/// What can name socket addresses, like `tokio::net::ToSocketAddrs` (sealed: implemented
/// for tokio's types only).
pub trait ToSocketAddrs: sealed::Named {}

/// The hidden half of the sealed trait.
pub(crate) mod sealed {
    use std::net::SocketAddr;

    /// What an address argument names, before resolution.
    #[allow(
        unreachable_pub,
        reason = "the sealed-trait pattern needs public items in a private module"
    )]
    #[derive(Debug)]
    pub enum Name<'a> {
        /// Addresses as such.
        Addrs(Vec<SocketAddr>),
        /// A host and a port.
        Host(&'a str, u16),
        /// Text that is not an address: `host:port` (or malformed).
        Text(&'a str),
    }

    /// Says what `self` names.
    #[allow(
        unreachable_pub,
        reason = "the sealed-trait pattern needs public items in a private module"
    )]
    pub trait Named {
        /// What `self` names.
        fn name(&self) -> Name<'_>;
    }
}

use sealed::{Name, Named};

macro_rules! named {
    ($($ty:ty => |$this:ident| $name:expr;)*) => {$(
        impl ToSocketAddrs for $ty {}
        impl Named for $ty {
            fn name(&self) -> Name<'_> {
                let $this = self;
                $name
            }
        }
    )*};
}

named! {
    SocketAddr => |addr| Name::Addrs(vec![*addr]);
    SocketAddrV4 => |addr| Name::Addrs(vec![SocketAddr::V4(*addr)]);
    SocketAddrV6 => |addr| Name::Addrs(vec![SocketAddr::V6(*addr)]);
    (IpAddr, u16) => |pair| Name::Addrs(vec![SocketAddr::new(pair.0, pair.1)]);
    (Ipv4Addr, u16) => |pair| Name::Addrs(vec![SocketAddr::from(*pair)]);
    (Ipv6Addr, u16) => |pair| Name::Addrs(vec![SocketAddr::from(*pair)]);
    [SocketAddr] => |addrs| Name::Addrs(addrs.to_vec());
    str => |text| match text.parse() {
        Ok(addr) => Name::Addrs(vec![addr]),
        Err(_) => Name::Text(text),
    };
    String => |text| text.as_str().name();
    (&str, u16) => |pair| host(pair.0, pair.1);
    (String, u16) => |pair| host(&pair.0, pair.1);
}

impl<T: ToSocketAddrs + ?Sized> ToSocketAddrs for &T {}
impl<T: Named + ?Sized> Named for &T {
    fn name(&self) -> Name<'_> {
        (**self).name()
    }
}

fn host(host: &str, port: u16) -> Name<'_> {
    match host.parse() {
        Ok(ip) => Name::Addrs(vec![SocketAddr::new(ip, port)]),
        Err(_) => Name::Host(host, port),
    }
}

fn invalid(message: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

/// Splits `host:port` (std's rules: the port after the last colon).
fn split_host_port(text: &str) -> io::Result<(&str, u16)> {
    let (host, port) = text
        .rsplit_once(':')
        .ok_or_else(|| invalid("invalid socket address"))?;
    let port = port.parse().map_err(|_| invalid("invalid port value"))?;
    Ok((host, port))
}

/// The addresses `addr` names: for a simulated node, from the simulation; otherwise from
/// tokio's resolver.
pub(crate) async fn resolve<A: ToSocketAddrs + ?Sized>(addr: &A) -> io::Result<Vec<SocketAddr>> {
    let (host, port) = match addr.name() {
        Name::Addrs(addrs) => return Ok(addrs),
        Name::Host(host, port) => (host, port),
        Name::Text(text) => split_host_port(text)?,
    };
    match seam::sim() {
        Some(_) => {
            let ips = seam::network("tokio::net::lookup_host").resolve(host)?;
            Ok(ips
                .into_iter()
                .map(|ip| SocketAddr::new(ip, port))
                .collect())
        }
        None => Ok(real::net::lookup_host((host, port)).await?.collect()),
    }
}

/// Resolves `addr` for a socket call: an empty answer is an error, as the OS gives.
pub(crate) async fn resolve_some<A: ToSocketAddrs + ?Sized>(
    addr: &A,
) -> io::Result<Vec<SocketAddr>> {
    let addrs = resolve(addr).await?;
    if addrs.is_empty() {
        return Err(invalid("could not resolve to any addresses"));
    }
    Ok(addrs)
}

/// Tries `attempt` on each address in turn; the first success, or the last error.
pub(crate) async fn first_that_works<T, F>(
    addrs: Vec<SocketAddr>,
    mut attempt: impl FnMut(SocketAddr) -> F,
) -> io::Result<T>
where
    F: Future<Output = io::Result<T>>,
{
    let mut last = None;
    for addr in addrs {
        match attempt(addr).await {
            Ok(done) => return Ok(done),
            Err(err) => last = Some(err),
        }
    }
    Err(last.unwrap_or_else(|| invalid("could not resolve to any addresses")))
}

/// Resolves a host name (with a port, `host:port` or `(host, port)`) to socket addresses,
/// like `tokio::net::lookup_host`: among the simulated nodes inside a simulation.
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     crashtest::node::create("cache", || async {});
///     let addr = tokio::net::lookup_host("cache:6379").await.unwrap().next().unwrap();
///     assert_eq!(addr, crashtest::net::lookup_host("cache:6379").await.unwrap().next().unwrap());
///     assert!(tokio::net::lookup_host("nowhere:1").await.is_err());
/// }).unwrap();
/// ```
///
/// # Errors
///
/// `NotFound` for an unknown node, `InvalidInput` for a malformed address; outside a
/// simulation, the system resolver's errors.
pub async fn lookup_host<T: ToSocketAddrs>(
    host: T,
) -> io::Result<impl Iterator<Item = SocketAddr>> {
    Ok(resolve(&host).await?.into_iter())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn literal(addr: &(impl ToSocketAddrs + ?Sized)) -> Vec<SocketAddr> {
        match addr.name() {
            Name::Addrs(addrs) => addrs,
            other => panic!("not literal: {other:?}"),
        }
    }

    #[test]
    fn literal_addresses_name_themselves() {
        let v4: SocketAddr = "10.0.0.1:80".parse().unwrap();
        assert_eq!(literal("10.0.0.1:80"), [v4]);
        assert_eq!(literal(&("10.0.0.1", 80)), [v4]);
        assert_eq!(literal(&(Ipv4Addr::new(10, 0, 0, 1), 80)), [v4]);
        assert_eq!(literal(&[v4, v4][..]), [v4, v4]);
        assert_eq!(
            literal(&String::from("[::1]:9")),
            ["[::1]:9".parse().unwrap()]
        );
    }

    #[test]
    fn host_names_are_split_as_std_splits_them() {
        assert_eq!(split_host_port("db:5432").unwrap(), ("db", 5432));
        assert_eq!(
            split_host_port("db").unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        assert_eq!(
            split_host_port("db:port").unwrap_err().to_string(),
            "invalid port value"
        );
        assert!(matches!(("db", 1).name(), Name::Host("db", 1)));
    }
}
