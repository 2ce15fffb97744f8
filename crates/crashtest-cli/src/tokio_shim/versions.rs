//! The tokio versions the stand-in supports, and why a version is or is not one.
//!
//! The stand-in re-exports tokio and shadows what must reach the simulation. A tokio minor
//! version adds API: something new that spawns, sleeps or opens a socket would pass through
//! to real tokio unshadowed and escape the simulation. So the stand-in supports the minor
//! versions it was checked against, every patch release of each:
//! 1.47 (the oldest: the first with every API the stand-in wraps) through 1.54.
//!
//! Adding a minor version: read tokio's changelog (and diff its public items against the
//! newest supported minor's) for new public functions and types in `task`, `runtime`,
//! `time`, `net`, `fs`, `process`, `signal` and the macros, the ones stabilized from
//! `tokio_unstable` too; shadow the ones that must switch, and the methods of shadowed types,
//! which would otherwise be missing; raise [`NEWEST`]; and run the version tests
//! (crashtest-cli's `tests/tokio_setup.rs`, which set up and test a workspace on the oldest
//! and the newest supported versions). API that only some supported minors have is shadowed
//! under `cfg(real_tokio_1_N)`, which the stand-in's build script sets from the real tokio's
//! version (add N to its list): 1.48's `TcpStream::set_quickack` and `File::max_buf_size`,
//! 1.49's `tos_v4` and `tclass_v6` socket options, 1.50's `set_zero_linger`, 1.51's
//! `LocalRuntime`, `Builder::{build_local, name}` and `Handle::name`, 1.53's Unix socket
//! addresses, 1.54's `File::{set_times, set_modified}`.

use anyhow::bail;

/// The oldest supported minor version of tokio 1.
pub(crate) const OLDEST: u64 = 47;
/// The newest supported minor version of tokio 1.
pub(crate) const NEWEST: u64 = 54;

/// Checks that tokio `version` (`1.54.1`) is a supported one.
pub(crate) fn check(version: &str) -> anyhow::Result<()> {
    let mut parts = version.split(['.', '-', '+']);
    let major = parts.next().and_then(|p| p.parse::<u64>().ok());
    let minor = parts.next().and_then(|p| p.parse::<u64>().ok());
    match (major, minor) {
        (Some(1), Some(minor)) if (OLDEST..=NEWEST).contains(&minor) => Ok(()),
        (Some(1), Some(minor)) if minor > NEWEST => bail!(
            "tokio {version} is newer than the stand-in supports (1.{OLDEST} to 1.{NEWEST}): \
             pin tokio to a 1.{NEWEST} release (`cargo update -p tokio --precise 1.{NEWEST}.N`) \
             or upgrade crashtest"
        ),
        _ => bail!(
            "tokio {version} is not supported by the stand-in (1.{OLDEST} to 1.{NEWEST}): \
             upgrade tokio (`cargo update -p tokio`)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supported_minors_pass_and_others_say_what_to_do() {
        assert!(check("1.47.0").is_ok());
        assert!(check("1.54.1").is_ok());
        let newer = check("1.55.0").unwrap_err().to_string();
        assert!(
            newer.contains("newer than the stand-in supports"),
            "{newer}"
        );
        let older = check("1.46.1").unwrap_err().to_string();
        assert!(older.contains("upgrade tokio"), "{older}");
        assert!(check("0.2.25").is_err());
        assert!(check("2.0.0").is_err());
    }
}
