/*
 * corun.h - the C API of corun, for programs written for it.
 *
 * Unchanged programs need none of this: under LD_PRELOAD=libcorun.so their
 * main and threads already are coroutines. This API is for programs that
 * want coroutines explicitly. Link with -lcorun (pkg-config corun) and run
 * under corun (LD_PRELOAD=libcorun.so, or the `corun` launcher).
 * The manual is corun(3) (man/corun.3).
 */
#ifndef CORUN_H
#define CORUN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A coroutine handle. Opaque; valid until joined or detached. */
typedef struct corun_co corun_co_t;

/* Starts fn(arg) as a coroutine on the least loaded worker, with a stack of
 * CORUN_STACK_SIZE bytes (default 256 KiB). Returns NULL and sets errno
 * (EINVAL for a NULL fn, EAGAIN or ENOMEM when no stack can be had). */
corun_co_t *corun_spawn(void *(*fn)(void *), void *arg);

/* Waits for co to end and stores fn's return value in *result (if result is
 * not NULL). Returns 0, or EINVAL (NULL handle), ESRCH (already joined,
 * detached, or not a handle), EDEADLK (a coroutine joining itself). From a
 * coroutine it parks; from a native thread it blocks. */
int corun_join(corun_co_t *co, void **result);

/* Lets co run to completion unjoined. Returns 0, EINVAL or ESRCH. */
int corun_detach(corun_co_t *co);

/* Lets every other runnable coroutine of this worker run once. */
void corun_yield(void);

/* Sleeps ns nanoseconds: parks a coroutine, blocks a native thread.
 * Returns 0, or ECANCELED (the coroutine's cancel token was cancelled). */
int corun_sleep_ns(uint64_t ns);

/* The running coroutine's id (1, 2, ...), or 0 outside a coroutine. */
uint64_t corun_self_id(void);

/*
 * Conventions of everything below (see also corun(3)):
 * - functions return 0 or an errno value (never -1/errno), and never
 *   abort on a bad argument: a NULL object is EINVAL;
 * - they work from coroutines on any worker (a wait parks the coroutine)
 *   and from native threads (a wait blocks the thread on a futex);
 * - timeouts are relative, in nanoseconds;
 * - a wait of a coroutine whose cancel token is cancelled fails with
 *   ECANCELED (see "Cancellation"); one that did not need to wait
 *   completes.
 */

/* ---------------------------------------------------------- channels */

/* A channel of fixed-size elements, copied in and out by value. */
typedef struct corun_chan corun_chan_t;

/* A channel of `capacity` elements of `elem_size` bytes (at most 1 MiB);
 * capacity 0 is unbuffered: a send waits for a receiver and hands its
 * element over directly. NULL and errno EINVAL or ENOMEM on failure. */
corun_chan_t *corun_chan_new(size_t elem_size, size_t capacity);

/* Sends a copy of *elem: 0, EPIPE (closed), ECANCELED, EINVAL (NULL
 * channel, or NULL elem with a non-zero elem_size). */
int corun_chan_send(corun_chan_t *ch, const void *elem);

/* Receives into *elem (NULL: discard): 0, EPIPE (closed and drained),
 * ECANCELED, EINVAL. FIFO among blocked receivers and senders. */
int corun_chan_recv(corun_chan_t *ch, void *elem);

/* The same without waiting: EAGAIN when they would wait. */
int corun_chan_trysend(corun_chan_t *ch, const void *elem);
int corun_chan_tryrecv(corun_chan_t *ch, void *elem);

/* The same waiting at most timeout_ns: ETIMEDOUT after it. */
int corun_chan_send_timeout(corun_chan_t *ch, const void *elem, uint64_t timeout_ns);
int corun_chan_recv_timeout(corun_chan_t *ch, void *elem, uint64_t timeout_ns);

/* Closes: blocked and later sends fail with EPIPE; receives get what is
 * buffered, then EPIPE. 0, or EPIPE if already closed, EINVAL. */
int corun_chan_close(corun_chan_t *ch);

/* Elements buffered now. */
size_t corun_chan_len(corun_chan_t *ch);

/* Frees a channel no operation uses or will use (NULL: nothing). */
void corun_chan_free(corun_chan_t *ch);

/* select: one of several channel operations or fd readiness conditions. */
enum {
    CORUN_SEL_SEND = 1,  /* send *elem on chan */
    CORUN_SEL_RECV = 2,  /* receive from chan into elem (NULL: discard) */
    CORUN_SEL_READ = 3,  /* fd readable (or at EOF, in error, invalid) */
    CORUN_SEL_WRITE = 4, /* fd writable (or in error, invalid) */
};

typedef struct corun_sel {
    int op;             /* CORUN_SEL_* */
    int fd;             /* READ, WRITE */
    corun_chan_t *chan; /* SEND, RECV */
    void *elem;         /* SEND, RECV */
    int err;            /* out, for the case that fired: 0, EPIPE (its
                           channel is closed), EBADF (its fd is invalid) */
} corun_sel_t;

/* Waits until one of the n cases can proceed, performs it (one only) and
 * stores its index in *fired (if not NULL). Among cases ready at once one
 * is chosen at random. timeout_ns < 0: no timeout; 0: EAGAIN when none is
 * ready now; > 0: ETIMEDOUT after it. 0, EAGAIN, ETIMEDOUT, ECANCELED, or
 * EINVAL (bad case, NULL cases with n > 0). n == 0 waits for the timeout.
 * From a native thread, fd readiness is seen within a millisecond. */
int corun_select(corun_sel_t *cases, size_t n, int64_t timeout_ns, size_t *fired);

/* ------------------------------------------------- synchronisation */

/* Plain words: initialise with the macro or the init function; nothing
 * to free. Shared by coroutines and native threads. Cheaper than pthread
 * objects under corun (no interposition, no glibc layout). */

typedef struct { uint32_t state; } corun_mutex_t;
#define CORUN_MUTEX_INIT { 0 }
int corun_mutex_init(corun_mutex_t *m);
int corun_mutex_timedlock(corun_mutex_t *m, uint64_t timeout_ns); /* ETIMEDOUT */
int corun_mutex_trylock(corun_mutex_t *m);                     /* EBUSY */
/* Lock (not a cancellation point) and unlock (EPERM if not locked): the
 * uncontended case is inline here, one atomic instruction each; the rest
 * is corun_mutex_lock_slow/corun_mutex_unlock_slow (the library also
 * exports corun_mutex_lock and corun_mutex_unlock, for other languages). */
int corun_mutex_lock_slow(corun_mutex_t *m);
int corun_mutex_unlock_slow(corun_mutex_t *m);
static inline int corun_mutex_lock(corun_mutex_t *m)
{
    uint32_t free_ = 0;
    if (m && __atomic_compare_exchange_n(&m->state, &free_, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return 0;
    return corun_mutex_lock_slow(m);
}
static inline int corun_mutex_unlock(corun_mutex_t *m)
{
    uint32_t held = 1;
    if (m && __atomic_compare_exchange_n(&m->state, &held, 0, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        return 0;
    return corun_mutex_unlock_slow(m);
}

typedef struct { uint32_t seq, waiters; } corun_cond_t;
#define CORUN_COND_INIT { 0, 0 }
int corun_cond_init(corun_cond_t *c);
/* Unlocks m, waits for a signal, locks m again (also when it fails):
 * 0, ETIMEDOUT, ECANCELED, EPERM (m not locked). Wakes may be spurious. */
int corun_cond_wait(corun_cond_t *c, corun_mutex_t *m);
int corun_cond_timedwait(corun_cond_t *c, corun_mutex_t *m, uint64_t timeout_ns);
int corun_cond_signal(corun_cond_t *c);
int corun_cond_broadcast(corun_cond_t *c);

typedef struct { uint32_t value, waiters; } corun_sem_t;
#define CORUN_SEM_INIT(v) { (v), 0 }
int corun_sem_init(corun_sem_t *s, uint32_t value);
int corun_sem_wait(corun_sem_t *s);                        /* ECANCELED */
int corun_sem_timedwait(corun_sem_t *s, uint64_t timeout_ns); /* ETIMEDOUT, ECANCELED */
int corun_sem_trywait(corun_sem_t *s);                     /* EAGAIN */
int corun_sem_post(corun_sem_t *s);                        /* EOVERFLOW */
uint32_t corun_sem_value(corun_sem_t *s);

/* A wait group: add(n) before starting n jobs, done() as each ends,
 * wait() until all did. */
typedef struct { int32_t count; uint32_t gen, waiters; } corun_wg_t;
#define CORUN_WG_INIT { 0, 0, 0 }
int corun_wg_init(corun_wg_t *wg);
int corun_wg_add(corun_wg_t *wg, int32_t delta);  /* EINVAL if it would go negative */
int corun_wg_done(corun_wg_t *wg);                /* add(-1) */
int corun_wg_wait(corun_wg_t *wg);                /* ECANCELED */
int corun_wg_timedwait(corun_wg_t *wg, uint64_t timeout_ns); /* ETIMEDOUT, ECANCELED */

/* ------------------------------------------------------ cancellation */

/* A cancel source owns a token; coroutines run under a token. When it is
 * cancelled (corun_cancel, its deadline, or its parent's cancellation),
 * every wait of those coroutines that parks fails, now and later:
 * channel operations, select, corun_sleep_ns, cond/sem/wg waits return
 * ECANCELED, and the hooked libc calls that would block -- read, write,
 * readv, writev, recv*, send*, accept, accept4, connect, poll, ppoll,
 * select, pselect, epoll_wait, epoll_pwait, nanosleep, usleep,
 * clock_nanosleep (which returns ECANCELED), sleep (the seconds left) --
 * return -1 with errno ECANCELED. A call that can complete without
 * waiting still does. Native threads are never interrupted by tokens. */
typedef struct corun_cancel_source corun_cancel_source_t;
typedef struct corun_token corun_token_t;

/* A source whose token is cancelled with `parent` (NULL: none) and after
 * timeout_ns (0: no deadline). */
corun_cancel_source_t *corun_cancel_source_new(const corun_token_t *parent, uint64_t timeout_ns);
/* The source's token: valid while the source lives (or a coroutine runs
 * under it). */
const corun_token_t *corun_cancel_token(const corun_cancel_source_t *src);
/* Cancels: 0, EALREADY (cancelled before), EINVAL. */
int corun_cancel(const corun_cancel_source_t *src);
void corun_cancel_source_free(corun_cancel_source_t *src);

/* 1 if cancelled, else 0. */
int corun_token_cancelled(const corun_token_t *tok);
/* Runs fn(arg) once when tok is cancelled, on the cancelling thread (the
 * deadline thread for a deadline; it must not block), while the waits of
 * its coroutines fail (in no set order). If tok is already
 * cancelled fn runs now, here, and *reg is 0. 0 or EINVAL. */
int corun_token_register(const corun_token_t *tok, void (*fn)(void *), void *arg, uint64_t *reg);
/* Removes a registration that has not run: 0, ENOENT (ran or running). */
int corun_token_unregister(const corun_token_t *tok, uint64_t reg);
/* The token the running coroutine runs under, or NULL. */
const corun_token_t *corun_token_current(void);

/* corun_spawn with the new coroutine running under tok. */
corun_co_t *corun_spawn_under(const corun_token_t *tok, void *(*fn)(void *), void *arg);
/* Runs fn(arg) in the running coroutine under tok (NULL: none), then goes
 * back to its token: 0, EINVAL, EPERM (not a coroutine). */
int corun_run_under(const corun_token_t *tok, void *(*fn)(void *), void *arg, void **result);

/* --------------------------------------------------- structured scopes */

/* A scope: coroutines spawned into it run under its token (a child of the
 * caller's current token, cancelled after timeout_ns if not 0). The
 * first member to return non-zero cancels the others (first error wins);
 * wait joins them all, so none outlives the scope. */
typedef struct corun_scope corun_scope_t;
corun_scope_t *corun_scope_new(uint64_t timeout_ns);
/* Starts fn(arg) as a member: 0, EINVAL, EAGAIN (no coroutine could be
 * made). A member of a cancelled scope still runs (its waits fail). */
int corun_scope_spawn(corun_scope_t *s, int (*fn)(void *), void *arg);
int corun_scope_cancel(corun_scope_t *s);  /* 0, EALREADY, EINVAL */
/* Waits until every member returned (not a cancellation point; a member
 * must not wait for its own scope): the first non-zero result, or 0. */
int corun_scope_wait(corun_scope_t *s);
const corun_token_t *corun_scope_token(corun_scope_t *s);
/* Cancels the members still running, waits for them, frees the scope. */
void corun_scope_free(corun_scope_t *s);

#ifdef __cplusplus
}
#endif

#endif /* CORUN_H */
