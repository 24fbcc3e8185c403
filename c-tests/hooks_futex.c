/*
 * hooks_futex - syscall(SYS_futex, ...) transcript (see transcript.h).
 *
 * What libstdc++ and Rust std do with futexes, made directly: FUTEX_WAIT
 * (relative timeout), FUTEX_WAIT_BITSET (absolute timeout, monotonic and
 * FUTEX_CLOCK_REALTIME; Rust std's own form), FUTEX_WAKE and
 * FUTEX_WAKE_BITSET (the counts woken), FUTEX_REQUEUE and
 * FUTEX_CMP_REQUEUE (woken + requeued, EAGAIN on a changed word, a requeued
 * waiter that times out), FUTEX_WAKE_OP (the operation and its condition),
 * futex_waitv (the index of the word woken),
 * private and shared futexes, a shared futex woken from another process,
 * a forked child (none of the parent's waiters are its own), and the
 * errors: EAGAIN, ETIMEDOUT, EINVAL, ENOSYS. Waiters are threads (parked
 * coroutines under corun); main makes the wakes and prints their results
 * once every waiter sleeps, then each waiter's result.
 *
 * Run natively, under corun with one worker, and with CORUN_THREADS=native
 * (the waiters are kernel threads waking and woken by main, a coroutine).
 */
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "transcript.h"

static long futex(atomic_uint *a, int op, unsigned val, const struct timespec *t, atomic_uint *a2,
                  unsigned v3)
{
    return syscall(SYS_futex, a, op, val, t, a2, v3);
}

/* The count argument of the requeues and FUTEX_WAKE_OP, in the timeout slot. */
static const struct timespec *n2(long n) { return (const struct timespec *)n; }

static struct timespec in_ms(clockid_t c, long ms)
{
    struct timespec t;
    clock_gettime(c, &t);
    t.tv_nsec += (ms % 1000) * 1000000L;
    t.tv_sec += ms / 1000 + t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    return t;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A waiter thread: one futex wait, its result kept for main to print. */
struct waiter {
    atomic_uint *word;
    int op;
    unsigned val;
    unsigned bits;
    long timeout_ms; /* relative, 0: none */
    long r;
    int err;
    pthread_t t;
};

static atomic_int sleeping;

static void *waiter_body(void *p)
{
    struct waiter *w = p;
    struct timespec rel = {w->timeout_ms / 1000, (w->timeout_ms % 1000) * 1000000L};
    atomic_fetch_add(&sleeping, 1);
    errno = 0;
    w->r = futex(w->word, w->op, w->val, w->timeout_ms ? &rel : NULL, NULL, w->bits);
    w->err = errno;
    return NULL;
}

/* A waiter thread in futex_waitv on {word, op's word 2}: `op` unused. */
static struct futex_waitv vw[2];
static void *waitv_body(void *p)
{
    struct waiter *w = p;
    atomic_fetch_add(&sleeping, 1);
    errno = 0;
    w->r = syscall(SYS_futex_waitv, vw, 2, 0, NULL, 0);
    w->err = errno;
    return NULL;
}

static void start(struct waiter *w, atomic_uint *word, int op, unsigned bits, long timeout_ms)
{
    *w = (struct waiter){.word = word, .op = op, .val = atomic_load(word), .bits = bits,
                         .timeout_ms = timeout_ms};
    if (pthread_create(&w->t, NULL, waiter_body, w))
        abort();
}

/* Returns once n waiters started, and then had DELAY ms to fall asleep. */
static void until_asleep(int n)
{
    while (atomic_load(&sleeping) < n)
        sleep_ms(1);
    sleep_ms(DELAY);
    atomic_store(&sleeping, 0);
}

static void report(const char *label, struct waiter *w, int n)
{
    char l[128];
    for (int i = 0; i < n; i++) {
        pthread_join(w[i].t, NULL);
        snprintf(l, sizeof l, "%s: waiter %d", label, i);
        tr_print(l, w[i].r, w[i].err);
    }
}

static atomic_uint later_word;
static int later_op;
static void set_and_wake(void *p)
{
    (void)p;
    atomic_store(&later_word, 1);
    syscall(SYS_futex, &later_word, later_op, 1, NULL, NULL, 0);
}

int main(void)
{
    tr_start();
    static atomic_uint a, b;
    const int P = FUTEX_PRIVATE_FLAG;
    struct timespec t50 = {0, 50000000}, at, bad = {0, 1000000000L}, zero = {0, 0};
    struct waiter w[4];
    uint64_t t0;

    /* Errors and timeouts, no other thread involved. */
    T("WAIT word differs", futex(&a, FUTEX_WAIT | P, 1, NULL, NULL, 0));
    T("WAIT_BITSET word differs", futex(&a, FUTEX_WAIT_BITSET | P, 1, NULL, NULL, ~0u));
    T("WAIT bad timespec", futex(&a, FUTEX_WAIT | P, 0, &bad, NULL, 0));
    T("WAIT_BITSET bitset 0", futex(&a, FUTEX_WAIT_BITSET | P, 0, NULL, NULL, 0));
    T("WAIT misaligned", futex((atomic_uint *)((char *)&a + 1), FUTEX_WAIT | P, 0, NULL, NULL, 0));
    T("WAIT_BITSET deadline past", futex(&a, FUTEX_WAIT_BITSET | P, 0, &zero, NULL, ~0u));
    t0 = tr_now_ms();
    WAITS("WAIT 50ms", futex(&a, FUTEX_WAIT | P, 0, &t50, NULL, 0));
    CHECK("waited 50ms", tr_now_ms() - t0 >= 50);
    WAITS("WAIT shared 50ms", futex(&a, FUTEX_WAIT, 0, &t50, NULL, 0));
    at = in_ms(CLOCK_MONOTONIC, 50);
    t0 = tr_now_ms();
    WAITS("WAIT_BITSET monotonic +50ms", futex(&a, FUTEX_WAIT_BITSET | P, 0, &at, NULL, ~0u));
    CHECK("waited 50ms", tr_now_ms() - t0 >= 49);
    at = in_ms(CLOCK_REALTIME, 50);
    t0 = tr_now_ms();
    WAITS("WAIT_BITSET realtime +50ms",
          futex(&a, FUTEX_WAIT_BITSET | FUTEX_CLOCK_REALTIME | P, 0, &at, NULL, ~0u));
    CHECK("waited 50ms", tr_now_ms() - t0 >= 49);
    T("WAKE nobody", futex(&a, FUTEX_WAKE | P, 1, NULL, NULL, 0));
    T("WAKE_BITSET bitset 0", futex(&a, FUTEX_WAKE_BITSET | P, 1, NULL, NULL, 0));
    T("WAKE CLOCK_REALTIME", futex(&a, FUTEX_WAKE | FUTEX_CLOCK_REALTIME | P, 1, NULL, NULL, 0));
    T("CMP_REQUEUE nobody, word differs", futex(&a, FUTEX_CMP_REQUEUE | P, 1, n2(1), &b, 5));
    T("CMP_REQUEUE negative count", futex(&a, FUTEX_CMP_REQUEUE | P, 1, n2(-1), &b, 0));

    /* main waits, a thread wakes it (private, then shared; Rust's form). */
    later_op = FUTEX_WAKE | P;
    later(DELAY, set_and_wake, NULL);
    WAITS("WAIT woken by a thread", futex(&later_word, FUTEX_WAIT | P, 0, NULL, NULL, 0));
    atomic_store(&later_word, 0);
    later_op = FUTEX_WAKE;
    later(DELAY, set_and_wake, NULL);
    WAITS("WAIT shared woken by a thread", futex(&later_word, FUTEX_WAIT, 0, NULL, NULL, 0));
    atomic_store(&later_word, 0);
    later_op = FUTEX_WAKE | P;
    at = in_ms(CLOCK_MONOTONIC, 10000);
    later(DELAY, set_and_wake, NULL);
    WAITS("WAIT_BITSET +10s woken by a thread",
          futex(&later_word, FUTEX_WAIT_BITSET | P, 0, &at, NULL, ~0u));

    /* Counts: three waiters, wake 2, then all. */
    atomic_store(&a, 0);
    for (int i = 0; i < 3; i++)
        start(&w[i], &a, FUTEX_WAIT | P, 0, 0);
    until_asleep(3);
    atomic_store(&a, 1);
    T("WAKE 2 of 3", futex(&a, FUTEX_WAKE | P, 2, NULL, NULL, 0));
    sleep_ms(DELAY);
    T("WAKE INT_MAX, 1 left", futex(&a, FUTEX_WAKE | P, INT_MAX, NULL, NULL, 0));
    report("WAKE", w, 3);
    /* A count of 0 wakes one, as the kernel does. */
    atomic_store(&a, 0);
    for (int i = 0; i < 2; i++)
        start(&w[i], &a, FUTEX_WAIT | P, 0, 0);
    until_asleep(2);
    T("WAKE 0 of 2", futex(&a, FUTEX_WAKE | P, 0, NULL, NULL, 0));
    sleep_ms(DELAY);
    T("WAKE 1, 1 left", futex(&a, FUTEX_WAKE | P, 1, NULL, NULL, 0));
    report("WAKE 0", w, 2);

    /* Bitsets: waiters on bits 1, 2, 4. */
    atomic_store(&a, 0);
    for (int i = 0; i < 3; i++)
        start(&w[i], &a, FUTEX_WAIT_BITSET | P, 1u << i, 0);
    until_asleep(3);
    T("WAKE_BITSET 2|4", futex(&a, FUTEX_WAKE_BITSET | P, INT_MAX, NULL, NULL, 6));
    sleep_ms(DELAY);
    T("WAKE_BITSET 8", futex(&a, FUTEX_WAKE_BITSET | P, INT_MAX, NULL, NULL, 8));
    T("WAKE 1", futex(&a, FUTEX_WAKE | P, INT_MAX, NULL, NULL, 0));
    report("WAKE_BITSET", w, 3);

    /* Requeues: three waiters on a, one woken, two moved to b. */
    for (int cmp = 0; cmp < 2; cmp++) {
        atomic_store(&a, 7);
        atomic_store(&b, 0);
        for (int i = 0; i < 3; i++)
            start(&w[i], &a, FUTEX_WAIT | P, 0, 0);
        until_asleep(3);
        if (cmp) {
            T("CMP_REQUEUE word differs", futex(&a, FUTEX_CMP_REQUEUE | P, 1, n2(2), &b, 8));
            T("CMP_REQUEUE 1 + 2", futex(&a, FUTEX_CMP_REQUEUE | P, 1, n2(2), &b, 7));
        } else {
            T("REQUEUE 1 + 2", futex(&a, FUTEX_REQUEUE | P, 1, n2(2), &b, 0));
        }
        sleep_ms(DELAY);
        T("WAKE a after the requeue", futex(&a, FUTEX_WAKE | P, INT_MAX, NULL, NULL, 0));
        T("WAKE b", futex(&b, FUTEX_WAKE | P, INT_MAX, NULL, NULL, 0));
        report(cmp ? "CMP_REQUEUE" : "REQUEUE", w, 3);
    }
    /* A requeued waiter that times out: its timeout still ends its wait. */
    atomic_store(&a, 0);
    start(&w[0], &a, FUTEX_WAIT | P, 0, 300);
    until_asleep(1);
    T("REQUEUE a timed waiter", futex(&a, FUTEX_REQUEUE | P, 0, n2(1), &b, 0));
    report("requeued, timed out", w, 1);
    T("WAKE b after it timed out", futex(&b, FUTEX_WAKE | P, INT_MAX, NULL, NULL, 0));

    /* FUTEX_WAKE_OP: one waiter on a, one on b; b += 1 if ... */
    for (int round = 0; round < 2; round++) {
        atomic_store(&a, 0);
        atomic_store(&b, 0);
        start(&w[0], &a, FUTEX_WAIT | P, 0, 0);
        start(&w[1], &b, FUTEX_WAIT | P, 0, round ? 200 : 0);
        until_asleep(2);
        /* round 0: b == 0 holds, both woken; round 1: b > 5 does not. */
        unsigned op = round ? FUTEX_OP(FUTEX_OP_ADD, 1, FUTEX_OP_CMP_GT, 5)
                            : FUTEX_OP(FUTEX_OP_ADD, 1, FUTEX_OP_CMP_EQ, 0);
        T(round ? "WAKE_OP b > 5" : "WAKE_OP b == 0",
          futex(&a, FUTEX_WAKE_OP | P, 1, n2(1), &b, op));
        printf("b after WAKE_OP = %u\n", atomic_load(&b));
        report("WAKE_OP", w, 2);
    }

    /* futex_waitv: several words at once; the result is the index woken. */
    static atomic_uint v0, v1;
    struct futex_waitv wv[2] = {
        {.val = 0, .uaddr = (uintptr_t)&v0, .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG},
        {.val = 0, .uaddr = (uintptr_t)&v1, .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG},
    };
    atomic_store(&v1, 3);
    T("WAITV a word differs", syscall(SYS_futex_waitv, wv, 2, 0, NULL, CLOCK_MONOTONIC));
    atomic_store(&v1, 0);
    T("WAITV flags 1", syscall(SYS_futex_waitv, wv, 2, 1, NULL, CLOCK_MONOTONIC));
    at = in_ms(CLOCK_MONOTONIC, 50);
    T("WAITV bad clock", syscall(SYS_futex_waitv, wv, 2, 0, &at, CLOCK_BOOTTIME));
    t0 = tr_now_ms();
    WAITS("WAITV monotonic +50ms", syscall(SYS_futex_waitv, wv, 2, 0, &at, CLOCK_MONOTONIC));
    CHECK("waited 50ms", tr_now_ms() - t0 >= 49);
    at = in_ms(CLOCK_REALTIME, 50);
    WAITS("WAITV realtime +50ms", syscall(SYS_futex_waitv, wv, 2, 0, &at, CLOCK_REALTIME));
    wv[0].uaddr = (uintptr_t)&later_word;
    atomic_store(&later_word, 0);
    later_op = FUTEX_WAKE | P;
    later(DELAY, set_and_wake, NULL);
    WAITS("WAITV woken on word 0", syscall(SYS_futex_waitv, wv, 2, 0, NULL, 0));
    wv[0].uaddr = (uintptr_t)&v0;
    wv[1].uaddr = (uintptr_t)&later_word;
    wv[1].flags = FUTEX_32; /* shared */
    atomic_store(&later_word, 0);
    later_op = FUTEX_WAKE;
    later(DELAY, set_and_wake, NULL);
    WAITS("WAITV woken on shared word 1", syscall(SYS_futex_waitv, wv, 2, 0, NULL, 0));

    /* A thread in futex_waitv on a and b, woken through b. */
    atomic_store(&a, 0);
    atomic_store(&b, 0);
    vw[0] = (struct futex_waitv){.uaddr = (uintptr_t)&a, .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG};
    vw[1] = (struct futex_waitv){.uaddr = (uintptr_t)&b, .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG};
    w[0] = (struct waiter){0};
    if (pthread_create(&w[0].t, NULL, waitv_body, &w[0]))
        abort();
    until_asleep(1);
    T("WAKE a, a WAITV waiter", futex(&a, FUTEX_WAKE | P, INT_MAX, NULL, NULL, 0));
    report("WAITV woken through a", w, 1);
    w[0] = (struct waiter){0};
    if (pthread_create(&w[0].t, NULL, waitv_body, &w[0]))
        abort();
    until_asleep(1);
    T("WAKE b, a WAITV waiter", futex(&b, FUTEX_WAKE | P, INT_MAX, NULL, NULL, 0));
    report("WAITV woken through b", w, 1);
    /* (Not before the join: until the woken thread runs, the kernel still
     * has it queued on a, and a wake there would count it.) */
    T("WAKE a after it returned", futex(&a, FUTEX_WAKE | P, INT_MAX, NULL, NULL, 0));

    /* A forked child has none of the parent's waiters: its wake finds nobody. */
    atomic_store(&a, 0);
    start(&w[0], &a, FUTEX_WAIT | P, 0, 0);
    until_asleep(1);
    pid_t child = fork();
    if (child == 0) {
        atomic_store(&a, 1);
        T("child: WAKE a thread of the parent waits on", futex(&a, FUTEX_WAKE | P, INT_MAX, NULL, NULL, 0));
        _exit(0);
    }
    int cst;
    waitpid(child, &cst, 0);
    atomic_store(&a, 1);
    T("parent: WAKE after the child", futex(&a, FUTEX_WAKE | P, INT_MAX, NULL, NULL, 0));
    report("forked", w, 1);

    /* A shared futex in shared memory: the other process waits, we wake. */
    atomic_uint *sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        return 1;
    pid_t pid = fork();
    if (pid == 0) {
        while (atomic_load(sh) == 0)
            futex(sh, FUTEX_WAIT, 0, NULL, NULL, 0);
        printf("child: woken by the parent, word %u\n", atomic_load(sh));
        fflush(stdout);
        _exit(0);
    }
    sleep_ms(2 * DELAY);
    atomic_store(sh, 1);
    futex(sh, FUTEX_WAKE, 1, NULL, NULL, 0);
    int st;
    T("waitpid child", waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? 0 : -1);
    return tr_end();
}
