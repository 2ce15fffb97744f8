//! The workspace's `[patch.crates-io]` entry for tokio.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use toml_edit::{DocumentMut, InlineTable, Item, Table, value};

use super::{manifests, metadata};

/// How the entry names the stand-in: relative to the workspace root when inside it.
fn patch_path(root: &Path, shim_dir: &Path) -> String {
    let path = shim_dir.strip_prefix(root).unwrap_or(shim_dir);
    path.to_string_lossy().replace('\\', "/")
}

/// The entry, as a line of TOML.
pub(super) fn entry(root: &Path, shim_dir: &Path) -> String {
    format!("tokio = {{ path = \"{}\" }}", patch_path(root, shim_dir))
}

/// Writes the entry into the root manifest, keeping everything else as it is.
pub(super) fn write(manifest: &Path, root: &Path, shim_dir: &Path) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(manifest)
        .with_context(|| format!("reading {}", manifest.display()))?;
    let mut doc: DocumentMut = text
        .parse()
        .with_context(|| format!("reading {}", manifest.display()))?;
    if !doc.contains_key("patch") {
        let mut patch = Table::new();
        patch.set_implicit(true);
        doc.insert("patch", Item::Table(patch));
    }
    let patch = doc["patch"]
        .as_table_mut()
        .context("`patch` in the manifest is not a table")?;
    if !patch.contains_key("crates-io") {
        patch.insert("crates-io", Item::Table(Table::new()));
    }
    let crates_io = patch["crates-io"]
        .as_table_mut()
        .context("`patch.crates-io` in the manifest is not a table")?;
    if let Some(existing) = crates_io.get("tokio")
        && existing.get("path").is_none()
    {
        bail!(
            "{} patches tokio already (not with a path): remove that entry to use the stand-in",
            manifest.display()
        );
    }
    let mut spec = InlineTable::new();
    spec.insert("path", patch_path(root, shim_dir).into());
    crates_io.insert("tokio", value(spec));
    if let Some(mut key) = crates_io.key_mut("tokio") {
        key.leaf_decor_mut()
            .set_prefix("# crashtest's tokio stand-in, written by `cargo crashtest tokio setup`\n");
    }
    std::fs::write(manifest, doc.to_string())
        .with_context(|| format!("writing {}", manifest.display()))?;
    Ok(())
}

/// If the manifest patches tokio with a path whose package is gone (`cargo clean` removed
/// the target directory), puts a placeholder there so that cargo can read the workspace.
pub(super) fn bridge_missing_stand_in(manifest: &Path) -> anyhow::Result<()> {
    let Some(dir) = patched_dir(manifest)? else {
        return Ok(());
    };
    if dir.join("Cargo.toml").exists() {
        return Ok(());
    }
    let lock = manifest.with_file_name("Cargo.lock");
    let version = match locked_stand_in_version(&lock)? {
        Some(version) => version,
        None => version_in_name(&dir).with_context(|| {
            format!(
                "the stand-in in {} is gone and neither {} nor its name says which tokio it \
                 was: remove the tokio line of [patch.crates-io] and run the setup again",
                dir.display(),
                lock.display()
            )
        })?,
    };
    let parent = dir
        .parent()
        .context("the stand-in's directory has no parent")?;
    let real = metadata::registry_tokio(&version, parent)?;
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("Cargo.toml"),
        manifests::placeholder(&version, &real.features),
    )?;
    std::fs::write(dir.join("lib.rs"), "")?;
    Ok(())
}

/// The version in a stand-in directory's name, as the setup names them (`tokio-1.54.1`).
fn version_in_name(dir: &Path) -> Option<String> {
    let name = dir.file_name()?.to_str()?;
    let version = name.strip_prefix("tokio-")?;
    let numeric = version.split('.').count() == 3
        && version.split('.').all(|part| part.parse::<u64>().is_ok());
    numeric.then(|| version.to_owned())
}

/// The directory the manifest's tokio patch points to, if it has one.
fn patched_dir(manifest: &Path) -> anyhow::Result<Option<PathBuf>> {
    let text = std::fs::read_to_string(manifest)
        .with_context(|| format!("reading {}", manifest.display()))?;
    let doc: DocumentMut = text
        .parse()
        .with_context(|| format!("reading {}", manifest.display()))?;
    let path = doc
        .get("patch")
        .and_then(|p| p.get("crates-io"))
        .and_then(|p| p.get("tokio"))
        .and_then(|t| t.get("path"))
        .and_then(Item::as_str);
    let root = manifest.parent().context("the manifest has no directory")?;
    Ok(path.map(|path| root.join(path)))
}

/// The version of the path package `tokio` in a lock file (the stand-in's).
fn locked_stand_in_version(lock: &Path) -> anyhow::Result<Option<String>> {
    let Ok(text) = std::fs::read_to_string(lock) else {
        return Ok(None);
    };
    let doc: DocumentMut = text
        .parse()
        .with_context(|| format!("reading {}", lock.display()))?;
    let Some(packages) = doc.get("package").and_then(Item::as_array_of_tables) else {
        return Ok(None);
    };
    Ok(packages
        .iter()
        .find(|p| {
            p.get("name").and_then(Item::as_str) == Some("tokio") && !p.contains_key("source")
        })
        .and_then(|p| p.get("version").and_then(Item::as_str).map(str::to_owned)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("crashtest-patch-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_entry_is_added_once_and_the_rest_of_the_manifest_kept() {
        let dir = scratch("add");
        let manifest = dir.join("Cargo.toml");
        let original = "[package]\nname = \"app\" # the app\nversion = \"0.1.0\"\n\n[patch.crates-io]\nserde = { path = \"../serde\" }\n";
        std::fs::write(&manifest, original).unwrap();
        let shim = dir.join("target/crashtest-tokio/tokio-1.54.1");
        write(&manifest, &dir, &shim).unwrap();
        write(&manifest, &dir, &shim).unwrap();
        let written = std::fs::read_to_string(&manifest).unwrap();
        assert!(
            written.starts_with("[package]\nname = \"app\" # the app\n"),
            "{written}"
        );
        assert!(written.contains("serde = { path = \"../serde\" }"));
        assert_eq!(
            written
                .matches("tokio = { path = \"target/crashtest-tokio/tokio-1.54.1\" }")
                .count(),
            1,
            "{written}"
        );
        assert_eq!(patched_dir(&manifest).unwrap(), Some(shim));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_git_patch_of_tokio_is_not_overwritten() {
        let dir = scratch("git");
        let manifest = dir.join("Cargo.toml");
        std::fs::write(
            &manifest,
            "[patch.crates-io]\ntokio = { git = \"https://example.invalid/tokio\" }\n",
        )
        .unwrap();
        let err = write(&manifest, &dir, &dir.join("shim")).unwrap_err();
        assert!(err.to_string().contains("patches tokio already"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_stand_ins_directory_name_tells_its_version() {
        assert_eq!(
            version_in_name(Path::new("t/tokio-1.47.1")).as_deref(),
            Some("1.47.1")
        );
        assert_eq!(version_in_name(Path::new("t/tokio-latest")), None);
        assert_eq!(version_in_name(Path::new("t/shim")), None);
    }

    #[test]
    fn the_lock_file_tells_the_stand_ins_version() {
        let dir = scratch("lock");
        let lock = dir.join("Cargo.lock");
        std::fs::write(&lock, "version = 4\n\n[[package]]\nname = \"tokio\"\nversion = \"1.47.1\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\n\n[[package]]\nname = \"tokio\"\nversion = \"1.54.1\"\n").unwrap();
        assert_eq!(
            locked_stand_in_version(&lock).unwrap().as_deref(),
            Some("1.54.1")
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
