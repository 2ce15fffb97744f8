//! The attribute's expansion compiles beside user items of any ordinary name: the code it
//! generates must not shadow what the test body calls.

/// A user's helper that takes an argument, named as the expansion's inner fn once was: the
/// expansion shadowed it, and the call below failed to compile (E0061).
fn body(words: &str) -> usize {
    words.len()
}

#[crashtest::test(seeds = 2)]
async fn a_user_fn_named_body_is_callable_from_the_test() {
    assert_eq!(body("four"), 4);
}

#[allow(
    non_upper_case_globals,
    reason = "named like the runner's entry point on purpose"
)]
const run_test: u8 = 7;

#[crashtest::test(seeds = 1)]
async fn a_user_item_named_like_the_runner_entry_point_is_left_alone() {
    assert_eq!(run_test, 7);
}
