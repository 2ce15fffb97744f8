//! What cargo says about the workspace: its root, its target directory, its tokio version,
//! the `crashtest-hooks` its crashtest uses, and where the registry keeps a tokio version.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::Deserialize;

use super::{cargo, cargo_output};

#[derive(Deserialize)]
struct Metadata {
    packages: Vec<Package>,
    workspace_root: PathBuf,
    target_directory: PathBuf,
}

/// A package as `cargo metadata` describes it.
#[derive(Clone, Debug, Deserialize)]
pub(super) struct Package {
    pub(super) name: String,
    pub(super) version: String,
    /// `None` for a path package, else `registry+...` or `git+...`.
    pub(super) source: Option<String>,
    pub(super) manifest_path: PathBuf,
    #[serde(default)]
    pub(super) features: BTreeMap<String, Vec<String>>,
}

impl Package {
    /// The package's directory.
    pub(super) fn dir(&self) -> &Path {
        self.manifest_path
            .parent()
            .expect("a manifest path names a file in a directory")
    }
}

/// The workspace being set up.
pub(super) struct Workspace {
    pub(super) root: PathBuf,
    pub(super) target_directory: PathBuf,
    packages: Vec<Package>,
}

/// The workspace's root manifest: `manifest` if given, else the one cargo finds from here.
pub(super) fn root_manifest(manifest: Option<&Path>) -> anyhow::Result<PathBuf> {
    let mut command = cargo();
    command.args(["locate-project", "--workspace", "--message-format", "plain"]);
    if let Some(manifest) = manifest {
        command.arg("--manifest-path").arg(manifest);
    }
    let out = cargo_output(&mut command, "finding the workspace")?;
    let path = String::from_utf8(out).context("cargo printed a path that is not UTF-8")?;
    Ok(PathBuf::from(path.trim_end()))
}

impl Workspace {
    /// Reads the workspace whose root manifest is `manifest`.
    pub(super) fn read(manifest: &Path) -> anyhow::Result<Workspace> {
        let mut command = cargo();
        command
            .args(["metadata", "--format-version", "1", "--manifest-path"])
            .arg(manifest);
        let out = cargo_output(&mut command, "reading the workspace")?;
        let metadata: Metadata =
            serde_json::from_slice(&out).context("reading cargo metadata's answer")?;
        Ok(Workspace {
            root: metadata.workspace_root,
            target_directory: metadata.target_directory,
            packages: metadata.packages,
        })
    }

    fn package(&self, name: &str) -> Vec<&Package> {
        self.packages.iter().filter(|p| p.name == name).collect()
    }

    /// The version of tokio 1 the workspace uses (the stand-in's, if set up already).
    pub(super) fn tokio_version(&self) -> anyhow::Result<String> {
        let tokios: Vec<&Package> = self
            .package("tokio")
            .into_iter()
            .filter(|p| p.version.starts_with("1."))
            .collect();
        match tokios.as_slice() {
            [] => bail!(
                "the workspace does not use tokio 1 (no package `tokio` 1.x in its dependency graph)"
            ),
            [tokio] => Ok(tokio.version.clone()),
            _ => bail!("the workspace has more than one tokio 1 in its graph"),
        }
    }

    /// The `crashtest-hooks` package the workspace's crashtest uses.
    pub(super) fn hooks(&self) -> anyhow::Result<Package> {
        match self.package("crashtest-hooks").as_slice() {
            [hooks] => Ok((*hooks).clone()),
            [] => bail!(
                "the workspace does not depend on crashtest: add it (usually as a \
                 dev-dependency) first, so that the stand-in uses the same crashtest"
            ),
            _ => bail!("the workspace has more than one crashtest-hooks in its graph"),
        }
    }
}

/// The registry's tokio of `version`: its source directory and features. Asked of cargo
/// with a scratch manifest in `scratch_parent`, so that the answer does not depend on the
/// workspace (whose tokio may be the stand-in already).
pub(super) fn registry_tokio(version: &str, scratch_parent: &Path) -> anyhow::Result<RealTokio> {
    let scratch = scratch_parent.join(format!("registry-lookup-{version}"));
    std::fs::create_dir_all(scratch.join("src"))
        .with_context(|| format!("creating {}", scratch.display()))?;
    let manifest = format!(
        "# Written by `crashtest tokio setup` to ask cargo where the registry's tokio is.\n\
         [package]\nname = \"crashtest-registry-lookup\"\nversion = \"0.0.0\"\n\
         edition = \"2021\"\npublish = false\n\n[workspace]\n\n\
         [dependencies]\ntokio = \"={version}\"\n"
    );
    std::fs::write(scratch.join("Cargo.toml"), manifest)?;
    std::fs::write(scratch.join("src/lib.rs"), "")?;
    let mut command = cargo();
    command
        .args(["metadata", "--format-version", "1", "--manifest-path"])
        .arg(scratch.join("Cargo.toml"));
    let out = cargo_output(&mut command, &format!("fetching tokio {version}"));
    // The scratch package was only a question for cargo; it is not kept either way.
    let _ = std::fs::remove_dir_all(&scratch);
    let metadata: Metadata = serde_json::from_slice(&out?).context("reading cargo metadata")?;
    let tokio = metadata
        .packages
        .into_iter()
        .find(|p| p.name == "tokio" && p.source.as_deref().is_some_and(is_registry))
        .with_context(|| format!("cargo did not find tokio {version} in the registry"))?;
    Ok(RealTokio {
        dir: tokio.dir().to_owned(),
        features: tokio.features,
    })
}

fn is_registry(source: &str) -> bool {
    source.starts_with("registry+") || source.starts_with("sparse+")
}

/// The registry's tokio: where its source is, and its features.
pub(super) struct RealTokio {
    pub(super) dir: PathBuf,
    pub(super) features: BTreeMap<String, Vec<String>>,
}
