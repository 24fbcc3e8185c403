/* gai_suspend - waits for getaddrinfo_a requests (scripts/tests/gai_suspend.sh).
 *
 * The test's DNS server (scripts/tests/data/slow_dns.py) answers
 * host-N.corun.test with 10.11.N/256.N%256 after 300 ms. main queues
 * lookups with getaddrinfo_a(GAI_NOWAIT) and waits for them with
 * gai_suspend while a ticker thread sleeps 2 ms at a time (ticker.h):
 * natively the kernel runs the ticker during each wait; under corun with
 * one worker it runs only if the wait parks main (glibc's own wait is an
 * inline futex call that held the worker). One tick is the check: a wait
 * that holds the only worker lets the ticker make none at all (nothing
 * else runs it). On a loaded machine the kernel may not run the ticker
 * during a short wait natively either (three ticks in a 50 ms wait were
 * missed 4 runs in 15 at load 30, one tick 1 run in 3 at load 27): a case
 * whose wait saw no tick is made again with new requests, up to 3 times,
 * and prints what its last attempt saw. A wait that holds the worker
 * sees none every time.
 *
 * Cases, each printing gai_suspend's result by name:
 *   timeout   a 50 ms timeout passes first: glibc's EAI_AGAIN (EAI_SYSTEM
 *             in glibc 2.36)
 *   done      no timeout: 0 once the lookup is answered, its address
 *   all done  the same request again: glibc's answer for "nothing to wait for"
 *   nulls     a list of null entries: likewise
 *   mixed     one request done, one in progress: glibc waits for the latter
 *   eintr     SIGALRM (no SA_RESTART) 150 ms in, timeout 5 s: EAI_INTR
 *   restart   SIGALRM (SA_RESTART) 150 ms in, no timeout: the wait goes on, 0
 * stdout is compared natively and under corun.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "ticker.h"

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
    (void)sig;
    alarms++;
}

static const char *gai_name(int rc)
{
    switch (rc) {
    case 0: return "0";
    case EAI_AGAIN: return "EAI_AGAIN";
    case EAI_INTR: return "EAI_INTR";
    case EAI_ALLDONE: return "EAI_ALLDONE";
    case EAI_INPROGRESS: return "EAI_INPROGRESS";
    case EAI_SYSTEM: return "EAI_SYSTEM";
    default: return "other";
    }
}

struct lookup {
    char name[64];
    struct addrinfo hints;
    struct gaicb cb;
};

static void start(struct lookup *l, int n)
{
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "host-%d.corun.test", n);
    l->hints.ai_family = AF_INET;
    l->hints.ai_socktype = SOCK_STREAM;
    l->cb.ar_name = l->name;
    l->cb.ar_request = &l->hints;
    struct gaicb *list[1] = {&l->cb};
    int rc = getaddrinfo_a(GAI_NOWAIT, list, 1, NULL);
    if (rc != 0) {
        printf("getaddrinfo_a(%s): %s\n", l->name, gai_strerror(rc));
        exit(1);
    }
}

/* What the current attempt of a case prints, printed once it is the
 * last (run_case). */
static char said[1024];

static void say(const char *fmt, ...)
{
    size_t n = strlen(said);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(said + n, sizeof said - n, fmt, ap);
    va_end(ap);
}

/* "NAME -> ADDRESS" once the request is done, its state otherwise. */
static void show(const struct lookup *l)
{
    int rc = gai_error((struct gaicb *)&l->cb);
    char addr[INET_ADDRSTRLEN] = "-";
    if (rc == 0 && l->cb.ar_result && l->cb.ar_result->ai_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)l->cb.ar_result->ai_addr)->sin_addr, addr, sizeof addr);
    say("  %s: %s %s\n", l->name, gai_name(rc), addr);
}

static int suspend_one(const struct lookup *l, long timeout_ms)
{
    const struct gaicb *list[1] = {&l->cb};
    struct timespec ts = {timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
    return gai_suspend(list, 1, timeout_ms < 0 ? NULL : &ts);
}

/* Waits for `l` without a timeout (not part of a case's check). */
static void finish(const struct lookup *l)
{
    for (int i = 0; i < 100 && gai_error((struct gaicb *)&l->cb) == EAI_INPROGRESS; i++)
        suspend_one(l, -1);
}

static void alarm_in(long ms, int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = flags;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 0}, {0, ms * 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
}

/* Makes a fresh request of `l` for host-`n`, once any earlier one of
 * `l` is done (glibc keeps an in-progress gaicb in its list). */
static void restart_lookup(struct lookup *l, int n, int *used)
{
    if (*used) {
        finish(l);
        if (l->cb.ar_result)
            freeaddrinfo(l->cb.ar_result);
    }
    *used = 1;
    start(l, n);
}

static struct lookup a, b, c, d;
static int a_used, b_used, c_used, d_used;

/* Each case makes its requests, waits once, say()s what it saw, and
 * returns the ticker's ticks during that wait. */
static long case_timeout(void)
{
    restart_lookup(&a, 1, &a_used);
    long t0 = ticker_now();
    say("timeout: %s\n", gai_name(suspend_one(&a, 50)));
    return ticker_now() - t0;
}

static long case_done(void)
{
    /* The request of the timeout case, still in progress the first time. */
    if (gai_error(&a.cb) != EAI_INPROGRESS)
        restart_lookup(&a, 1, &a_used);
    long t0 = ticker_now();
    say("done: %s\n", gai_name(suspend_one(&a, -1)));
    long ticks = ticker_now() - t0;
    show(&a);
    return ticks;
}

static long case_mixed(void)
{
    restart_lookup(&b, 2, &b_used);
    const struct gaicb *mixed[2] = {&a.cb, &b.cb};
    long t0 = ticker_now();
    say("mixed: %s\n", gai_name(gai_suspend(mixed, 2, NULL)));
    long ticks = ticker_now() - t0;
    show(&b);
    return ticks;
}

/* The alarm comes 150 ms before the answer, but when the waiting thread
 * gets to run only after both, its wait ends as woken (the kernel's futex
 * wait does so too: a wake that came first wins over a pending signal).
 * On a loaded machine that happened under corun, whose workers must run
 * to take the signal: a wait that ended with 0 is made again too. A wait
 * that no handler interrupts ends with 0 every time. */
static long case_eintr(void)
{
    alarms = 0;
    restart_lookup(&c, 3, &c_used);
    alarm_in(150, 0);
    long t0 = ticker_now();
    int rc = suspend_one(&c, 5000);
    long ticks = ticker_now() - t0;
    say("eintr: %s, handler ran %d\n", gai_name(rc), (int)alarms);
    finish(&c);
    show(&c);
    return rc == 0 ? 0 : ticks;
}

static long case_restart(void)
{
    alarms = 0;
    restart_lookup(&d, 4, &d_used);
    alarm_in(150, SA_RESTART);
    long t0 = ticker_now();
    int rc = suspend_one(&d, -1);
    long ticks = ticker_now() - t0;
    say("restart: %s, handler ran %d\n", gai_name(rc), (int)alarms);
    show(&d);
    return ticks;
}

/* Runs a case up to 3 times while its wait saw no tick (or, for eintr,
 * ended as woken), then prints its last attempt: the result line, the
 * ticker's line, the requests' states. */
static void run_case(const char *name, long (*f)(void))
{
    for (int attempt = 1;; attempt++) {
        said[0] = 0;
        long ticks = f();
        if (ticks >= 1 || attempt == 3) {
            char *nl = strchr(said, '\n');
            fwrite(said, 1, nl ? (size_t)(nl + 1 - said) : strlen(said), stdout);
            printf("%s: ticker ran during the wait: %s\n", name, ticks >= 1 ? "yes" : "NO");
            if (nl)
                fputs(nl + 1, stdout);
            return;
        }
        fprintf(stderr, "%s: attempt %d saw no tick (or ended as woken): %s", name, attempt, said);
    }
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* SIGALRM goes to main: the ticker (made now) blocks it. */
    sigset_t alrm, old;
    sigemptyset(&alrm);
    sigaddset(&alrm, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &alrm, &old);
    ticker_start(2000, 20000);
    pthread_sigmask(SIG_SETMASK, &old, NULL);

    run_case("timeout", case_timeout);
    run_case("done", case_done);
    printf("all done: %s\n", gai_name(suspend_one(&a, 1000)));
    const struct gaicb *nulls[2] = {NULL, NULL};
    printf("nulls: %s\n", gai_name(gai_suspend(nulls, 2, NULL)));
    run_case("mixed", case_mixed);
    run_case("eintr", case_eintr);
    run_case("restart", case_restart);

    ticker_stop();
    return 0;
}
