//! Giving freed memory back to the operating system.
//!
//! The binary runs on jemalloc (`src/main.rs`), configured to return freed
//! pages within a second by itself. Under glibc's malloc (tests, or a build
//! without jemalloc), the pages freed after the initial lists would stay in
//! its arenas: `malloc_trim` returns them.

/// Returns free heap memory to the OS where the allocator needs to be asked.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; it has no preconditions.
    // Under jemalloc it finds glibc's heap all but empty and returns at once.
    unsafe {
        libc::malloc_trim(0);
    }
}
