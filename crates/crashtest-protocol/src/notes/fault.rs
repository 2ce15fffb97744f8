//! The fault ledger's notes: a fault applied (with its id, when it was drawn from the seed)
//! or masked (drawn, numbered, and not applied, as a minimizer asked).

/// A note of the fault ledger (recorded on the node the fault hits; its text describes it).
///
/// ```
/// use crashtest_protocol::FaultNote;
/// assert_eq!(FaultNote::Applied { id: Some(3) }.encode(), ("fault", [3, 0, 0]));
/// assert_eq!(FaultNote::Applied { id: None }.encode(), ("fault", [u64::MAX, 0, 0]));
/// assert_eq!(FaultNote::decode("fault", [3, 1, 0]), Some(FaultNote::Masked { id: 3 }));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultNote {
    /// A fault was applied.
    Applied {
        /// Its id, if it was drawn from the seed (only those can be masked); none for a fault
        /// the test applied itself.
        id: Option<u64>,
    },
    /// A fault came up and was masked.
    Masked {
        /// Its id.
        id: u64,
    },
}

/// The source of every fault note.
const SOURCE: &str = "fault";
/// The first word of a fault without an id (ids count up from 0 and never reach it).
const NO_ID: u64 = u64::MAX;

impl FaultNote {
    /// The source and words the note is recorded as.
    ///
    /// # Panics
    ///
    /// Panics if an id is `u64::MAX`, the word that stands for no id.
    #[inline]
    pub fn encode(self) -> (&'static str, [u64; 3]) {
        let words = match self {
            FaultNote::Applied { id: Some(id) } => {
                assert_ne!(id, NO_ID, "fault ids stop short of u64::MAX");
                [id, 0, 0]
            }
            FaultNote::Applied { id: None } => [NO_ID, 0, 0],
            FaultNote::Masked { id } => {
                assert_ne!(id, NO_ID, "fault ids stop short of u64::MAX");
                [id, 1, 0]
            }
        };
        (SOURCE, words)
    }

    /// The note recorded as `source` with `words`, if the ledger records one so.
    pub fn decode(source: &str, words: [u64; 3]) -> Option<FaultNote> {
        if source != SOURCE {
            return None;
        }
        match words {
            [NO_ID, 0, 0] => Some(FaultNote::Applied { id: None }),
            [id, 0, 0] => Some(FaultNote::Applied { id: Some(id) }),
            [id, 1, 0] if id != NO_ID => Some(FaultNote::Masked { id }),
            _ => None,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn every_note() -> Vec<FaultNote> {
        vec![
            FaultNote::Applied { id: Some(0) },
            FaultNote::Applied { id: None },
            FaultNote::Masked { id: 0 },
        ]
    }

    #[test]
    fn other_words_decode_to_nothing() {
        assert_eq!(FaultNote::decode("fault", [1, 2, 0]), None);
        assert_eq!(FaultNote::decode("fault", [u64::MAX, 1, 0]), None);
        assert_eq!(FaultNote::decode("faults", [1, 0, 0]), None);
    }
}
