//! glibc's thread lists in a child forked by a coroutine with a descriptor
//! of its own.
//!
//! # Why
//!
//! glibc keeps the descriptor of every thread it made on one of two lists
//! in ld.so's `_rtld_global`: `dl_stack_used` (stacks it allocated) and
//! `dl_stack_user` (the first thread, stacks the program gave). In a
//! forked child, `fork` only keeps the thread that called it, and finds it
//! by the thread pointer (`THREAD_SELF`): every other descriptor on
//! `dl_stack_used` gets tid 0, "free", and the list goes whole into the
//! stack cache that `pthread_create` takes its stacks from; the lists are
//! emptied and the caller's descriptor alone put back.
//!
//! A coroutine's thread pointer names its own descriptor (`tls.rs`), which
//! glibc never listed. So in a child forked by one, the descriptor of the
//! worker's kernel thread, the one thread the child has, went to the cache
//! as free, with the stack that thread runs its scheduler on. The child's
//! next kernel thread (a worker of its own, the preemption monitor) was
//! given that stack and that descriptor: two threads on one stack, and the
//! child died of SIGSEGV at a jump to garbage (CPython's
//! `test_threading`: a thread forks, the child starts a thread and ends;
//! `c-tests/fork_lists.c`). And the coroutine's descriptor went on
//! `dl_stack_used`, where the pool would later re-link it to itself under
//! glibc's feet.
//!
//! # What is done
//!
//! In the child, before anything can make a thread (`setxid.rs`,
//! `after_fork_child`): the coroutine's descriptor leaves the list glibc
//! put it on, and the worker thread's descriptor leaves the cache and goes
//! back where glibc keeps it for that thread natively (the first thread's
//! list for the process's first thread, the list the coroutine's was on
//! for any other), with the child's tid (not 0: not free). The child's lists
//! are then those of a process whose only thread forked natively: the
//! worker's stack and descriptor stay its own, and `setuid`'s broadcast
//! finds the thread. The cache keeps counting the stack's size (a private
//! counter of ld.so's), which only makes glibc trim its cache a stack
//! earlier.
//!
//! Each link is checked before it is followed: nothing is written unless
//! glibc left the coroutine's descriptor alone on a list whose head lies in
//! `_rtld_global` (a raw `clone`, which skips glibc's fork, leaves it
//! unlinked and is left as it is).

/// What `tls.rs` learnt of glibc's thread lists at start.
pub struct Layout {
    /// Offsets in `struct pthread` of `list_t list` and of `tid`.
    pub list: usize,
    pub tid: usize,
    /// The descriptor of the thread the layout was learnt on (the
    /// process's first) and its list's head then (`dl_stack_user`).
    pub first_thread: (usize, usize),
    /// `_rtld_global`'s address and a length that covers it.
    pub rtld: (usize, usize),
}

/// # Safety
/// `p` must be a readable, aligned word.
unsafe fn get(p: usize) -> usize {
    // SAFETY: the caller's contract.
    unsafe { (p as *const usize).read() }
}

/// # Safety
/// `p` must be a writable, aligned word.
unsafe fn put(p: usize, v: usize) {
    // SAFETY: the caller's contract.
    unsafe { (p as *mut usize).write(v) }
}

/// In a child forked by a coroutine whose descriptor is `own`, on the
/// forking kernel thread, whose glibc descriptor is `worker`: puts the
/// lists as a native fork by `worker` leaves them. True if it did; false
/// if there was nothing to do or glibc's lists are not as expected.
pub fn relist_after_fork(own: usize, worker: usize) -> bool {
    let Some(l) = super::tls::thread_lists() else {
        return false;
    };
    if own == worker || own == 0 || worker == 0 {
        return false;
    }
    let in_rtld = |p: usize| p >= l.rtld.0 && p < l.rtld.0 + l.rtld.1 && p.is_multiple_of(8);
    let (c, w) = (own + l.list, worker + l.list);
    // SAFETY: `own` and `worker` are live descriptors (the coroutine's, and
    // the thread's that runs it); a head is read only once known to lie in
    // `_rtld_global`, and a neighbour of `worker` is another descriptor on
    // glibc's cache list, read only through links that point back. The
    // child has one thread: nothing else reads or writes the lists.
    unsafe {
        let head = get(c);
        if head == c || get(c + 8) != head || !in_rtld(head) || get(head) != c || get(head + 8) != c
        {
            return false;
        }
        // The coroutine's descriptor off glibc's list, linked to itself
        // as the pool keeps it.
        put(head, head);
        put(head + 8, head);
        put(c, c);
        put(c + 8, c);
        // The worker's off the stack cache, if it is linked there.
        let (next, prev) = (get(w), get(w + 8));
        if next != w && next != 0 && prev != 0 && get(next + 8) == w && get(prev) == w {
            put(prev, next);
            put(next + 8, prev);
        }
        // Back on its list: the first thread's (emptied by the fork) or
        // the used stacks' (the one the coroutine's was put on).
        let target = if worker == l.first_thread.0 && in_rtld(l.first_thread.1) {
            l.first_thread.1
        } else {
            head
        };
        let first = get(target);
        put(w, first);
        put(w + 8, target);
        put(first + 8, w);
        put(target, w);
        ((worker + l.tid) as *mut i32).write(crate::sys::gettid());
    }
    true
}
