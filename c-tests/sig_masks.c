/*
 * sig_masks: signal masks belong to each thread, and a signal goes to the
 * thread Linux gives it to.
 *
 *   main blocks SIGUSR1; threads A and B inherit that; B unblocks it.
 *   Both wait in read() (handlers without SA_RESTART).
 *   kill(process, SIGUSR1)    -> B (main and A block it); B's read: EINTR
 *   pthread_kill(A, SIGUSR2)  -> A's handler, A's read: EINTR
 *   pthread_kill(A, SIGUSR1)  -> pending at A only (A's sigpending shows
 *                                it, main's does not); runs in A when A
 *                                unblocks it, before pthread_sigmask returns
 *   pthread_kill(C, SIGUSR2)  -> C, blocking it, takes it with sigwait
 *   kill(process, SIGUSR2)    -> main (the thread group leader) while it
 *                                waits in pthread_join
 *   raise(SIGUSR2) in B       -> B's handler, before raise returns
 *   thread D blocks SIGPIPE (left at SIG_DFL) and writes to a socket whose
 *                                peer is gone: EPIPE, the process lives,
 *                                SIGPIPE is pending for D, which takes it
 *                                with sigtimedwait (libpq's way)
 *   a SA_SIGINFO handler adds SIGUSR2 to its ucontext's uc_sigmask: the
 *                                thread blocks SIGUSR2 after it returns
 *                                (for raise and for kill of the process)
 *   thread E blocks SIGUSR1     -> a child it makes with posix_spawn or fork
 *                                starts with SIGUSR1 blocked (main's does
 *                                not block it)
 *
 * Prints who ran which handler; the transcript must be the native one.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

static pthread_t tmain, ta, tb, tc;
static volatile sig_atomic_t n1, n2;
static pthread_t who1, who2;
static int pa[2], pb[2], go_a[2], ready[2];

static const char *name(pthread_t t)
{
    if (pthread_equal(t, tmain))
        return "main";
    if (pthread_equal(t, ta))
        return "A";
    if (pthread_equal(t, tb))
        return "B";
    if (pthread_equal(t, tc))
        return "C";
    return "?";
}

static void on_usr1(int s)
{
    (void)s;
    who1 = pthread_self();
    n1++;
}
static void on_usr2(int s)
{
    (void)s;
    who2 = pthread_self();
    n2++;
}

static int has(int sig)
{
    sigset_t cur;
    pthread_sigmask(SIG_SETMASK, NULL, &cur);
    return sigismember(&cur, sig);
}

static int pending(int sig)
{
    sigset_t p;
    sigpending(&p);
    return sigismember(&p, sig);
}

static void say(const char *fmt, const char *who, long a, const char *b)
{
    printf(fmt, who, a, b);
    fflush(stdout);
}

static void *thread_a(void *arg)
{
    (void)arg;
    char c;
    say("%s: SIGUSR1 blocked (inherited): %ld%s\n", "A", has(SIGUSR1), "");
    if (write(ready[1], "a", 1) != 1)
        return NULL;
    ssize_t r = read(pa[0], &c, 1);
    int e = errno;
    say("%s: read -> %ld %s\n", "A", (long)r, r < 0 ? strerrorname_np(e) : "");
    /* Wait until main sent SIGUSR1 to this thread. */
    if (read(go_a[0], &c, 1) != 1)
        return NULL;
    say("%s: SIGUSR1 pending here: %ld%s\n", "A", pending(SIGUSR1), "");
    int before = n1;
    sigset_t s1;
    sigemptyset(&s1);
    sigaddset(&s1, SIGUSR1);
    pthread_sigmask(SIG_UNBLOCK, &s1, NULL);
    say("%s: unblocked SIGUSR1: its handler ran before pthread_sigmask returned: %ld, in %s\n", "A",
        n1 == before + 1, name(who1));
    return NULL;
}

static void *thread_b(void *arg)
{
    (void)arg;
    sigset_t s1, old;
    sigemptyset(&s1);
    sigaddset(&s1, SIGUSR1);
    pthread_sigmask(SIG_UNBLOCK, &s1, &old);
    say("%s: old mask had SIGUSR1: %ld%s\n", "B", sigismember(&old, SIGUSR1), "");
    if (write(ready[1], "b", 1) != 1)
        return NULL;
    char c;
    ssize_t r = read(pb[0], &c, 1);
    int e = errno;
    say("%s: read -> %ld %s\n", "B", (long)r, r < 0 ? strerrorname_np(e) : "");
    int before = n2;
    raise(SIGUSR2);
    say("%s: raise(SIGUSR2) ran the handler before returning: %ld, in %s\n", "B", n2 == before + 1, name(who2));
    return NULL;
}

static void *thread_c(void *arg)
{
    (void)arg;
    sigset_t s2;
    sigemptyset(&s2);
    sigaddset(&s2, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &s2, NULL);
    if (write(ready[1], "c", 1) != 1)
        return NULL;
    int sig = 0;
    int r = sigwait(&s2, &sig);
    say("%s: sigwait -> %ld, signal %s\n", "C", r, sig == SIGUSR2 ? "SIGUSR2" : "other");
    return NULL;
}

static void *killer(void *arg)
{
    (void)arg;
    usleep(100000);
    kill(getpid(), SIGUSR2);
    usleep(100000);
    return NULL;
}

static void *thread_d(void *arg)
{
    (void)arg;
    sigset_t sp;
    sigemptyset(&sp);
    sigaddset(&sp, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &sp, NULL);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
        return NULL;
    close(sv[1]);
    ssize_t r = write(sv[0], "x", 1);
    int e = errno;
    say("%s: write to a closed peer -> %ld %s\n", "D", (long)r, r < 0 ? strerrorname_np(e) : "");
    say("%s: SIGPIPE pending here: %ld%s\n", "D", pending(SIGPIPE), "");
    struct timespec zero = {0, 0};
    int sig = sigtimedwait(&sp, NULL, &zero);
    printf("D: sigtimedwait took %s\n", sig == SIGPIPE ? "SIGPIPE" : "nothing");
    fflush(stdout);
    close(sv[0]);
    return NULL;
}

/* Whether the kernel mask of a process that printed its
 * /proc/self/status on `fd` blocks `sig`. */
static int child_blocks(int fd, int sig)
{
    char buf[4096];
    size_t have = 0;
    ssize_t r;
    while (have < sizeof buf - 1 && (r = read(fd, buf + have, sizeof buf - 1 - have)) > 0)
        have += (size_t)r;
    buf[have] = 0;
    char *l = strstr(buf, "SigBlk:");
    if (!l)
        return -1;
    unsigned long long m = strtoull(l + 7, NULL, 16);
    return (int)((m >> (sig - 1)) & 1);
}

static void *thread_e(void *arg)
{
    (void)arg;
    sigset_t s1;
    sigemptyset(&s1);
    sigaddset(&s1, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &s1, NULL);
    int p[2];
    if (pipe(p))
        return NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    char *argv[] = {"cat", "/proc/self/status", NULL};
    pid_t kid;
    if (posix_spawnp(&kid, "cat", &fa, NULL, argv, environ) != 0)
        return NULL;
    close(p[1]);
    printf("E: a posix_spawn child starts with SIGUSR1 blocked: %d\n", child_blocks(p[0], SIGUSR1));
    fflush(stdout);
    close(p[0]);
    waitpid(kid, NULL, 0);
    posix_spawn_file_actions_destroy(&fa);

    if (pipe(p))
        return NULL;
    kid = fork();
    if (kid == 0) {
        int f = open("/proc/self/status", O_RDONLY);
        char b[4096];
        ssize_t n = read(f, b, sizeof b);
        if (n > 0 && write(p[1], b, (size_t)n) != n)
            _exit(1);
        _exit(0);
    }
    close(p[1]);
    printf("E: a fork child starts with SIGUSR1 blocked: %d\n", child_blocks(p[0], SIGUSR1));
    fflush(stdout);
    close(p[0]);
    waitpid(kid, NULL, 0);
    return NULL;
}

static void on_hup(int s, siginfo_t *si, void *ucv)
{
    (void)s;
    (void)si;
    ucontext_t *uc = ucv;
    sigaddset(&uc->uc_sigmask, SIGUSR2);
}

static void uc_mask_case(const char *how)
{
    if (strcmp(how, "raise") == 0)
        raise(SIGHUP);
    else
        kill(getpid(), SIGHUP);
    printf("main: after %s(SIGHUP), whose handler added SIGUSR2 to uc_sigmask, SIGUSR2 is blocked: %d\n", how,
           has(SIGUSR2));
    fflush(stdout);
    sigset_t s2;
    sigemptyset(&s2);
    sigaddset(&s2, SIGUSR2);
    pthread_sigmask(SIG_UNBLOCK, &s2, NULL);
}

static void wait_ready(int n)
{
    char c;
    for (int i = 0; i < n; i++)
        if (read(ready[0], &c, 1) != 1)
            return;
    usleep(100000); /* let them reach their wait */
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_handler = on_usr2;
    sigaction(SIGUSR2, &sa, NULL);
    if (pipe(pa) || pipe(pb) || pipe(go_a) || pipe(ready))
        return 1;
    tmain = pthread_self();

    sigset_t s1;
    sigemptyset(&s1);
    sigaddset(&s1, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &s1, NULL);
    pthread_create(&ta, NULL, thread_a, NULL);
    wait_ready(1);
    pthread_create(&tb, NULL, thread_b, NULL);
    wait_ready(1);

    kill(getpid(), SIGUSR1);
    usleep(100000);
    printf("main: kill(process, SIGUSR1) ran in %s (count %d)\n", name(who1), (int)n1);
    fflush(stdout);

    pthread_kill(ta, SIGUSR2);
    usleep(100000);
    printf("main: pthread_kill(A, SIGUSR2) ran in %s (count %d)\n", name(who2), (int)n2);
    fflush(stdout);

    pthread_kill(ta, SIGUSR1);
    usleep(50000);
    printf("main: SIGUSR1 pending for main: %d; handled so far %d\n", pending(SIGUSR1), (int)n1);
    fflush(stdout);
    if (write(go_a[1], "g", 1) != 1)
        return 1;
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);

    pthread_create(&tc, NULL, thread_c, NULL);
    wait_ready(1);
    pthread_kill(tc, SIGUSR2);
    pthread_join(tc, NULL);

    /* main waits in pthread_join; a process signal goes to main. */
    pthread_t k;
    pthread_create(&k, NULL, killer, NULL);
    pthread_join(k, NULL);
    printf("main: kill(process, SIGUSR2) while main joins ran in %s (count %d)\n", name(who2), (int)n2);
    fflush(stdout);

    pthread_t d;
    pthread_create(&d, NULL, thread_d, NULL);
    pthread_join(d, NULL);
    printf("main: SIGPIPE pending for main: %d\n", pending(SIGPIPE));
    fflush(stdout);

    pthread_t e;
    pthread_create(&e, NULL, thread_e, NULL);
    pthread_join(e, NULL);

    struct sigaction sh;
    memset(&sh, 0, sizeof sh);
    sh.sa_sigaction = on_hup;
    sh.sa_flags = SA_SIGINFO;
    sigaction(SIGHUP, &sh, NULL);
    uc_mask_case("raise");
    uc_mask_case("kill");
    return 0;
}
