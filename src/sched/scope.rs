//! Structured scopes (`corun_scope_t`): coroutines spawned into a scope
//! run under its cancel token, the scope is joined as a whole, and the
//! first of them to fail cancels the others (first error wins), so none
//! outlives the scope.
//!
//! The scope's token is a child of the token its creator runs under: a
//! cancelled outer scope cancels the inner ones. A member's result is an
//! int (0: success, else an errno-like code); the first non-zero one is
//! kept and cancels the token, which makes every parked call of the other
//! members fail with ECANCELED. `wait` is not a cancellation point: it
//! returns only when every member has returned.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering::SeqCst};
use std::sync::Arc;

use super::token::{self, Inner};
use super::{sync, Entry};

/// A member's start routine.
pub type Member = extern "C" fn(*mut c_void) -> c_int;

pub struct Scope {
    tok: Arc<Inner>,
    live: AtomicU32,
    first_err: AtomicI32,
}

impl Scope {
    /// A scope under the running coroutine's token, cancelled at the
    /// monotonic `deadline` if any.
    pub fn new(deadline: Option<u64>) -> Arc<Scope> {
        let parent = token::current_token();
        Arc::new(Scope {
            tok: Inner::new(parent.as_ref(), deadline),
            live: AtomicU32::new(0),
            first_err: AtomicI32::new(0),
        })
    }

    pub fn token(&self) -> &Arc<Inner> {
        &self.tok
    }

    /// Starts `f(arg)` as a member (also into a cancelled scope: it runs,
    /// and its waits fail). Err(errno) when no coroutine can be made.
    pub fn spawn(self: &Arc<Self>, f: Member, arg: *mut c_void, stack: usize) -> Result<(), i32> {
        self.live.fetch_add(1, SeqCst);
        let s = self.clone();
        let entry = Entry::Rust(Box::new(move || {
            let _ = token::enter(Some(s.tok.clone()));
            let r = f(arg);
            let _ = token::enter(None);
            s.ended(r);
            std::ptr::null_mut()
        }));
        match super::spawn(entry, stack) {
            Ok(_) => Ok(()),
            Err(e) => {
                self.ended(0);
                Err(e)
            }
        }
    }

    fn ended(&self, r: c_int) {
        if r != 0
            && self
                .first_err
                .compare_exchange(0, r, SeqCst, SeqCst)
                .is_ok()
        {
            self.tok.cancel();
        }
        if self.live.fetch_sub(1, SeqCst) == 1 {
            sync::wake_all(&self.live);
        }
    }

    /// Cancels every member's waits.
    pub fn cancel(&self) -> bool {
        self.tok.cancel()
    }

    /// Waits until no member runs; the first error (0: none).
    pub fn wait(&self) -> c_int {
        loop {
            let v = self.live.load(SeqCst);
            if v == 0 {
                return self.first_err.load(SeqCst);
            }
            sync::wait(&self.live, v, None);
        }
    }

    /// Members running now.
    pub fn live(&self) -> u32 {
        self.live.load(SeqCst)
    }
}
