//! The `OpenOptions` builder, written once for both file APIs: [`crate::OpenOptions`] (async,
//! shaped like `tokio::fs::OpenOptions`) and [`crate::sync::OpenOptions`] (shaped like
//! `std::fs::OpenOptions`).
//!
//! The two types must stay distinct (their `open` is async in one and blocking in the other,
//! as in tokio and std) yet are the same builder: one set of flags, six setters and a mode. So
//! [`open_options!`] defines a type with the flags and the setters, and each API adds its own
//! `open`. A macro rather than one generic type, because a type parameter would show in both
//! public names and make `OpenOptions::new()` ambiguous.
//!
//! Outside a simulation the flags become the real world's options through
//! [`OpenFlags::to_std`], the one place that lists them.

use crate::disk::OpenFlags;

impl OpenFlags {
    /// The same flags as `std::fs::OpenOptions`, for opening a real file.
    pub(crate) fn to_std(self) -> std::fs::OpenOptions {
        let mut options = std::fs::OpenOptions::new();
        options
            .read(self.read)
            .write(self.write)
            .append(self.append)
            .truncate(self.truncate)
            .create(self.create)
            .create_new(self.create_new);
        #[cfg(unix)]
        if let Some(mode) = self.mode {
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
        }
        options
    }

    /// True if opening with these flags may change the disk (create the file, or cut it): a
    /// crash point for exhaustive exploration.
    pub(crate) fn mutates(self) -> bool {
        self.create || self.create_new || self.truncate
    }
}

/// Defines an `OpenOptions` type: its flags, `new`, the six setters and `mode`, documented with
/// examples that name the type by `$path`.
macro_rules! open_options {
    ($(#[$attr:meta])* pub struct $name:ident, $path:literal) => {
        $(#[$attr])*
        #[derive(Clone, Debug, Default)]
        pub struct $name {
            flags: $crate::disk::OpenFlags,
        }

        impl $name {
            #[doc = "Options with every flag off."]
            #[doc = ""]
            #[doc = "```"]
            #[doc = concat!("let _ = ", $path, "::new();")]
            #[doc = "```"]
            pub fn new() -> $name {
                $name::default()
            }

            $crate::open_options::open_options!(@flag $name, $path, read,
                "Open for reading.", ".read(true)");
            $crate::open_options::open_options!(@flag $name, $path, write,
                "Open for writing.", ".write(true)");
            $crate::open_options::open_options!(@flag $name, $path, append,
                "Open for appending: every write goes to the end of the file.",
                ".append(true)");
            $crate::open_options::open_options!(@flag $name, $path, truncate,
                "Cut an existing file to length 0 (needs `write`).",
                ".write(true).truncate(true)");
            $crate::open_options::open_options!(@flag $name, $path, create,
                "Create the file if it does not exist (needs `write` or `append`).",
                ".write(true).create(true)");
            $crate::open_options::open_options!(@flag $name, $path, create_new,
                "Create the file, failing with `AlreadyExists` if it exists.",
                ".write(true).create_new(true)");

            #[doc = "The permission bits of a file the open creates, before the umask (022 inside"]
            #[doc = "a simulation); 0o666 if not set. As `std::os::unix::fs::OpenOptionsExt::mode`."]
            #[doc = ""]
            #[doc = "```"]
            #[doc = concat!("let _ = ", $path, "::new().write(true).create(true).mode(0o600);")]
            #[doc = "```"]
            pub fn mode(&mut self, mode: u32) -> &mut $name {
                self.flags.mode = Some(mode);
                self
            }
        }
    };
    (@flag $name:ident, $path:literal, $flag:ident, $doc:literal, $example:literal) => {
        #[doc = $doc]
        #[doc = ""]
        #[doc = "```"]
        #[doc = concat!("let _ = ", $path, "::new()", $example, ";")]
        #[doc = "```"]
        pub fn $flag(&mut self, $flag: bool) -> &mut $name {
            self.flags.$flag = $flag;
            self
        }
    };
}

pub(crate) use open_options;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_reach_the_real_options() {
        let dir = std::env::temp_dir().join(format!("crashtest-fs-flags-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("once");
        let flags = OpenFlags {
            write: true,
            create_new: true,
            ..OpenFlags::default()
        };
        assert!(flags.mutates());
        flags.to_std().open(&path).unwrap();
        let again = flags.to_std().open(&path).unwrap_err();
        assert_eq!(again.kind(), std::io::ErrorKind::AlreadyExists);
        let read = OpenFlags {
            read: true,
            ..OpenFlags::default()
        };
        assert!(!read.mutates());
        read.to_std().open(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
