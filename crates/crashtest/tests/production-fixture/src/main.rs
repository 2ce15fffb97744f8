//! The production binary: prints whether the guards were linked into it.

fn main() {
    let present = crashtest_production_fixture::guards_present();
    println!("guards: {}", if present { "present" } else { "absent" });
}
