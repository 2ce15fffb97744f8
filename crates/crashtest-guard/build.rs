//! Sets `cfg(guards)` where the guards exist: Linux with glibc on x86-64 or AArch64, built
//! with the `interpose` feature. The crate's code and its tests name this one condition
//! instead of repeating it.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(guards)");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let interpose = std::env::var_os("CARGO_FEATURE_INTERPOSE").is_some();
    let linux_glibc = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    let arch = matches!(var("CARGO_CFG_TARGET_ARCH").as_str(), "x86_64" | "aarch64");
    if interpose && linux_glibc && arch {
        println!("cargo::rustc-cfg=guards");
    }
}
