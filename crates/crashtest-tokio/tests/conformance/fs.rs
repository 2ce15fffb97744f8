//! The file system calls whose answers the simulated disk must give as the host's does:
//! `fs::File` handles made by `try_clone`, which share their open file's cursor (reads,
//! writes and seeks through either move it for both, and the file outlives the handle it was
//! cloned from), permission bits (`set_permissions` on paths and open files, the `mode`
//! of `OpenOptions` and `DirBuilder`, read back through metadata), and hard links. On tokio a script works in
//! a fresh directory of the host's temporary directory; in a simulation, at the node's root.
//! The modes asked for keep group and other bits clear, so that any usual umask leaves them
//! whole; whether a forbidden open fails is not compared, since a superuser's does not.

macro_rules! cloned_files_share_a_cursor {
    ($tokio:ident, $dir:expr) => {
        async move {
            use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
            use $tokio as tokio;
            let path = std::path::Path::new(&$dir).join("log");
            let mut seen: Vec<String> = Vec::new();
            let mut writer = tokio::fs::File::options()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
                .await
                .unwrap();
            writer.write_all(b"abcdef").await.unwrap();
            let mut reader = writer.try_clone().await.unwrap();
            seen.push(format!(
                "clone at {}",
                reader.stream_position().await.unwrap()
            ));
            reader.seek(std::io::SeekFrom::Start(2)).await.unwrap();
            let mut two = [0; 2];
            reader.read_exact(&mut two).await.unwrap();
            seen.push(format!("read {:?}", String::from_utf8_lossy(&two)));
            seen.push(format!(
                "writer at {}",
                writer.stream_position().await.unwrap()
            ));
            writer.write_all(b"!").await.unwrap();
            writer.flush().await.unwrap();
            seen.push(format!(
                "reader at {}",
                reader.stream_position().await.unwrap()
            ));
            drop(writer);
            reader.rewind().await.unwrap();
            let mut all = String::new();
            reader.read_to_string(&mut all).await.unwrap();
            seen.push(format!("after the first handle's drop {all:?}"));
            reader.set_len(3).await.unwrap();
            let again = reader.try_clone().await.unwrap();
            seen.push(format!("length {}", again.metadata().await.unwrap().len()));
            seen
        }
    };
}

macro_rules! permission_bits {
    ($tokio:ident, $dir:expr) => {
        async move {
            use std::os::unix::fs::PermissionsExt;
            use $tokio as tokio;
            let dir = std::path::Path::new(&$dir).to_owned();
            let mode =
                |meta: std::fs::Metadata| format!("{:o}", meta.permissions().mode() & 0o7777);
            let mut seen: Vec<String> = Vec::new();
            let key = dir.join("key");
            tokio::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&key)
                .await
                .unwrap();
            seen.push(format!(
                "created {}",
                mode(tokio::fs::metadata(&key).await.unwrap())
            ));
            tokio::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o400))
                .await
                .unwrap();
            let meta = tokio::fs::metadata(&key).await.unwrap();
            seen.push(format!(
                "read-only {} {}",
                mode(meta.clone()),
                meta.permissions().readonly()
            ));
            let file = tokio::fs::File::open(&key).await.unwrap();
            file.set_permissions(std::fs::Permissions::from_mode(0o4700))
                .await
                .unwrap();
            seen.push(format!(
                "through a reader {}",
                mode(file.metadata().await.unwrap())
            ));
            let private = dir.join("private");
            tokio::fs::DirBuilder::new()
                .mode(0o700)
                .create(&private)
                .await
                .unwrap();
            seen.push(format!(
                "directory {}",
                mode(tokio::fs::metadata(&private).await.unwrap())
            ));
            let mut listing = tokio::fs::read_dir(&dir).await.unwrap();
            let mut listed = Vec::new();
            while let Some(entry) = listing.next_entry().await.unwrap() {
                let name = entry.file_name().to_string_lossy().into_owned();
                listed.push(format!("{name} {}", mode(entry.metadata().await.unwrap())));
            }
            listed.sort();
            seen.extend(listed);
            let missing = tokio::fs::set_permissions(
                dir.join("missing"),
                std::fs::Permissions::from_mode(0o600),
            )
            .await
            .unwrap_err();
            seen.push(format!("missing {:?}", missing.kind()));
            seen
        }
    };
}

macro_rules! hard_links {
    ($tokio:ident, $dir:expr) => {
        async move {
            use std::os::unix::fs::PermissionsExt;
            use tokio::io::AsyncWriteExt;
            use $tokio as tokio;
            let dir = std::path::Path::new(&$dir).to_owned();
            let (first, second) = (dir.join("first"), dir.join("second"));
            let mut seen: Vec<String> = Vec::new();
            let mut file = tokio::fs::File::create(&first).await.unwrap();
            file.write_all(b"one").await.unwrap();
            file.flush().await.unwrap();
            tokio::fs::hard_link(&first, &second).await.unwrap();
            file.write_all(b" two").await.unwrap();
            file.flush().await.unwrap();
            let read = tokio::fs::read(&second).await.unwrap();
            seen.push(format!(
                "through the link {:?}",
                String::from_utf8_lossy(&read)
            ));
            tokio::fs::set_permissions(&first, std::fs::Permissions::from_mode(0o640))
                .await
                .unwrap();
            let meta = tokio::fs::metadata(&second).await.unwrap();
            seen.push(format!(
                "link's mode {:o}",
                meta.permissions().mode() & 0o7777
            ));
            tokio::fs::remove_file(&first).await.unwrap();
            let read = tokio::fs::read(&second).await.unwrap();
            seen.push(format!(
                "after removing the first {:?}",
                String::from_utf8_lossy(&read)
            ));
            let again = tokio::fs::hard_link(&second, &second).await.unwrap_err();
            seen.push(format!("onto itself {:?}", again.kind()));
            let missing = tokio::fs::hard_link(&first, dir.join("third"))
                .await
                .unwrap_err();
            seen.push(format!("from a removed name {:?}", missing.kind()));
            let directory = dir.join("d");
            tokio::fs::create_dir(&directory).await.unwrap();
            let refused = tokio::fs::hard_link(&directory, dir.join("e"))
                .await
                .unwrap_err();
            seen.push(format!(
                "a directory {:?} {:?}",
                refused.kind(),
                refused.raw_os_error()
            ));
            // A copy onto another name of the same file cuts it before reading it.
            let third = dir.join("third");
            tokio::fs::hard_link(&second, &third).await.unwrap();
            let copied = tokio::fs::copy(&second, &third).await.unwrap();
            let left = tokio::fs::read(&second).await.unwrap();
            seen.push(format!("copied onto itself {copied}, left {}", left.len()));
            seen
        }
    };
}

/// Compares a file system script across tokio, in a fresh directory of the host's temporary
/// directory, and the stand-in, at the node's root.
macro_rules! conform_on_disk {
    ($script:ident) => {{
        let scratch = tempfile::tempdir().expect("a scratch directory");
        let dir = scratch.path().to_owned();
        crate::harness::same_everywhere($script!(real, dir), || $script!(crashtest_tokio, "/"));
    }};
}

#[test]
fn cloned_files_share_a_cursor_as_on_tokio() {
    conform_on_disk!(cloned_files_share_a_cursor);
}

#[test]
fn permission_bits_read_back_as_on_tokio() {
    conform_on_disk!(permission_bits);
}

#[test]
fn hard_links_behave_as_on_tokio() {
    conform_on_disk!(hard_links);
}
