/*
 * hooks_semantics - a plain blocking program whose transcript must be the
 * same natively and under corun.
 *
 * It runs one list of scenarios twice: from a constructor (before main;
 * under corun that is outside any coroutine, so every hook must be an exact
 * passthrough) and from main (under corun, main is a coroutine and calls
 * that would block park instead). Each call prints one line on stdout: the
 * scenario, the result and errno, and where relevant the F_GETFL flags of
 * the fd before and after the call. Fd numbers and ports are never printed,
 * so the native and the corun transcripts can be compared with diff.
 * Whether the phase ran in a coroutine goes to stderr only (looked up with
 * dlsym, the program does not link corun).
 *
 * Helpers are plain pthreads that only make plain blocking calls (sleep,
 * then write / close / connect / drain), so they behave the same whether
 * pthread_create makes a kernel thread or a coroutine. A call that must
 * return at once (EAGAIN, EINVAL...) runs with a "rescuer": a helper that,
 * if the call has not returned after RESCUE_MS, writes to the fd's peer (or
 * connects) so that a wrongly parked call ends and shows as a mismatch
 * ("immediate=no") instead of hanging the test. Helpers also carry a
 * "guard": the fd the program waits on, which the helper closes if the call
 * still has not returned GUARD_MS after the helper did its part (under
 * corun, close wakes a parked call with EBADF), so that a wait that can never
 * end (a lost wake-up) shows as EBADF instead of hanging. Natively, and in a
 * correct run, neither the rescue nor the guard ever fires.
 */
#include "hooks_semantics.h"
#include "hooks_semantics_io.h"
#include "hooks_semantics_fd.h"

/* ---------- scenarios: sleeps, signals, timeouts ---------- */

static void sc_sleep(void)
{
    struct timespec ts = { 0, 2000000000L }, rem = { 77, 77 };
    errno = 0;
    long r = nanosleep(&ts, &rem);
    int e = errno;
    out("nanosleep_nsec_2e9", "%s", RES(r, e));
    ts = (struct timespec){ 0, -1 };
    r = nanosleep(&ts, NULL);
    e = errno;
    out("nanosleep_nsec_neg", "%s", RES(r, e));
    ts = (struct timespec){ -1, 0 };
    r = nanosleep(&ts, NULL);
    e = errno;
    out("nanosleep_sec_neg", "%s", RES(r, e));
    ts = (struct timespec){ 0, 20000000L };
    rem = (struct timespec){ 77, 77 };
    int64_t t0 = now_ns();
    r = nanosleep(&ts, &rem);
    e = errno;
    int64_t dt = now_ns() - t0;
    out("nanosleep_20ms", "%s slept>=20ms: %s rem_untouched=%s", RES(r, e), YN(dt >= 20000000),
        YN(rem.tv_sec == 77 && rem.tv_nsec == 77));
    ts = (struct timespec){ 0, 0 };
    r = nanosleep(&ts, NULL);
    e = errno;
    out("nanosleep_0", "%s", RES(r, e));
    t0 = now_ns();
    r = usleep(10000);
    e = errno;
    dt = now_ns() - t0;
    out("usleep_10ms", "%s slept>=10ms: %s", RES(r, e), YN(dt >= 10000000));
    r = usleep(0);
    e = errno;
    out("usleep_0", "%s", RES(r, e));
    r = (long)sleep(0);
    out("sleep_0", "ret=%ld", r);
}

/* A signal handled with SA_RESTART while a read waits: the read goes on. */
static void sc_signal_restart(void)
{
    struct sigaction sa = { 0 }, old;
    sa.sa_handler = on_sigusr1;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, &old);
    n_sigusr1 = 0;
    int sv[2];
    spair(sv);
    char buf[16];
    struct job j = { .kind = J_SIGNAL_WRITE, .fd = sv[1], .delay_ms = 15, .gap_ms = 20,
                     .s1 = "hello", .guard = G(sv[0]) };
    job_start(&j);
    long r = read(sv[0], buf, sizeof buf);
    int e = errno;
    job_join(&j);
    out("sock_read_sa_restart", "%s signalled=%s fl=%s", RES(r, e), YN(n_sigusr1 > 0), FL(sv[0]));
    close(sv[0]);
    close(sv[1]);
    sigaction(SIGUSR1, &old, NULL);
}

/* SO_RCVTIMEO / SO_SNDTIMEO: the wait ends at the deadline, as the kernel's. */
static void sc_timeouts(void)
{
    int sv[2];
    char buf[16];
    spair(sv);
    struct timeval tv = { 0, 50000 };
    MUST(setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
    MUST(setsockopt(sv[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv));
    enum rop ops[3] = { OP_READ, OP_RECV, OP_READV };
    for (int k = 0; k < 3; k++) {
        char name[40];
        snprintf(name, sizeof name, "sock_%s_rcvtimeo", rop_name[ops[k]]);
        struct job rs;
        rescue_write(&rs, sv[1], sv[0]);
        int64_t t0 = now_ns();
        long r = do_rop(ops[k], sv[0], buf, sizeof buf);
        int e = errno;
        double dt = since_ms(t0);
        job_join(&rs);
        out(name, "%s waited>=45ms=%s timely=%s fl=%s", RES(r, e), YN(dt >= 45),
            YN(dt < RESCUE_MS / 2), FL(sv[0]));
    }
    /* a 4 MiB write nobody reads: what fits, then the timeout */
    struct job g = { .kind = J_CLOSE, .fd = -1, .guard = G(sv[0]) };
    job_start(&g);
    int64_t t0 = now_ns();
    long r = write(sv[0], bigbuf, BIG);
    int e = errno;
    double dt = since_ms(t0);
    job_join(&g);
    out("sock_write_sndtimeo", "ret=%s errno=%s waited>=45ms=%s fl=%s",
        r < 0 ? "-1" : r == 0 ? "0" : (size_t)r < BIG ? "partial" : "full", ename(r < 0 ? e : 0),
        YN(dt >= 45), FL(sv[0]));
    close(sv[0]);
    close(sv[1]);
}

static void run_all(const char *phase)
{
    uint64_t (*self_id)(void) = (uint64_t(*)(void))dlsym(RTLD_DEFAULT, "corun_self_id");
    uint64_t id = self_id ? self_id() : 0;
    fprintf(stderr, "phase %s: corun %s, in coroutine: %s (id %llu)\n", phase,
            self_id ? "loaded" : "absent", id ? "yes" : "no", (unsigned long long)id);
    printf("== %s ==\n", phase);
    int64_t t0 = now_ns();
    sigpipe_ignored();
    for (int op = 0; op < 4; op++)
        sc_park_read((enum rop)op, 0);
    for (int op = 0; op < 4; op++)
        if (op != OP_RECV && op != OP_PEEK)
            sc_park_read((enum rop)op, 1);
    for (int op = 0; op < 4; op++)
        sc_partial((enum rop)op, 0);
    sc_partial(OP_READ, 1);
    for (int op = 0; op < 3; op++) {
        sc_eof((enum rop)op, 0, 0);
        sc_eof((enum rop)op, 0, 1);
    }
    sc_eof(OP_READ, 1, 0);
    sc_eof(OP_READ, 1, 1);
    sc_peek_then_read();
    sc_waitall();
    sc_tcp_reset();
    sc_epipe();
    sc_epipe_partial();
    for (int how = 0; how < 4; how++)
        sc_big_write(how);
    sc_pipe_full();
    sc_user_nonblock();
    sc_tcp_nonblock();
    sc_accept_connect();
    sc_dup();
    sc_reuse();
    sc_badfd();
    sc_sleep();
    sc_signal_restart();
    sc_timeouts();
    fflush(stdout);
    fprintf(stderr, "phase %s: %.0f ms\n", phase, since_ms(t0));
}

__attribute__((constructor)) static void before_main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    alarm(20); /* a safety net: nothing here should take more than a few s */
    bigbuf = malloc(2 * BIG);
    if (!bigbuf)
        die("malloc");
    fill_pattern(bigbuf, 2 * BIG, 7);
    run_all("ctor");
}

int main(void)
{
    alarm(20);
    run_all("main");
    free(bigbuf);
    return 0;
}
