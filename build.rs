//! Lays out the release binary's hot code together (link/hot-functions.txt).
//!
//! A running controller executes about a quarter of its code, scattered
//! over the whole binary; the kernel maps code in 64 KiB windows around each
//! page touched, so nearly all of it ends up resident. Listing the functions
//! a run executes first puts them in a few contiguous megabytes. The list
//! comes from `make orderfile` (scripts/release/orderfile.sh); names it lists that a
//! build lacks are skipped, so a stale list costs memory, never correctness.
//! Only for the target whose default linker (rust-lld) takes the list, and
//! not when the build picks a linker of its own (GNU ld refuses the flag);
//! RANDOMSECRET_NO_ORDER=1 turns it off.

use std::env;

fn main() {
    println!("cargo:rerun-if-changed=link/hot-functions.txt");
    println!("cargo:rerun-if-env-changed=RANDOMSECRET_NO_ORDER");
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER");
    let target = env::var("TARGET").unwrap_or_default();
    let profile = env::var("PROFILE").unwrap_or_default();
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let own_linker = ["linker", "fuse-ld"].iter().any(|f| flags.contains(f))
        || env::var_os("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_some();
    if target != "x86_64-unknown-linux-gnu"
        || profile != "release"
        || own_linker
        || env::var_os("RANDOMSECRET_NO_ORDER").is_some()
    {
        return;
    }
    let list = std::path::Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap())
        .join("link/hot-functions.txt");
    println!(
        "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
        list.display()
    );
    println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
}
