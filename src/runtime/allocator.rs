//! Giving freed memory back to the operating system.
//!
//! The initial lists parse pages of objects that are dropped at once; glibc's
//! malloc keeps those freed pages in its arenas, so resident memory would stay
//! at the list's peak. After the caches have listed, `malloc_trim` returns
//! them. (musl's allocator returns freed memory by itself.)

/// Returns free heap memory to the OS where the allocator needs to be asked.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}
