//! What a test is, as the test binary tells the tool: the answer to `CRASHTEST_DESCRIBE`.
//!
//! The tool asks before it runs a test (it starts the test with `CRASHTEST_DESCRIBE=PATH`; the
//! runner writes one [`TestInfo`] as JSON to `PATH` and runs no seed). The answer says that the
//! test is a `#[crashtest::test]` at all (a plain test writes nothing), which environment
//! variables select its behaviour (so that every reproduce line and results header carries
//! their values), and whether it was built with debug assertions (so that a reproduce line
//! says `--release` when the seeds ran in release).

use serde::{Deserialize, Serialize};

/// A test, as its binary describes it.
///
/// ```
/// use crashtest_protocol::describe::TestInfo;
/// let info = TestInfo { test: "t".into(), env: vec!["WORKFLOW_BUG".into()], release: true, version: "0.1.0".into(), exhaustive: false };
/// let text = serde_json::to_string(&info).unwrap();
/// assert_eq!(text, r#"{"test":"t","env":["WORKFLOW_BUG"],"release":true,"version":"0.1.0"}"#);
/// assert_eq!(serde_json::from_str::<TestInfo>(&text).unwrap(), info);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestInfo {
    /// The test, as libtest names it.
    pub test: String,
    /// The environment variables the test declares as selecting its behaviour.
    #[serde(default)]
    pub env: Vec<String>,
    /// Whether it was built without debug assertions (`cargo test --release`).
    #[serde(default)]
    pub release: bool,
    /// The crashtest version it was built with.
    #[serde(default)]
    pub version: String,
    /// Whether it is an exhaustive test (`#[crashtest::test(exhaustive)]`): it explores every
    /// crash case of one seed in one process, which no seed range, mask or branch drives.
    /// Left out of the JSON when false, as older binaries write it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exhaustive: bool,
}
