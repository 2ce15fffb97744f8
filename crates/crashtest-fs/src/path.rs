//! Paths on a simulated disk: every node's disk has one root, `/`, and a path is resolved
//! lexically into its names from the root.
//!
//! A relative path is taken from the root (each node's working directory is `/`); `.` is
//! skipped and `..` goes up one name (never above the root). The kernel walks a path name by
//! name, so the directory a `..` steps out of must exist and be a directory: the names keep
//! each such directory for the disk to check when it resolves them. A name that is not valid UTF-8
//! is refused with `InvalidInput`: the simulated directories hold `String` names so that their
//! order is plain and stable. A name longer than 255 bytes is refused with `ENAMETOOLONG`, as
//! Linux refuses it.

use std::io;
use std::path::{Component, Path};

use crate::errors;

/// The longest name Linux's file systems take, in bytes (`NAME_MAX`).
const MAX_NAME_LEN: usize = 255;

/// A path resolved into its names below the root; empty for the root itself. Two paths are
/// equal when they lead to the same names, however they got there.
#[derive(Clone, Debug)]
pub(crate) struct Names {
    pub(crate) names: Vec<String>,
    /// The directories a `..` of the path stepped out of, each as its names from the root.
    pub(crate) stepped_out: Vec<Vec<String>>,
}

impl PartialEq for Names {
    fn eq(&self, other: &Names) -> bool {
        self.names == other.names
    }
}

impl Eq for Names {}

impl Names {
    /// The path of `names` from the root, with no `..` walked.
    pub(crate) fn new(names: Vec<String>) -> Names {
        Names {
            names,
            stepped_out: Vec::new(),
        }
    }

    /// Resolves `path` lexically.
    pub(crate) fn parse(path: &Path) -> io::Result<Names> {
        let mut names: Vec<String> = Vec::new();
        let mut stepped_out: Vec<Vec<String>> = Vec::new();
        for component in path.components() {
            match component {
                Component::Prefix(_) => return Err(errors::invalid_input()),
                Component::RootDir | Component::CurDir => {}
                Component::ParentDir => {
                    if !names.is_empty() {
                        stepped_out.push(names.clone());
                        names.pop();
                    }
                }
                Component::Normal(name) => {
                    if name.len() > MAX_NAME_LEN {
                        return Err(errors::name_too_long());
                    }
                    let name = name.to_str().ok_or_else(errors::invalid_input)?;
                    names.push(name.to_owned());
                }
            }
        }
        for name in &names {
            assert!(!name.is_empty(), "a resolved path holds no empty name");
            assert!(
                name != "." && name != "..",
                "a resolved path holds no {name:?}"
            );
            assert!(!name.contains('/'), "a name holds no separator: {name:?}");
        }
        assert!(
            stepped_out.iter().all(|dir| !dir.is_empty()),
            "the root is a directory: no `..` needs it checked"
        );
        Ok(Names { names, stepped_out })
    }

    /// The parent's names and the last name, or `None` for the root.
    pub(crate) fn split_last(&self) -> Option<(&[String], &str)> {
        let split = self
            .names
            .split_last()
            .map(|(last, parent)| (parent, last.as_str()));
        assert_eq!(
            split.is_none(),
            self.names.is_empty(),
            "only the root has no last name"
        );
        split
    }

    /// True if `self` is `other` or lies below it.
    pub(crate) fn starts_with(&self, other: &Names) -> bool {
        self.names.starts_with(&other.names)
    }

    /// The path as text, for traces and reports.
    pub(crate) fn display(&self) -> String {
        let text = format!("/{}", self.names.join("/"));
        assert!(text.starts_with('/'), "a displayed path is absolute");
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(path: &str) -> Vec<String> {
        Names::parse(Path::new(path)).unwrap().names
    }

    #[test]
    fn relative_and_absolute_paths_resolve_from_the_root() {
        assert_eq!(names("/a/b"), ["a", "b"]);
        assert_eq!(names("a/./b"), ["a", "b"]);
        assert_eq!(names("/a/../b/"), ["b"]);
        assert_eq!(names("/../.."), Vec::<String>::new());
    }

    #[test]
    fn split_last_separates_parent_and_name() {
        let parsed = Names::parse(Path::new("/x/y/z")).unwrap();
        let (parent, last) = parsed.split_last().unwrap();
        assert_eq!(parent, ["x", "y"]);
        assert_eq!(last, "z");
        assert!(Names::new(Vec::new()).split_last().is_none());
        assert_eq!(parsed.display(), "/x/y/z");
    }
}
