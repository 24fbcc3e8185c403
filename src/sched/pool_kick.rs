//! Cutting a blocking-pool system call short when a signal comes for the
//! coroutine that waits for it (the pool is `blocking.rs`).
//!
//! A pool job normally holds signals off: the helper thread uses the
//! caller's buffers, so no handler may run in the caller until the job is
//! done (`ident.sig.uninterruptible`), as a disk read holds them natively.
//! But some pool jobs are socket waits the kernel interrupts natively: an
//! `accept` on a listener another process shares (`hooks/listener.rs`)
//! blocks for as long as no connection comes, and natively a signal to the
//! waiting thread ends it with EINTR (or restarts it, for handlers with
//! SA_RESTART: signal(7)). Apache's worker MPM stops its listener thread
//! that way: the child's main thread sends it a signal whose handler does
//! nothing, and the accept that lost the race to another child fails with
//! EINTR. Held off, the listener stayed in the helper's accept until the
//! parent gave up on the child (SIGTERM took 6 s instead of 2).
//!
//! The same holds for the other pool jobs whose call waits for ever and
//! ends at a handler natively (signal(7)): file lock waits, `open` of a
//! FIFO, a large tty write, a `semop` mixing IPC_NOWAIT, `io_getevents`
//! (`blocking::run_blocking_restartable` applies each one's rule).
//!
//! Such a job is "kickable" (`run_blocking_interruptible`):
//!
//! - the coroutine's wait lets signals wake it (`ident.sig.pool_kick` is
//!   KICKABLE: `signals::deaf` says no) although it stays uninterruptible
//!   (no handler runs before the job is over);
//! - woken with a deliverable signal, it withdraws the job if no helper
//!   took it yet (the call then fails with EINTR without being made), else
//!   sets the job's `requested` flag and sends the helper thread `SIGNAL`
//!   with `rt_tgsigqueueinfo` and a marker value (under the job's lock
//!   while the job runs: a kick never reaches the helper's next job), and
//!   waits again (KICKED: further signals wait for the job's end),
//!   sending the kick again after
//!   `REKICK_NS`, then twice as long each time, while the job runs;
//! - the helper makes the call inside `window`: `SIGNAL` is unblocked only
//!   around it (helpers block every signal otherwise), and the flag is
//!   looked at after the unblock and before the call. A kick that lands
//!   before the look is seen there (the call is not made: EINTR); one that
//!   lands between the look and the system call's entry is lost, and the
//!   next kick, `REKICK_NS` (2 ms) later, interrupts the call. The action of
//!   `SIGNAL` is a handler that does nothing, without SA_RESTART: the
//!   interrupted call fails with EINTR. A call that completed as the kick
//!   came returns its result (an accepted connection is never lost);
//! - back from the job, the coroutine runs its handlers (`run_blocking`),
//!   and the hook decides from the handler counters (`Interruptible`), as
//!   for any other wait: EINTR unless every handler that ran had SA_RESTART
//!   and the socket has no timeout; otherwise the call waits again. A kick
//!   after which no handler ran (the signal was taken by another thread
//!   meanwhile) also waits again.
//!
//! `SIGNAL` is SIGRTMAX, installed at the first kickable job only, if the
//! program set no action for it (it may have reset it to SIG_DFL); a kick
//! carries a marker (SI_QUEUE, our pid, `KICK_VALUE`), and any other
//! SIGRTMAX ends the process as its default action would. A program that
//! sets a handler for it, or SIG_IGN once corun's is in, gets it: jobs are
//! then not kicked (they hold signals off, as before), and a kick sent
//! just before is dropped by the trampoline (`is_kick`), never seen by the
//! program's handler. SIG_DFL set by the program once corun's action is
//! in keeps corun's action in the kernel (`default_action`: a kick on its
//! way must not meet the default action, which would end the process),
//! and kicks resume.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Once;

/// corun's kick for helper threads: glibc's SIGRTMAX.
pub const SIGNAL: i32 = 64;
/// How long a kicked job may go on before the helper is kicked again (the
/// kick may have landed just before the system call began).
pub const REKICK_NS: u64 = 2_000_000;

/// `ident.sig.pool_kick`: the coroutine waits for no kickable job.
pub const NONE: u8 = 0;
/// It waits for a kickable job, not kicked yet: a signal wakes it.
pub const KICKABLE: u8 = 1;
/// Its job was kicked: signals wait for the job's end.
pub const KICKED: u8 = 2;

/// Set up (the handler installed, the program has not taken the signal).
static READY: AtomicBool = AtomicBool::new(false);
/// The program set an action for `SIGNAL`: never kick again.
static TAKEN: AtomicBool = AtomicBool::new(false);
static INSTALL: Once = Once::new();
/// Pool jobs a signal cut short (withdrawn unrun, or their helper kicked).
static CUT: AtomicU64 = AtomicU64::new(0);

/// Counts one job cut short.
pub fn note_cut() {
    CUT.fetch_add(1, Ordering::Relaxed);
}

/// Pool jobs a signal cut short so far (CORUN_STATS).
pub fn cut() -> u64 {
    CUT.load(Ordering::Relaxed)
}

/// What a kickable job shares between its coroutine and its helper.
#[derive(Default)]
pub struct KickCell {
    /// The coroutine asked for the call to be cut short.
    pub requested: AtomicBool,
    /// The helper thread running the job (0: none yet).
    pub tid: AtomicI32,
    /// A helper took the job (else its coroutine makes the call inline).
    pub on_helper: AtomicBool,
}

/// `si_value` of a kick (SI_QUEUE, our pid), as `signals::KICK_VALUE`.
const KICK_VALUE: u64 = 0x636f_7275_6e50_4b49;

/// corun's action for `SIGNAL`: nothing for a kick (the system call it
/// lands in fails with EINTR); any other `SIGNAL` meets the default action
/// the program left (it set none: corun's handler is installed only
/// then, and gives way to the program's first action), which ends the
/// process, as natively.
extern "C" fn on_kick(sig: i32, info: *mut libc::siginfo_t, _uc: *mut libc::c_void) {
    // SAFETY: the kernel's siginfo for this delivery (or NULL).
    let inf = unsafe { super::siginfo::from_ptr(info, sig) };
    if is_kick(&inf) {
        return;
    }
    // SAFETY: SIG_DFL back in the kernel, then the signal again to this
    // thread: it is delivered when this handler returns, and ends the
    // process (SIGRTMAX's default action).
    unsafe {
        let mut a: libc::sigaction = std::mem::zeroed();
        a.sa_sigaction = libc::SIG_DFL;
        crate::sys::real::sigaction(sig, &a, std::ptr::null_mut());
        libc::syscall(libc::SYS_tgkill, libc::getpid(), crate::sys::gettid(), sig);
    }
}

/// Whether kicks can be used: installs the handler the first time (false
/// if the program has an action of its own for `SIGNAL`).
pub fn available() -> bool {
    INSTALL.call_once(|| {
        let _g = guard();
        // SAFETY: zeroed sigactions are valid; a query, then our action
        // if nobody set one.
        unsafe {
            let mut cur: libc::sigaction = std::mem::zeroed();
            if crate::sys::real::sigaction(SIGNAL, std::ptr::null(), &mut cur) != 0
                || cur.sa_sigaction != libc::SIG_DFL
                || TAKEN.load(Ordering::SeqCst)
            {
                return;
            }
            let mut a: libc::sigaction = std::mem::zeroed();
            a.sa_sigaction = on_kick as *const () as usize;
            // No SA_RESTART: the interrupted call fails.
            a.sa_flags = libc::SA_SIGINFO;
            libc::sigfillset(&mut a.sa_mask);
            if crate::sys::real::sigaction(SIGNAL, &a, std::ptr::null_mut()) == 0 {
                READY.store(true, Ordering::SeqCst);
            }
        }
    });
    READY.load(Ordering::SeqCst) && !TAKEN.load(Ordering::SeqCst)
}

/// Serializes corun's install of its action with the program's own
/// `sigaction` for `SIGNAL` (else a handler the program set between our
/// look and our install would be overwritten): a spin lock, as a
/// `sigaction` may be made in a signal handler.
static LOCK: AtomicBool = AtomicBool::new(false);

/// Holds `LOCK` while alive.
pub struct Guard(());

impl Drop for Guard {
    fn drop(&mut self) {
        LOCK.store(false, Ordering::Release);
    }
}

/// Takes `LOCK` (the caller changes `SIGNAL`'s action meanwhile).
pub fn guard() -> Guard {
    while LOCK.swap(true, Ordering::Acquire) {
        std::hint::spin_loop();
    }
    Guard(())
}

/// The program sets action `h` for `SIGNAL` (`hooks::sigaction`, which
/// holds `guard`): a handler, or SIG_IGN once corun's is installed, makes
/// it the program's (no more kicks: a kick would reach the program's
/// handler, or be ignored). SIG_DFL once corun's is installed gives it
/// back: the kernel gets corun's action again (`default_action`), which
/// meets any other `SIGNAL` with the default action.
pub fn program_sets(h: usize) {
    let handler = h != libc::SIG_DFL && h != libc::SIG_IGN && h != libc::SIG_ERR;
    if handler || (h == libc::SIG_IGN && READY.load(Ordering::SeqCst)) {
        TAKEN.store(true, Ordering::SeqCst);
    } else if h == libc::SIG_DFL && READY.load(Ordering::SeqCst) {
        TAKEN.store(false, Ordering::SeqCst);
    }
}

/// What the kernel gets when the program sets SIG_DFL for `SIGNAL`:
/// corun's action once it was installed (a kick still on its way to a
/// helper thread must not meet the default action, which ends the
/// process), else None (SIG_DFL itself).
pub fn default_action() -> Option<libc::sigaction> {
    if !READY.load(Ordering::SeqCst) {
        return None;
    }
    // SAFETY: a zeroed sigaction is valid; filled as `available` does.
    let mut a: libc::sigaction = unsafe { std::mem::zeroed() };
    a.sa_sigaction = on_kick as *const () as usize;
    a.sa_flags = libc::SA_SIGINFO;
    // SAFETY: `a.sa_mask` is ours.
    unsafe { libc::sigfillset(&mut a.sa_mask) };
    Some(a)
}

/// Whether `inf`, a `SIGNAL`, is a kick of corun's for a helper thread
/// (the program's handler, if it set one since the kick was sent, must
/// not see it: `hooks::sigdeliver` drops it).
pub fn is_kick(inf: &super::siginfo::Info) -> bool {
    use super::siginfo::{code, pid, value};
    // SAFETY: getpid has no preconditions.
    code(inf) == libc::SI_QUEUE && pid(inf) == unsafe { libc::getpid() } && value(inf) == KICK_VALUE
}

/// Whether `h` is corun's handler for `SIGNAL` (`sigaction` reports
/// SIG_DFL for it).
pub fn is_ours(h: usize) -> bool {
    h == on_kick as *const () as usize
}

/// Asks for the job of `cell` to be cut short and kicks its helper (the
/// caller holds the job's lock and saw it running); false if no kick
/// could be sent (the program took the signal).
pub fn kick(cell: &KickCell) -> bool {
    cell.requested.store(true, Ordering::SeqCst);
    let tid = cell.tid.load(Ordering::SeqCst);
    if tid <= 0 || TAKEN.load(Ordering::SeqCst) {
        return false;
    }
    // To a helper thread of this process, which handles SIGNAL with
    // `on_kick` (or blocks it).
    super::signals::send_marker(tid, SIGNAL, KICK_VALUE);
    true
}

/// The wait before the kick after one sent `sent` kicks ago: doubling from
/// `REKICK_NS` up to 256 times that (a lost kick is rare; a job that
/// stays in a system call the kick does not end costs few wake-ups).
pub fn rekick_after(sent: u32) -> u64 {
    REKICK_NS << sent.min(8)
}

fn set_blocked(how: i32) {
    // SAFETY: a sigset_t with SIGNAL only, applied to this thread (raw
    // syscall: pthread_sigmask may be interposed).
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, SIGNAL);
        crate::sys::real::syscall!(
            libc::SYS_rt_sigprocmask,
            how,
            &set as *const libc::sigset_t,
            std::ptr::null_mut::<libc::sigset_t>(),
            8usize,
        );
    }
}

/// Makes system call `call` (returns -1 with errno on failure) so that a
/// kick interrupts it: on the helper thread named in `cell`, with `SIGNAL`
/// unblocked around it and the request looked at first; anywhere else (the
/// job runs inline) just the call.
pub fn window(cell: &KickCell, call: impl FnOnce() -> isize) -> isize {
    if !cell.on_helper.load(Ordering::SeqCst) {
        return call();
    }
    set_blocked(libc::SIG_UNBLOCK);
    let r = if cell.requested.load(Ordering::SeqCst) {
        crate::sys::set_errno(libc::EINTR);
        -1
    } else {
        call()
    };
    let e = crate::sys::errno();
    set_blocked(libc::SIG_BLOCK);
    crate::sys::set_errno(e);
    r
}
