//! Paths on a simulated disk: every node's disk has one root, `/`, and a path is resolved
//! lexically into its names from the root.
//!
//! A relative path is taken from the root (each node's working directory is `/`); `.` is
//! skipped and `..` goes up one name (never above the root). A name that is not valid UTF-8
//! is refused with `InvalidInput`: the simulated directories hold `String` names so that their
//! order is plain and stable.

use std::io;
use std::path::{Component, Path};

use crate::errors;

/// A path resolved into its names below the root; empty for the root itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Names(pub(crate) Vec<String>);

impl Names {
    /// Resolves `path` lexically.
    pub(crate) fn parse(path: &Path) -> io::Result<Names> {
        let mut names: Vec<String> = Vec::new();
        for component in path.components() {
            match component {
                Component::Prefix(_) => return Err(errors::invalid_input()),
                Component::RootDir | Component::CurDir => {}
                Component::ParentDir => {
                    names.pop();
                }
                Component::Normal(name) => {
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
        Ok(Names(names))
    }

    /// The parent's names and the last name, or `None` for the root.
    pub(crate) fn split_last(&self) -> Option<(&[String], &str)> {
        let split = self
            .0
            .split_last()
            .map(|(last, parent)| (parent, last.as_str()));
        assert_eq!(
            split.is_none(),
            self.0.is_empty(),
            "only the root has no last name"
        );
        split
    }

    /// True if `self` is `other` or lies below it.
    pub(crate) fn starts_with(&self, other: &Names) -> bool {
        self.0.starts_with(&other.0)
    }

    /// The path as text, for traces and reports.
    pub(crate) fn display(&self) -> String {
        let text = format!("/{}", self.0.join("/"));
        assert!(text.starts_with('/'), "a displayed path is absolute");
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(path: &str) -> Vec<String> {
        Names::parse(Path::new(path)).unwrap().0
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
        assert!(Names(Vec::new()).split_last().is_none());
        assert_eq!(parsed.display(), "/x/y/z");
    }
}
