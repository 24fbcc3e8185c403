//! Execution contexts: a coroutine is a corosensei coroutine running on a
//! pooled stack with a guard page. This layer knows nothing of scheduling:
//! it makes, resumes and recycles contexts, and reports stack overflows.

pub mod coroutine;
pub mod fork_lists;
pub mod overflow;
pub mod robust;
pub mod setxid;
pub mod stack;
pub mod tls;
pub mod tls_storage;

pub use coroutine::{Coroutine, Resumed, Yielder};
pub use stack::{GuardedStack, StackPool};
