//! `crashtest tokio setup`: puts crashtest's tokio stand-in in place of tokio in a workspace.
//!
//! One step for the user; behind it:
//! 1. `cargo metadata` on the workspace says which tokio it uses (the version must be a
//!    supported one, see `versions`) and which `crashtest-hooks` its crashtest uses.
//! 2. The registry's tokio of that version is copied unmodified into the stand-in directory
//!    (`TARGET/crashtest-tokio/` by default) as the package `crashtest-real-tokio`: only its
//!    package name changes, its library is still called `tokio`.
//! 3. A manifest for the package `tokio`, same version, is written next to it: its library
//!    is crashtest-tokio's source (found beside the very `crashtest-hooks` the workspace
//!    uses, so the stand-in and the simulator share one hooks crate and one thread-local),
//!    its `real` dependency the renamed copy, and its features tokio's, one for one.
//! 4. `[patch.crates-io] tokio = { path = ... }` goes into the workspace's Cargo.toml (or is
//!    printed, with `--print`). From then on the workspace and every dependency that uses
//!    tokio compile against the stand-in.
//!
//! Running it again is harmless: it refreshes both packages (do so after upgrading tokio or
//! crashtest, and after `cargo clean` if the stand-in directory is under the target
//! directory; a patch whose directory is gone is bridged with a placeholder so that cargo
//! can read the workspace again).

mod manifests;
mod metadata;
mod patch;
pub(crate) mod versions;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};

use crate::cli::TokioSetupArgs;

/// The stand-in's package and the renamed tokio's, inside the stand-in directory.
fn package_dirs(dir: &Path, version: &str) -> (PathBuf, PathBuf) {
    (
        dir.join(format!("tokio-{version}")),
        dir.join(format!("real-tokio-{version}")),
    )
}

/// Where the stand-in goes unless `--dir` says: the target directory's `crashtest-tokio`,
/// or, when the target directory lies outside the workspace (`CARGO_TARGET_DIR` elsewhere),
/// the workspace's own `target/crashtest-tokio`. The committed patch line names the stand-in
/// relative to the workspace, so every machine and every CI job writes the same line, which
/// an absolute path to one machine's target directory would not.
fn default_dir(root: &Path, target: &Path) -> PathBuf {
    let base = if target.starts_with(root) {
        target.to_path_buf()
    } else {
        root.join("target")
    };
    base.join("crashtest-tokio")
}

/// `crashtest tokio setup`.
pub(crate) fn setup(args: &TokioSetupArgs) -> anyhow::Result<ExitCode> {
    let root_manifest = metadata::root_manifest(args.manifest_path.as_deref())?;
    patch::bridge_missing_stand_in(&root_manifest)?;
    let workspace = metadata::Workspace::read(&root_manifest)?;
    let version = workspace.tokio_version()?;
    versions::check(&version)?;
    let hooks = workspace.hooks()?;
    let stand_in = manifests::StandIn::find(&hooks)?;
    let dir = match &args.dir {
        Some(dir) => absolute(dir)?,
        None => default_dir(&workspace.root, &workspace.target_directory),
    };
    let real = metadata::registry_tokio(&version, &dir)?;
    let (shim_dir, real_dir) = package_dirs(&dir, &version);
    manifests::copy_renamed(&real.dir, &real_dir)
        .with_context(|| format!("copying tokio {version} to {}", real_dir.display()))?;
    manifests::write_stand_in(&shim_dir, &version, &real, &real_dir, &hooks, &stand_in)?;
    let entry = patch::entry(&workspace.root, &shim_dir);
    if args.print {
        println!("[patch.crates-io]\n{entry}");
        eprintln!(
            "crashtest: add these lines to {} to use the stand-in",
            root_manifest.display()
        );
    } else {
        patch::write(&root_manifest, &workspace.root, &shim_dir)?;
        eprintln!(
            "crashtest: tokio {version} now resolves to crashtest's stand-in in {} \
             ({entry}); run the tests as usual",
            workspace.root.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `path` made absolute and free of `..`, so that it compares with cargo's paths.
fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(path).with_context(|| format!("creating {}", path.display()))?;
    std::fs::canonicalize(path).with_context(|| format!("resolving {}", path.display()))
}

/// Fails with cargo's own words when a cargo command does not succeed.
fn cargo_output(command: &mut std::process::Command, what: &str) -> anyhow::Result<Vec<u8>> {
    let output = command
        .output()
        .with_context(|| format!("running cargo for {what}"))?;
    if !output.status.success() {
        bail!(
            "cargo failed {what}:\n{}",
            String::from_utf8_lossy(&output.stderr).trim_end()
        );
    }
    Ok(output.stdout)
}

/// The cargo that runs this tool (`cargo crashtest`), or the one on the path.
fn cargo() -> std::process::Command {
    std::process::Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stand_in_stays_inside_the_workspace_whatever_the_target_directory() {
        let root = Path::new("/work/app");
        assert_eq!(
            default_dir(root, Path::new("/work/app/target")),
            Path::new("/work/app/target/crashtest-tokio")
        );
        assert_eq!(
            default_dir(root, Path::new("/work/app/build/out")),
            Path::new("/work/app/build/out/crashtest-tokio")
        );
        assert_eq!(
            default_dir(root, Path::new("/tmp/shared-target")),
            Path::new("/work/app/target/crashtest-tokio")
        );
    }
}
