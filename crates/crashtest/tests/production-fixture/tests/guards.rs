//! The test build: the dev-dependency's default features bring every guard back.

#[test]
fn the_test_build_has_the_guards() {
    assert!(crashtest_production_fixture::guards_present());
}
