//! Name resolution: `getaddrinfo`, answered from the simulated cluster without real DNS.
//!
//! Inside a simulation a host resolves as `crashtest::net::lookup_host` resolves it:
//! - a node's name to the node's address (`10.0.0.<index>`, see `crashtest_net::ip_of`);
//! - `localhost` to `127.0.0.1` (`::1` when only IPv6 is asked for), the calling node itself;
//! - an IP literal, loopback or not, to itself: it needs no lookup, and whether it can be
//!   reached is the business of whatever connects to it;
//! - no host (a service-only query) to the wildcard address with `AI_PASSIVE`, else loopback.
//!
//! Any other name fails the run with a message and returns `EAI_NONAME`: a simulation never
//! asks the real DNS. The simulated network is IPv4, so a name asked for as IPv6 only gets
//! its address mapped (`::ffff:10.0.0.1`) with `AI_V4MAPPED`, else `EAI_NODATA`, as for a
//! host without an IPv6 address. Services must be port numbers (`"8080"`); a service name
//! (`"http"`) would be read from the machine's `/etc/services`, so it fails the run with
//! `EAI_SERVICE`. Flags, families and socket types are checked as glibc checks them; with no
//! socket type asked for, each address comes once per type (stream, datagram, raw), as glibc
//! lists them.
//!
//! `freeaddrinfo` is not guarded: each entry of an answer is one `malloc` block holding the
//! entry and its address, with the canonical name in a block of its own, which is how glibc
//! builds its own answers and exactly what glibc's `freeaddrinfo` frees (`free` of the name,
//! then of the entry, for each). So a list is freed correctly inside the simulation or after
//! it, by whichever code holds it.
//!
//! Outside a simulation every call goes to libc after one thread-local read.

use std::ffi::{CStr, c_char, c_int};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use libc::addrinfo;

use super::next::Next;

type GetaddrinfoFn = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const addrinfo,
    *mut *mut addrinfo,
) -> c_int;

// SAFETY: the type is the C declaration of glibc's getaddrinfo.
static REAL_GETADDRINFO: Next<GetaddrinfoFn> = unsafe { Next::new(c"getaddrinfo") };

/// glibc's code for "the host has no address in the family asked for" (a GNU extension the
/// libc crate does not define).
const EAI_ADDRFAMILY: c_int = -9;

/// The flags glibc accepts in `ai_flags` (`AI_IDN` and friends included).
const KNOWN_FLAGS: c_int = libc::AI_PASSIVE
    | libc::AI_CANONNAME
    | libc::AI_NUMERICHOST
    | libc::AI_V4MAPPED
    | libc::AI_ALL
    | libc::AI_ADDRCONFIG
    | libc::AI_NUMERICSERV
    | 0x0040 // AI_IDN
    | 0x0080 // AI_CANONIDN
    | 0x0100 // AI_IDN_ALLOW_UNASSIGNED
    | 0x0200; // AI_IDN_USE_STD3_ASCII_RULES

/// A `getaddrinfo` call, read into Rust values.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Query {
    /// The host; `None` for a service-only query. Not UTF-8 is kept lossily: no node has
    /// such a name.
    node: Option<String>,
    service: Option<String>,
    flags: c_int,
    family: c_int,
    socktype: c_int,
    protocol: c_int,
}

/// One entry of an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    addr: SocketAddr,
    socktype: c_int,
    protocol: c_int,
}

/// Why a query has no answer: the `EAI_*` code, and the message to fail the run with when the
/// program should not have asked.
#[derive(Debug, PartialEq, Eq)]
struct Refusal {
    code: c_int,
    message: Option<String>,
}

impl Refusal {
    fn quiet(code: c_int) -> Refusal {
        Refusal {
            code,
            message: None,
        }
    }
}

/// The socket types an address is listed with: the one asked for, or glibc's three.
fn socket_types(socktype: c_int, protocol: c_int) -> Result<Vec<(c_int, c_int)>, Refusal> {
    let all = [
        (libc::SOCK_STREAM, libc::IPPROTO_TCP),
        (libc::SOCK_DGRAM, libc::IPPROTO_UDP),
        (libc::SOCK_RAW, 0),
    ];
    let listed: Vec<_> = match socktype {
        0 => all
            .into_iter()
            .filter(|&(_, p)| protocol == 0 || p == protocol)
            .collect(),
        libc::SOCK_STREAM | libc::SOCK_DGRAM | libc::SOCK_RAW => {
            let default = all.iter().find(|&&(t, _)| t == socktype).map(|&(_, p)| p);
            vec![(
                socktype,
                if protocol == 0 {
                    default.unwrap_or(0)
                } else {
                    protocol
                },
            )]
        }
        _ => Vec::new(),
    };
    if listed.is_empty() {
        return Err(Refusal::quiet(libc::EAI_SOCKTYPE));
    }
    Ok(listed)
}

/// The port a service names.
fn port(query: &Query) -> Result<u16, Refusal> {
    let Some(service) = &query.service else {
        return Ok(0);
    };
    if let Ok(port) = service.parse::<u16>() {
        return Ok(port);
    }
    if query.flags & libc::AI_NUMERICSERV != 0 {
        return Err(Refusal::quiet(libc::EAI_NONAME));
    }
    Err(Refusal {
        code: libc::EAI_SERVICE,
        message: Some(format!(
            "getaddrinfo was asked for the service {service:?} inside the simulation; a service \
             name is looked up on the machine (/etc/services), which the seed does not decide. \
             Give the port number instead."
        )),
    })
}

/// Answers `query` inside a simulation; `resolve` resolves a host name (not a literal) the way
/// the simulated network does.
fn resolve_query(
    query: &Query,
    resolve: impl FnOnce(&str) -> std::io::Result<IpAddr>,
) -> Result<Vec<Entry>, Refusal> {
    if query.flags & !KNOWN_FLAGS != 0 {
        return Err(Refusal::quiet(libc::EAI_BADFLAGS));
    }
    if query.node.is_none() && query.service.is_none() {
        return Err(Refusal::quiet(libc::EAI_NONAME));
    }
    if query.node.is_none() && query.flags & libc::AI_CANONNAME != 0 {
        return Err(Refusal::quiet(libc::EAI_BADFLAGS));
    }
    let family = query.family;
    if ![libc::AF_UNSPEC, libc::AF_INET, libc::AF_INET6].contains(&family) {
        return Err(Refusal::quiet(libc::EAI_FAMILY));
    }
    let types = socket_types(query.socktype, query.protocol)?;
    let port = port(query)?;
    let ip = match &query.node {
        None => {
            let passive = query.flags & libc::AI_PASSIVE != 0;
            match (family, passive) {
                (libc::AF_INET6, true) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
                (libc::AF_INET6, false) => IpAddr::V6(Ipv6Addr::LOCALHOST),
                (_, true) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                (_, false) => IpAddr::V4(Ipv4Addr::LOCALHOST),
            }
        }
        Some(host) => match host.parse::<IpAddr>() {
            Ok(IpAddr::V4(_)) if family == libc::AF_INET6 => {
                return Err(Refusal::quiet(EAI_ADDRFAMILY));
            }
            Ok(IpAddr::V6(_)) if family == libc::AF_INET => {
                return Err(Refusal::quiet(EAI_ADDRFAMILY));
            }
            Ok(ip) => ip,
            Err(_) if query.flags & libc::AI_NUMERICHOST != 0 => {
                return Err(Refusal::quiet(libc::EAI_NONAME));
            }
            Err(_) => match resolve(host) {
                Ok(IpAddr::V4(v4)) if family == libc::AF_INET6 => {
                    if v4.is_loopback() {
                        IpAddr::V6(Ipv6Addr::LOCALHOST)
                    } else if query.flags & libc::AI_V4MAPPED != 0 {
                        IpAddr::V6(v4.to_ipv6_mapped())
                    } else {
                        return Err(Refusal::quiet(libc::EAI_NODATA));
                    }
                }
                Ok(ip) => ip,
                Err(_) => {
                    return Err(Refusal {
                        code: libc::EAI_NONAME,
                        message: Some(format!(
                            "getaddrinfo was asked for {host:?} inside the simulation, and no \
                             node is called that. A simulation never asks the real DNS: name a \
                             node (crashtest::node::create({host:?}, ..)), use its address \
                             (crashtest::net::ip_of) or an IP literal, and reach it through \
                             crashtest::net or crashtest's tokio stand-in."
                        )),
                    });
                }
            },
        },
    };
    Ok(types
        .into_iter()
        .map(|(socktype, protocol)| Entry {
            addr: SocketAddr::new(ip, port),
            socktype,
            protocol,
        })
        .collect())
}

/// `addr` as the bytes of a `sockaddr_in` or `sockaddr_in6`.
fn sockaddr_bytes(addr: SocketAddr) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(size_of::<libc::sockaddr_in6>());
    match addr {
        SocketAddr::V4(v4) => {
            bytes.extend((libc::AF_INET as libc::sa_family_t).to_ne_bytes());
            bytes.extend(v4.port().to_be_bytes());
            bytes.extend(v4.ip().octets());
            bytes.resize(size_of::<libc::sockaddr_in>(), 0);
        }
        SocketAddr::V6(v6) => {
            bytes.extend((libc::AF_INET6 as libc::sa_family_t).to_ne_bytes());
            bytes.extend(v6.port().to_be_bytes());
            bytes.extend(v6.flowinfo().to_be_bytes());
            bytes.extend(v6.ip().octets());
            bytes.extend(v6.scope_id().to_ne_bytes());
        }
    }
    bytes
}

/// Builds the C list for `entries`, laid out as glibc lays out its own (see the module docs);
/// `None` if memory ran out (everything allocated is freed again).
fn to_c_list(entries: &[Entry], flags: c_int, canonical: Option<&CStr>) -> Option<*mut addrinfo> {
    let block = size_of::<addrinfo>() + size_of::<libc::sockaddr_in6>();
    let mut head: *mut addrinfo = std::ptr::null_mut();
    // Built back to front, so that each entry links to the one already made.
    for (i, entry) in entries.iter().enumerate().rev() {
        // SAFETY: malloc has no preconditions.
        let node = unsafe { libc::malloc(block) }.cast::<addrinfo>();
        if node.is_null() {
            // SAFETY: `head` is null or a list built here the way freeaddrinfo frees.
            unsafe { libc::freeaddrinfo(head) };
            return None;
        }
        let address = sockaddr_bytes(entry.addr);
        let canonname = match canonical {
            // SAFETY: `name` is NUL-terminated; strdup allocates with malloc.
            Some(name) if i == 0 => unsafe { libc::strdup(name.as_ptr()) },
            _ => std::ptr::null_mut(),
        };
        // SAFETY: `node` is a fresh block of `block` bytes, aligned for any type: the entry,
        // then its address right after it (an addrinfo's size keeps that aligned).
        unsafe {
            let addr = node.add(1).cast::<u8>();
            std::ptr::copy_nonoverlapping(address.as_ptr(), addr, address.len());
            node.write(addrinfo {
                ai_flags: flags,
                ai_family: if entry.addr.is_ipv4() {
                    libc::AF_INET
                } else {
                    libc::AF_INET6
                },
                ai_socktype: entry.socktype,
                ai_protocol: entry.protocol,
                ai_addrlen: address.len() as libc::socklen_t,
                ai_addr: addr.cast(),
                ai_canonname: canonname,
                ai_next: head,
            });
        }
        head = node;
    }
    Some(head)
}

/// Reads a C string argument; `None` for a null pointer.
///
/// # Safety
///
/// `ptr` is null or a NUL-terminated string.
unsafe fn read_str(ptr: *const c_char) -> Option<String> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: non-null, and NUL-terminated by the caller's contract.
    let text = unsafe { CStr::from_ptr(ptr) };
    Some(text.to_string_lossy().into_owned())
}

/// `getaddrinfo(3)`: answered from the simulated cluster inside a simulation.
///
/// # Safety
///
/// As for the C function: `node` and `service` are null or NUL-terminated strings, `hints` is
/// null or valid for reads, `res` is valid for writes.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn getaddrinfo(
    node: *const c_char,
    service: *const c_char,
    hints: *const addrinfo,
    res: *mut *mut addrinfo,
) -> c_int {
    if !super::in_simulation() {
        // SAFETY: the caller's arguments, unchanged, to the function this one hides.
        return unsafe { REAL_GETADDRINFO.get()(node, service, hints, res) };
    }
    // Null hints mean what glibc takes them to mean.
    let (flags, family, socktype, protocol) = if hints.is_null() {
        (
            libc::AI_V4MAPPED | libc::AI_ADDRCONFIG,
            libc::AF_UNSPEC,
            0,
            0,
        )
    } else {
        // SAFETY: non-null, and the caller passes it valid for reads.
        let hints = unsafe { &*hints };
        (
            hints.ai_flags,
            hints.ai_family,
            hints.ai_socktype,
            hints.ai_protocol,
        )
    };
    let query = Query {
        // SAFETY: the caller passes null or NUL-terminated strings.
        node: unsafe { read_str(node) },
        // SAFETY: as above.
        service: unsafe { read_str(service) },
        flags,
        family,
        socktype,
        protocol,
    };
    let answered = super::answer("getaddrinfo", || {
        let answered = resolve_query(&query, crashtest_net::resolve_host);
        if let Err(Refusal {
            message: Some(message),
            ..
        }) = &answered
        {
            super::fail(message.clone());
        }
        answered
    });
    let entries = match answered {
        Some(Ok(entries)) => entries,
        Some(Err(refusal)) => return refusal.code,
        None => return libc::EAI_FAIL,
    };
    if res.is_null() {
        super::set_errno(libc::EFAULT);
        return libc::EAI_SYSTEM;
    }
    let canonical = if flags & libc::AI_CANONNAME != 0 && !node.is_null() {
        // SAFETY: non-null, and the caller passes it NUL-terminated.
        Some(unsafe { CStr::from_ptr(node) })
    } else {
        None
    };
    match to_c_list(&entries, flags, canonical) {
        Some(list) => {
            // SAFETY: `res` is non-null and the caller passes it valid for writes.
            unsafe { res.write(list) };
            0
        }
        None => libc::EAI_MEMORY,
    }
}

/// The guard, for [`super::link`].
pub(super) fn symbols() -> [*const (); 1] {
    [getaddrinfo as *const ()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(node: Option<&str>, family: c_int, socktype: c_int, flags: c_int) -> Query {
        Query {
            node: node.map(str::to_owned),
            service: None,
            flags,
            family,
            socktype,
            protocol: 0,
        }
    }

    /// A cluster with one node, "db" at 10.0.0.1.
    fn cluster(host: &str) -> std::io::Result<IpAddr> {
        match host {
            "db" => Ok(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))),
            "localhost" => Ok(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            _ => Err(std::io::ErrorKind::NotFound.into()),
        }
    }

    fn addrs(entries: &[Entry]) -> Vec<String> {
        entries.iter().map(|e| e.addr.to_string()).collect()
    }

    #[test]
    fn node_names_resolve_to_their_simulated_address_once_per_socket_type() {
        let stream = resolve_query(
            &query(Some("db"), libc::AF_UNSPEC, libc::SOCK_STREAM, 0),
            cluster,
        );
        let stream = stream.unwrap();
        assert_eq!(addrs(&stream), ["10.0.0.1:0"]);
        assert_eq!(
            (stream[0].socktype, stream[0].protocol),
            (libc::SOCK_STREAM, libc::IPPROTO_TCP)
        );
        let any = resolve_query(&query(Some("db"), libc::AF_UNSPEC, 0, 0), cluster).unwrap();
        let types: Vec<_> = any.iter().map(|e| e.socktype).collect();
        assert_eq!(types, [libc::SOCK_STREAM, libc::SOCK_DGRAM, libc::SOCK_RAW]);
    }

    #[test]
    fn unknown_names_fail_the_run_with_eai_noname_but_numeric_only_queries_do_not() {
        let refused = resolve_query(&query(Some("example.com"), 0, 0, 0), cluster).unwrap_err();
        assert_eq!(refused.code, libc::EAI_NONAME);
        assert!(refused.message.unwrap().contains("never asks the real DNS"));
        let numeric = query(Some("db"), 0, 0, libc::AI_NUMERICHOST);
        assert_eq!(
            resolve_query(&numeric, cluster),
            Err(Refusal::quiet(libc::EAI_NONAME))
        );
    }

    #[test]
    fn literals_resolve_to_themselves_in_their_family_only() {
        let v4 = resolve_query(
            &query(Some("192.168.1.9"), libc::AF_INET, libc::SOCK_DGRAM, 0),
            cluster,
        );
        assert_eq!(addrs(&v4.unwrap()), ["192.168.1.9:0"]);
        let wrong = query(Some("192.168.1.9"), libc::AF_INET6, libc::SOCK_DGRAM, 0);
        assert_eq!(
            resolve_query(&wrong, cluster),
            Err(Refusal::quiet(EAI_ADDRFAMILY))
        );
        let v6 = resolve_query(&query(Some("::1"), 0, libc::SOCK_STREAM, 0), cluster);
        assert_eq!(addrs(&v6.unwrap()), ["[::1]:0"]);
    }

    #[test]
    fn ipv6_only_queries_get_mapped_addresses_or_no_data() {
        let plain = query(Some("db"), libc::AF_INET6, libc::SOCK_STREAM, 0);
        assert_eq!(
            resolve_query(&plain, cluster),
            Err(Refusal::quiet(libc::EAI_NODATA))
        );
        let mapped = query(
            Some("db"),
            libc::AF_INET6,
            libc::SOCK_STREAM,
            libc::AI_V4MAPPED,
        );
        assert_eq!(
            addrs(&resolve_query(&mapped, cluster).unwrap()),
            ["[::ffff:10.0.0.1]:0"]
        );
        let local = query(Some("localhost"), libc::AF_INET6, libc::SOCK_STREAM, 0);
        assert_eq!(addrs(&resolve_query(&local, cluster).unwrap()), ["[::1]:0"]);
    }

    #[test]
    fn services_are_port_numbers_and_a_missing_host_is_the_wildcard_or_loopback() {
        let mut passive = query(None, libc::AF_INET, libc::SOCK_STREAM, libc::AI_PASSIVE);
        passive.service = Some("8080".into());
        assert_eq!(
            addrs(&resolve_query(&passive, cluster).unwrap()),
            ["0.0.0.0:8080"]
        );
        passive.flags = 0;
        assert_eq!(
            addrs(&resolve_query(&passive, cluster).unwrap()),
            ["127.0.0.1:8080"]
        );
        passive.service = Some("http".into());
        let refused = resolve_query(&passive, cluster).unwrap_err();
        assert_eq!(refused.code, libc::EAI_SERVICE);
        assert!(refused.message.is_some());
        passive.service = None;
        assert_eq!(
            resolve_query(&passive, cluster),
            Err(Refusal::quiet(libc::EAI_NONAME))
        );
    }

    #[test]
    fn bad_flags_families_and_types_are_refused_as_glibc_refuses_them() {
        let flags = query(Some("db"), 0, 0, 0x10000);
        assert_eq!(
            resolve_query(&flags, cluster),
            Err(Refusal::quiet(libc::EAI_BADFLAGS))
        );
        let family = query(Some("db"), libc::AF_UNIX, 0, 0);
        assert_eq!(
            resolve_query(&family, cluster),
            Err(Refusal::quiet(libc::EAI_FAMILY))
        );
        let socktype = query(Some("db"), 0, 99, 0);
        assert_eq!(
            resolve_query(&socktype, cluster),
            Err(Refusal::quiet(libc::EAI_SOCKTYPE))
        );
    }
}
