//! Per-coroutine thread-local storage (filled in by the thread-identity work).

/// A coroutine's own static TLS and glibc thread descriptor.
pub struct ThreadBlock {
    tp: usize,
}

impl ThreadBlock {
    /// The thread pointer (fs base) of this block.
    pub fn tp(&self) -> usize {
        self.tp
    }
}
