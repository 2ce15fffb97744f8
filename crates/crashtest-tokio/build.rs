//! Tells the stand-in's source which tokio it wraps, as `cfg`s: `real_tokio_1_N` is set when
//! the real tokio is 1.N or later, so that the API a later tokio added (and that must be
//! shadowed to reach the simulation) is shadowed exactly when the real tokio has it.
//!
//! In a user's workspace the stand-in is the package `tokio` of the real tokio's own version
//! (`crashtest tokio setup` writes it so, and points its build script here), so that version
//! is the package's. In this repository the package is `crashtest-tokio`, whose manifest asks
//! for tokio `REPOSITORY_TOKIO` or later.

use std::env;

/// The tokio minor versions that added API the stand-in shadows (see each `cfg` in the
/// source). The supported range's oldest minor needs none.
const SINCE: [u64; 6] = [48, 49, 50, 51, 53, 54];

/// The minor version this repository's manifest requires of tokio (`real`'s requirement).
const REPOSITORY_TOKIO: u64 = 54;

fn main() {
    let minor = real_minor();
    for since in SINCE {
        println!("cargo::rustc-check-cfg=cfg(real_tokio_1_{since})");
        if minor >= since {
            println!("cargo::rustc-cfg=real_tokio_1_{since}");
        }
    }
}

/// The real tokio's minor version (its major is 1).
fn real_minor() -> u64 {
    let name = env::var("CARGO_PKG_NAME").expect("cargo names the package");
    if name != "tokio" {
        return REPOSITORY_TOKIO;
    }
    let version = env::var("CARGO_PKG_VERSION").expect("cargo gives the package's version");
    let mut parts = version.split('.');
    let major = parts.next().and_then(|p| p.parse::<u64>().ok());
    let minor = parts.next().and_then(|p| p.parse::<u64>().ok());
    match (major, minor) {
        (Some(1), Some(minor)) => minor,
        _ => panic!("the tokio stand-in is built as tokio {version}, which is not a tokio 1.x"),
    }
}
