//! The two packages the stand-in directory holds: the registry's tokio renamed, and the
//! stand-in's manifest over crashtest-tokio's source.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, value};

use super::metadata::{Package, RealTokio};

/// The renamed tokio's package name (its library keeps the name `tokio`).
pub(super) const REAL_PACKAGE: &str = "crashtest-real-tokio";

/// The edition crashtest-tokio's source is written for.
const EDITION: &str = "2024";

/// Records which registry directory a copy was made from, so an unchanged one is kept.
const COPIED_FROM: &str = ".crashtest-copied-from";

/// crashtest-tokio's source, beside the workspace's `crashtest-hooks`.
pub(super) struct StandIn {
    /// Its `src/lib.rs`.
    lib: PathBuf,
    /// Its build script, which reads the real tokio's version from the package's.
    build: PathBuf,
    /// The tokio features it builds on, always on.
    always_on: Vec<String>,
    /// Its other dependencies, as its manifest gives them (name, version requirement).
    others: Vec<(String, String)>,
}

impl StandIn {
    /// Finds crashtest-tokio of the same version as `hooks`, in the directory that holds
    /// `hooks` (a checkout of crashtest, or the registry's sources).
    pub(super) fn find(hooks: &Package) -> anyhow::Result<StandIn> {
        let parent = hooks
            .dir()
            .parent()
            .context("crashtest-hooks has no parent directory")?;
        let candidates = [
            parent.join("crashtest-tokio"),
            parent.join(format!("crashtest-tokio-{}", hooks.version)),
        ];
        for dir in &candidates {
            let Ok(text) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
                continue;
            };
            let manifest: DocumentMut = text
                .parse()
                .with_context(|| format!("reading {}/Cargo.toml", dir.display()))?;
            if manifest["package"]["name"].as_str() == Some("crashtest-tokio") {
                return StandIn::from_manifest(dir, &manifest);
            }
        }
        bail!(
            "crashtest-tokio's source is not beside crashtest-hooks ({}): the stand-in must \
             come from the same crashtest as the workspace's",
            hooks.dir().display()
        )
    }

    fn from_manifest(dir: &Path, manifest: &DocumentMut) -> anyhow::Result<StandIn> {
        let dependencies = manifest["dependencies"]
            .as_table_like()
            .context("crashtest-tokio's manifest has no dependencies")?;
        let real = dependencies
            .get("real")
            .and_then(Item::as_table_like)
            .context("crashtest-tokio's manifest has no `real` dependency")?;
        let always_on = real
            .get("features")
            .and_then(Item::as_array)
            .map(|features| {
                features
                    .iter()
                    .filter_map(|f| f.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let others = dependencies
            .iter()
            .filter(|(name, _)| *name != "real" && *name != "crashtest-hooks")
            .map(|(name, spec)| {
                let version = spec
                    .as_str()
                    .or_else(|| spec.get("version").and_then(Item::as_str))
                    .with_context(|| {
                        format!("crashtest-tokio's dependency {name} has no version")
                    })?;
                Ok((name.to_owned(), version.to_owned()))
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(StandIn {
            lib: dir.join("src").join("lib.rs"),
            build: dir.join("build.rs"),
            always_on,
            others,
        })
    }
}

/// Copies the registry's tokio in `from` to `to`, renamed: only the package name in its
/// manifest changes (the library stays `tokio`). An up-to-date copy is kept.
pub(super) fn copy_renamed(from: &Path, to: &Path) -> anyhow::Result<()> {
    let marker = to.join(COPIED_FROM);
    if std::fs::read_to_string(&marker).is_ok_and(|source| Path::new(&source) == from) {
        return Ok(());
    }
    if to.exists() {
        std::fs::remove_dir_all(to).with_context(|| format!("removing {}", to.display()))?;
    }
    copy_tree(from, to)?;
    let manifest_path = to.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest_path)?;
    let renamed = rename_package(&text)?;
    std::fs::write(&manifest_path, renamed)?;
    std::fs::write(&marker, from.to_string_lossy().as_bytes())?;
    Ok(())
}

/// tokio's manifest with the package renamed and the library's name kept `tokio`.
fn rename_package(manifest: &str) -> anyhow::Result<String> {
    let mut doc: DocumentMut = manifest.parse().context("reading tokio's manifest")?;
    if doc["package"]["name"].as_str() != Some("tokio") {
        bail!("the registry's manifest is not tokio's");
    }
    doc["package"]["name"] = value(REAL_PACKAGE);
    if !doc.contains_key("lib") {
        doc["lib"] = Item::Table(Table::new());
    }
    doc["lib"]["name"] = value("tokio");
    Ok(doc.to_string())
}

fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)
                .with_context(|| format!("copying {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// The stand-in's features: each of tokio's, turning on tokio's of the same name and the
/// stand-in's own that tokio's implies (so `full` turns on the stand-in's `process` too).
pub(super) fn stand_in_features(
    real: &BTreeMap<String, Vec<String>>,
) -> BTreeMap<String, Vec<String>> {
    real.iter()
        .map(|(name, implied)| {
            let mut features = vec![format!("real/{name}")];
            features.extend(
                implied
                    .iter()
                    .filter(|f| real.contains_key(f.as_str()))
                    .cloned(),
            );
            (name.clone(), features)
        })
        .collect()
}

/// How the stand-in depends on the workspace's very `crashtest-hooks`.
fn hooks_dependency(hooks: &Package) -> anyhow::Result<InlineTable> {
    let mut spec = InlineTable::new();
    match hooks.source.as_deref() {
        None => {
            spec.insert("path", path_value(hooks.dir()));
        }
        Some(source) if source.starts_with("registry+") || source.starts_with("sparse+") => {
            spec.insert("version", format!("={}", hooks.version).into());
        }
        Some(source) if source.starts_with("git+") => {
            let (url, commit) = source["git+".len()..]
                .split_once('#')
                .context("a git source without a commit")?;
            let url = url.split_once('?').map_or(url, |(url, _)| url);
            spec.insert("git", url.into());
            spec.insert("rev", commit.into());
        }
        Some(other) => {
            bail!("crashtest-hooks comes from a source the stand-in cannot name: {other}")
        }
    }
    Ok(spec)
}

fn path_value(path: &Path) -> toml_edit::Value {
    path.to_string_lossy().replace('\\', "/").into()
}

/// Writes the stand-in's manifest, for the package `tokio` of `version`, in `dir`.
pub(super) fn write_stand_in(
    dir: &Path,
    version: &str,
    real: &RealTokio,
    real_dir: &Path,
    hooks: &Package,
    stand_in: &StandIn,
) -> anyhow::Result<()> {
    let mut doc = DocumentMut::new();
    doc.decor_mut().set_prefix(
        "# Written by `crashtest tokio setup`: crashtest's stand-in for tokio, under tokio's name\n\
         # and version, over the registry's tokio renamed. Run the setup again to refresh it.\n",
    );
    let mut package = Table::new();
    package.insert("name", value("tokio"));
    package.insert("version", value(version));
    package.insert("edition", value(EDITION));
    package.insert("publish", value(false));
    package.insert("build", value(path_value(&stand_in.build)));
    doc.insert("package", Item::Table(package));

    let mut lib = Table::new();
    lib.insert("name", value("tokio"));
    lib.insert("path", value(path_value(&stand_in.lib)));
    doc.insert("lib", Item::Table(lib));

    let mut dependencies = Table::new();
    let mut real_spec = InlineTable::new();
    real_spec.insert("package", REAL_PACKAGE.into());
    real_spec.insert("version", format!("={version}").into());
    let relative = real_dir
        .file_name()
        .context("the renamed tokio's directory has no name")?;
    real_spec.insert("path", format!("../{}", relative.to_string_lossy()).into());
    real_spec.insert("default-features", false.into());
    real_spec.insert(
        "features",
        stand_in.always_on.iter().collect::<Array>().into(),
    );
    dependencies.insert("real", value(real_spec));
    dependencies.insert("crashtest-hooks", value(hooks_dependency(hooks)?));
    for (name, requirement) in &stand_in.others {
        dependencies.insert(name, value(requirement.as_str()));
    }
    doc.insert("dependencies", Item::Table(dependencies));

    let mut features = Table::new();
    for (name, list) in stand_in_features(&real.features) {
        features.insert(&name, value(list.iter().collect::<Array>()));
    }
    doc.insert("features", Item::Table(features));

    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::write(dir.join("Cargo.toml"), doc.to_string())
        .with_context(|| format!("writing {}/Cargo.toml", dir.display()))?;
    Ok(())
}

/// A manifest for a placeholder `tokio` package of `version` with `features`: enough for
/// cargo to read a workspace whose stand-in directory was cleaned away.
pub(super) fn placeholder(version: &str, features: &BTreeMap<String, Vec<String>>) -> String {
    let mut doc = DocumentMut::new();
    doc.decor_mut().set_prefix(
        "# A placeholder written by `crashtest tokio setup` while it rebuilds the stand-in.\n",
    );
    let mut package = Table::new();
    package.insert("name", value("tokio"));
    package.insert("version", value(version));
    package.insert("edition", value(EDITION));
    doc.insert("package", Item::Table(package));
    let mut lib = Table::new();
    lib.insert("path", value("lib.rs"));
    doc.insert("lib", Item::Table(lib));
    let mut table = Table::new();
    for name in features.keys() {
        table.insert(name, value(Array::new()));
    }
    doc.insert("features", Item::Table(table));
    doc.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_follow_tokios_and_imply_the_stand_ins_own() {
        let real: BTreeMap<String, Vec<String>> = [
            ("full", vec!["net", "process", "mio/os-poll"]),
            ("net", vec!["dep:socket2"]),
            ("process", vec![]),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
        .collect();
        let mapped = stand_in_features(&real);
        assert_eq!(mapped["full"], ["real/full", "net", "process"]);
        assert_eq!(mapped["net"], ["real/net"]);
    }

    #[test]
    fn only_the_package_name_of_tokios_manifest_changes() {
        let manifest = "[package]\nname = \"tokio\"\nversion = \"1.54.1\"\n\n[lib]\nname = \"tokio\"\npath = \"src/lib.rs\"\n\n[[test]]\nname = \"tokio_x\"\n";
        let renamed = rename_package(manifest).unwrap();
        assert_eq!(
            renamed,
            manifest.replacen("name = \"tokio\"", "name = \"crashtest-real-tokio\"", 1)
        );
        let without_lib = rename_package("[package]\nname = \"tokio\"\n").unwrap();
        assert!(without_lib.contains("[lib]\nname = \"tokio\""));
        assert!(rename_package("[package]\nname = \"other\"\n").is_err());
    }

    fn package(source: Option<&str>) -> Package {
        Package {
            name: "crashtest-hooks".into(),
            version: "0.3.0".into(),
            source: source.map(str::to_owned),
            manifest_path: "/src/crashtest/crates/crashtest-hooks/Cargo.toml".into(),
            features: BTreeMap::new(),
        }
    }

    #[test]
    fn the_hooks_dependency_names_the_workspaces_own_source() {
        let path = hooks_dependency(&package(None)).unwrap().to_string();
        assert_eq!(path, "{ path = \"/src/crashtest/crates/crashtest-hooks\" }");
        let registry = hooks_dependency(&package(Some(
            "registry+https://github.com/rust-lang/crates.io-index",
        )))
        .unwrap()
        .to_string();
        assert_eq!(registry, "{ version = \"=0.3.0\" }");
        let git = hooks_dependency(&package(Some(
            "git+https://example.invalid/crashtest?branch=main#0123abcd",
        )))
        .unwrap()
        .to_string();
        assert_eq!(
            git,
            "{ git = \"https://example.invalid/crashtest\", rev = \"0123abcd\" }"
        );
    }
}
