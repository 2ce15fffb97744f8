//! Shared by the tests that compare the simulated disk with the real file system.

/// One call's outcome: success with its value, or the error's kind and OS error number.
pub(crate) fn outcome<T: std::fmt::Debug>(call: &str, result: std::io::Result<T>) -> String {
    match result {
        Ok(value) => format!("{call}: ok {value:?}"),
        Err(error) => format!(
            "{call}: {:?} (os error {:?})",
            error.kind(),
            error.raw_os_error()
        ),
    }
}
