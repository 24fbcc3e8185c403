/*
 * hooks_corun_only - what corun promises where native Linux differs or
 * cannot be compared (run only under corun; exits 1 on the first broken
 * promise, naming it). Run it with CORUN_WORKERS=1, as its script does: the
 * parking checks need transcript.h's ticker on main's worker.
 *
 * - close() of an fd another party waits on wakes the waiter with EBADF
 *   (natively a blocked read does not wake: docs/ARCHITECTURE.md section 2 makes it
 *   fail instead of hang), for read, poll, accept and epoll_wait;
 * - the fd number reused right after such a close never delivers the old
 *   file's wake-up or error to its new owner;
 * - a signal reaches a parked coroutine: its handler runs there (and may
 *   call hooks) and the wait fails with EINTR, as natively
 *   (c-tests/sig_sleep.c compares the details with Linux);
 * - a handler raised in a coroutine is that coroutine's code: a call in it
 *   that waits parks the coroutine, and the other threads run meanwhile,
 *   as natively (a handler that waits blocks only its own thread);
 * - hooks pass straight through before the runtime is up (a constructor)
 *   and on a native thread; sigaction/signal report the program's own
 *   handlers.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "transcript.h"

static void must(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "BROKEN: %s (errno %s)\n", what, strerrorname_np(errno));
        exit(1);
    }
    printf("ok: %s\n", what);
}

/* ---- before main: a constructor runs before corun's runtime starts ---- */
static int ctor_ok;
__attribute__((constructor)) static void before_main(void)
{
    int p[2];
    char c = 0;
    struct pollfd pf;
    struct timespec ts = {0, 1000000};
    if (pipe(p) || write(p[1], "k", 1) != 1)
        return;
    pf.fd = p[0];
    pf.events = POLLIN;
    if (poll(&pf, 1, -1) != 1 || read(p[0], &c, 1) != 1 || nanosleep(&ts, NULL) != 0)
        return;
    close(p[0]);
    close(p[1]);
    ctor_ok = c == 'k';
}

/* ---- a helper that closes an fd and reuses its number at once ---- */
struct reuse {
    int victim, old_writer;
    int newp[2];
    volatile int done;
};
static void do_close_and_reuse(void *arg)
{
    struct reuse *r = arg;
    close(r->victim);
    if (pipe(r->newp))
        exit(2);
    /* The old pipe now has no reader: this write must not reach anyone. */
    if (write(r->old_writer, "old", 3) >= 0 || errno != EPIPE)
        exit(3);
    r->done = 1;
}

static volatile sig_atomic_t alarms;
static int sig_pipe[2];
static void on_alarm(int sig)
{
    (void)sig;
    alarms++;
    /* A hook inside a signal handler: must pass through, never park. */
    if (write(sig_pipe[1], "s", 1) != 1)
        _exit(4);
}

static void alarm_in(long ms)
{
    struct itimerval it = {{0, 0}, {ms / 1000, (ms % 1000) * 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
}

/* A handler that makes a call that waits, raised inside a running
 * coroutine: the call parks the coroutine inside its handler, and the
 * ticker moves meanwhile, as another thread runs natively. (Until
 * stop_world's fix, hooks passed through in every handler and the call
 * blocked the worker: 0 ticks.) */
static int handler_pipe[2];
static volatile long handler_read = -2, handler_ticks = -1;
static void on_usr1(int sig)
{
    (void)sig;
    char c[8];
    long t0 = tr_ticks;
    handler_read = read(handler_pipe[0], c, sizeof c);
    handler_ticks = tr_ticks - t0;
}
static void on_usr2(int sig) { (void)sig; }
static sigjmp_buf jump_back;
static void on_jump(int sig)
{
    (void)sig;
    siglongjmp(jump_back, 1);
}

static int native_result = -1;
static int native_pipe[2];
static void *native_thread(void *arg)
{
    (void)arg;
    char buf[8];
    /* Outside any coroutine: the real blocking read. */
    native_result = (int)read(native_pipe[0], buf, sizeof buf);
    return NULL;
}

int main(void)
{
    tr_start();
    must(tr_under_corun, "running under corun");
    signal(SIGPIPE, SIG_IGN);
    must(ctor_ok, "hooks pass through in a constructor, before the runtime");
    char buf[64];
    struct reuse r;
    int p[2];

    /* close() wakes a parked read with EBADF; the number's next owner
     * gets only its own data. */
    if (pipe(p))
        return 2;
    r.victim = p[0];
    r.old_writer = p[1];
    r.done = 0;
    later(DELAY, do_close_and_reuse, &r);
    errno = 0;
    must(read(p[0], buf, sizeof buf) == -1 && errno == EBADF, "close wakes a parked read with EBADF");
    while (!r.done)
        usleep(1000);
    must(r.newp[0] == p[0], "the number is reused at once");
    later_write(DELAY, r.newp[1], "new", 3);
    must(read(r.newp[0], buf, sizeof buf) == 3 && memcmp(buf, "new", 3) == 0,
         "the new owner waits and gets only its own data");
    struct pollfd pf = {r.newp[0], POLLIN, 0};
    uint64_t t0 = tr_now_ms();
    must(poll(&pf, 1, 150) == 0 && tr_now_ms() - t0 >= 140,
         "no stale wake-up: poll on the reused number times out");
    close(r.newp[0]);
    close(r.newp[1]);
    close(p[1]);

    /* close() wakes a parked poll (POLLNVAL), accept and epoll_wait. */
    if (pipe(p))
        return 2;
    later_close(DELAY, p[0]);
    pf.fd = p[0];
    must(poll(&pf, 1, -1) == 1 && pf.revents == POLLNVAL, "close wakes a parked poll: POLLNVAL");
    close(p[1]);
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 4))
        return 2;
    later_close(DELAY, l);
    errno = 0;
    must(accept(l, NULL, NULL) == -1 && errno == EBADF, "close wakes a parked accept with EBADF");
    int ep = epoll_create1(0);
    if (pipe(p))
        return 2;
    struct epoll_event ev = {.events = EPOLLIN};
    epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
    later_close(DELAY, ep);
    errno = 0;
    must(epoll_wait(ep, &ev, 1, -1) == -1 && errno == EBADF, "close wakes a parked epoll_wait with EBADF");
    close(p[0]);
    close(p[1]);

    /* Signals: the handler runs in the parked coroutine, the wait ends. */
    if (pipe(sig_pipe) || pipe(p))
        return 2;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART */
    sigaction(SIGALRM, &sa, NULL);
    alarm_in(20);
    later_write(200, p[1], "after", 5);
    errno = 0;
    must(read(p[0], buf, sizeof buf) == -1 && errno == EINTR && alarms == 1,
         "a signal ends a parked read with EINTR (no SA_RESTART)");
    must(read(p[0], buf, sizeof buf) == 5, "the next read gets the data");
    alarm_in(20);
    pf.fd = p[0];
    pf.events = POLLIN;
    errno = 0;
    must(poll(&pf, 1, -1) == -1 && errno == EINTR && alarms == 2, "a signal ends a parked poll with EINTR");
    alarm_in(20);
    struct timespec req = {0, 200000000}, rem = {9, 9};
    t0 = tr_now_ms();
    errno = 0;
    must(nanosleep(&req, &rem) == -1 && errno == EINTR && tr_now_ms() - t0 < 150 && alarms == 3 &&
             rem.tv_sec == 0 && rem.tv_nsec > 0,
         "a signal ends a parked nanosleep with EINTR; rem written");
    must(read(sig_pipe[0], buf, sizeof buf) == 3, "hooks pass through in a signal handler (3 writes)");

    /* A wait inside a handler that interrupted a running coroutine. */
    if (pipe(handler_pipe))
        return 2;
    struct sigaction su;
    memset(&su, 0, sizeof su);
    su.sa_handler = on_usr1;
    su.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &su, NULL);
    struct sigaction back;
    sigaction(SIGUSR1, NULL, &back);
    must(back.sa_handler == on_usr1 && (back.sa_flags & SA_RESTART), "sigaction reports the program's own handler and flags");
    later_write(100, handler_pipe[1], "h", 1);
    raise(SIGUSR1); /* runs the handler now, on this coroutine's stack */
    must(handler_read == 1 && handler_ticks > 0,
         "a wait in a handler raised in a coroutine parks it (the ticker moved meanwhile)");
    must(signal(SIGUSR1, on_usr2) == on_usr1, "signal returns the program's previous handler");
    must(signal(SIGUSR1, SIG_DFL) == on_usr2, "signal returns the handler set by signal");

    /* A handler left by siglongjmp: waits park again afterwards. */
    signal(SIGUSR2, on_jump);
    if (sigsetjmp(jump_back, 1) == 0)
        raise(SIGUSR2);
    if (pipe(p))
        return 2;
    later_write(DELAY, p[1], "j", 1);
    long tk = tr_ticks;
    must(read(p[0], buf, 1) == 1 && tr_ticks > tk, "after a handler left by siglongjmp, waits park again");
    close(p[0]);
    close(p[1]);

    /* A native thread: the real blocking call, woken by a coroutine. */
    if (pipe(native_pipe))
        return 2;
    pthread_t t;
    pthread_create(&t, NULL, native_thread, NULL);
    usleep(50000);
    must(write(native_pipe[1], "native", 6) == 6, "write to a native thread's pipe");
    pthread_join(t, NULL);
    must(native_result == 6, "a native thread's read passes through and gets the data");
    return 0;
}
