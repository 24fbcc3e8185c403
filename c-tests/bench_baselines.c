/*
 * bench_baselines TEST ARGS... - what a program would use instead of
 * corun, for the micro benchmarks of scripts/bench.sh. A plain program,
 * run natively (never under corun) in the same bench run as co_bench_micro.
 *
 *   swapcontext ITERS TRIALS  two ucontexts: main -> B -> main is one round
 *                             trip (two swapcontext calls)
 *   eventfd ITERS TRIALS CPU  two kernel threads ping-pong over two eventfds
 *                             (A writes, B reads and writes back, A reads):
 *                             one round trip. CPU >= 0 pins both threads to
 *                             that CPU; -1 leaves them to the scheduler
 *   pthread ITERS TRIALS      pthread_create + pthread_join of an empty
 *                             thread, default attributes, one at a time
 *   pshared_cond ITERS TRIALS two processes hand a turn back and forth
 *                             through a process-shared mutex and condition
 *                             variable: one round trip (the parent has an
 *                             idle second thread, so under corun it is not
 *                             the process's only coroutine and its waits
 *                             park rather than block)
 *   exec ITERS TRIALS [LIB]   posix_spawn + waitpid of /bin/true, one at a
 *                             time: a process's start and end. With LIB,
 *                             the child runs with LD_PRELOAD=LIB (this
 *                             parent stays native): corun's cost per process
 *   fork ITERS TRIALS         fork, the child echoes 5 bytes back over a
 *                             socketpair and exits, the parent checks them
 *                             and waits for it: a fork-per-connection
 *                             server's child, one at a time. Run natively
 *                             and under corun (the whole program: the
 *                             parent forks from a coroutine); prints the
 *                             children's page faults each on stderr
 *   sleepers N MS TRIALS      N kernel threads started at once, each
 *                             nanosleep()s MS ms; wall time from the first
 *                             create to the last join (if creation fails for
 *                             lack of threads, the oldest is joined first)
 *
 * Output: RESULT <test> median=<x> min=<x> max=<x> unit=<ns|ms> trials=...
 * (the same format as co_bench_micro).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void report(const char *test, double *v, int n, const char *unit)
{
    double s[64];
    memcpy(s, v, sizeof *v * (size_t)n);
    qsort(s, (size_t)n, sizeof *s, cmp_d);
    printf("RESULT %s median=%.2f min=%.2f max=%.2f unit=%s trials=", test, s[n / 2], s[0], s[n - 1], unit);
    for (int i = 0; i < n; i++)
        printf("%s%.2f", i ? "," : "", v[i]);
    printf("\n");
}

static void die(const char *what, int e)
{
    fprintf(stderr, "bench_baselines: %s: %s\n", what, strerror(e));
    exit(1);
}

static long iters;

/* ---- swapcontext ---- */
static ucontext_t uc_main, uc_b;
static volatile long b_turns;

static void b_loop(void)
{
    for (;;) {
        b_turns++;
        swapcontext(&uc_b, &uc_main);
    }
}

static double swapcontext_trial(void)
{
    static char *stack;
    if (!stack) {
        stack = malloc(256 * 1024);
        getcontext(&uc_b);
        uc_b.uc_stack.ss_sp = stack;
        uc_b.uc_stack.ss_size = 256 * 1024;
        uc_b.uc_link = NULL;
        makecontext(&uc_b, b_loop, 0);
    }
    long before = b_turns;
    uint64_t t0 = now_ns();
    for (long i = 0; i < iters; i++)
        swapcontext(&uc_main, &uc_b);
    double ns = (double)(now_ns() - t0) / (double)iters;
    if (b_turns - before != iters) {
        fprintf(stderr, "bench_baselines: swapcontext: B ran %ld times, not %ld\n", b_turns - before, iters);
        exit(1);
    }
    return ns;
}

/* ---- eventfd ping-pong ---- */
static int efd_ab, efd_ba, pin_cpu;

static void pin(void)
{
    if (pin_cpu < 0)
        return;
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(pin_cpu, &s);
    int e = pthread_setaffinity_np(pthread_self(), sizeof s, &s);
    if (e)
        die("pthread_setaffinity_np", e);
}

static void *ponger(void *arg)
{
    (void)arg;
    pin();
    uint64_t v;
    for (long i = 0; i < iters; i++) {
        if (read(efd_ab, &v, sizeof v) != sizeof v)
            die("read eventfd", errno);
        v = 1;
        if (write(efd_ba, &v, sizeof v) != sizeof v)
            die("write eventfd", errno);
    }
    return NULL;
}

static double eventfd_trial(void)
{
    efd_ab = eventfd(0, 0);
    efd_ba = eventfd(0, 0);
    if (efd_ab < 0 || efd_ba < 0)
        die("eventfd", errno);
    pin(); /* this thread too: both on one CPU */
    pthread_t t;
    int e = pthread_create(&t, NULL, ponger, NULL);
    if (e)
        die("pthread_create", e);
    uint64_t v = 1;
    /* One round trip outside the timing: both threads are up. */
    if (write(efd_ab, &v, sizeof v) != sizeof v || read(efd_ba, &v, sizeof v) != sizeof v)
        die("eventfd", errno);
    uint64_t t0 = now_ns();
    for (long i = 1; i < iters; i++) {
        v = 1;
        if (write(efd_ab, &v, sizeof v) != sizeof v)
            die("write eventfd", errno);
        if (read(efd_ba, &v, sizeof v) != sizeof v)
            die("read eventfd", errno);
    }
    double ns = (double)(now_ns() - t0) / (double)(iters - 1);
    pthread_join(t, NULL);
    close(efd_ab);
    close(efd_ba);
    return ns;
}

/* ---- pthread_create + join ---- */
static void *empty(void *arg) { return arg; }

static double pthread_trial(void)
{
    uint64_t t0 = now_ns();
    for (long i = 0; i < iters; i++) {
        pthread_t t;
        int e = pthread_create(&t, NULL, empty, NULL);
        if (e)
            die("pthread_create", e);
        pthread_join(t, NULL);
    }
    return (double)(now_ns() - t0) / (double)iters;
}

/* ---- sleepers ---- */
static long sleep_ms;
static volatile long short_sleeps;

static void *sleeper(void *arg)
{
    (void)arg;
    uint64_t t0 = now_ns();
    struct timespec ts = {.tv_sec = sleep_ms / 1000, .tv_nsec = (sleep_ms % 1000) * 1000000};
    if (nanosleep(&ts, NULL) != 0 || now_ns() - t0 < (uint64_t)sleep_ms * 1000000ull)
        __atomic_fetch_add(&short_sleeps, 1, __ATOMIC_RELAXED);
    return NULL;
}

static double sleepers_trial(long n)
{
    pthread_t *t = malloc(sizeof *t * (size_t)n);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 * 1024); /* generous for a sleeper, and cheaper than 8 MiB */
    long joined = 0;
    uint64_t t0 = now_ns();
    for (long i = 0; i < n; i++) {
        int e;
        while ((e = pthread_create(&t[i], &a, sleeper, NULL)) == EAGAIN && joined < i)
            pthread_join(t[joined++], NULL);
        if (e)
            die("pthread_create", e);
    }
    while (joined < n)
        pthread_join(t[joined++], NULL);
    double ms = (double)(now_ns() - t0) / 1e6;
    pthread_attr_destroy(&a);
    free(t);
    return ms;
}

/* Two threads alternating with sched_yield: under corun with one worker,
 * each iteration is a yield round trip between two pthread-created
 * coroutines (each with its own TLS unless CORUN_TLS=worker). */
static void *yielder(void *arg)
{
    for (long i = 0; i < iters; i++)
        sched_yield();
    return arg;
}

static double thread_yield_trial(void)
{
    uint64_t t0 = now_ns();
    pthread_t a, b;
    int e = pthread_create(&a, NULL, yielder, NULL);
    if (e)
        die("pthread_create", e);
    e = pthread_create(&b, NULL, yielder, NULL);
    if (e)
        die("pthread_create", e);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return (double)(now_ns() - t0) / (double)iters;
}

/* ---- process-shared condition variable, two processes ---- */
struct turn {
    pthread_mutex_t m;
    pthread_cond_t c;
    int turn;
};
static struct turn *tn;
static volatile int idle_stop;

static void *idler(void *arg)
{
    while (!idle_stop)
        usleep(1000);
    return arg;
}

static void take_turn(int me)
{
    pthread_mutex_lock(&tn->m);
    while (tn->turn != me)
        pthread_cond_wait(&tn->c, &tn->m);
    tn->turn = !me;
    pthread_cond_broadcast(&tn->c);
    pthread_mutex_unlock(&tn->m);
}

static double pshared_cond_trial(void)
{
    if (!tn) {
        tn = mmap(NULL, sizeof *tn, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (tn == MAP_FAILED)
            die("mmap", errno);
        pthread_mutexattr_t ma;
        pthread_mutexattr_init(&ma);
        pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
        pthread_mutex_init(&tn->m, &ma);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
        pthread_cond_init(&tn->c, &ca);
    }
    tn->turn = 0;
    idle_stop = 0;
    pthread_t idle;
    int e = pthread_create(&idle, NULL, idler, NULL);
    if (e)
        die("pthread_create", e);
    fflush(stdout);
    pid_t child = fork();
    if (child < 0)
        die("fork", errno);
    if (child == 0) {
        for (long i = 0; i < iters; i++)
            take_turn(1);
        _exit(0);
    }
    uint64_t t0 = now_ns();
    for (long i = 0; i < iters; i++)
        take_turn(0);
    double ns = (double)(now_ns() - t0) / (double)iters;
    int st;
    waitpid(child, &st, 0);
    idle_stop = 1;
    pthread_join(idle, NULL);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        die("pshared_cond child", EINVAL);
    return ns;
}

/* ---- exec ---- */
/* Waits for child `pid`; dies with `what` unless it exited with 0. */
static void wait_exit0(pid_t pid, const char *what)
{
    int st;
    if (waitpid(pid, &st, 0) != pid)
        die("waitpid", errno);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        die(what, EINVAL);
}

static const char *exec_preload; /* NULL: the child runs natively */

static double exec_trial(void)
{
    char pre[4096];
    char *envp[2] = {NULL, NULL};
    if (exec_preload) {
        snprintf(pre, sizeof pre, "LD_PRELOAD=%s", exec_preload);
        envp[0] = pre;
    }
    char *argv[] = {"/bin/true", NULL};
    uint64_t t0 = now_ns();
    for (long i = 0; i < iters; i++) {
        pid_t pid;
        int e = posix_spawn(&pid, argv[0], NULL, NULL, argv, envp);
        if (e)
            die("posix_spawn /bin/true", e);
        wait_exit0(pid, "/bin/true did not exit 0");
    }
    return (double)(now_ns() - t0) / (double)iters;
}

static double fork_trial(void)
{
    uint64_t t0 = now_ns();
    for (long i = 0; i < iters; i++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
            die("socketpair", errno);
        pid_t pid = fork();
        if (pid < 0)
            die("fork", errno);
        if (pid == 0) {
            char b[8];
            close(sv[0]);
            ssize_t r = read(sv[1], b, sizeof b);
            if (r != 5 || write(sv[1], b, 5) != 5)
                _exit(3);
            exit(0);
        }
        close(sv[1]);
        char b[8] = {0};
        if (write(sv[0], "hello", 5) != 5 || read(sv[0], b, sizeof b) != 5 || memcmp(b, "hello", 5) != 0)
            die("the child's echo", EIO);
        close(sv[0]);
        wait_exit0(pid, "the child did not exit 0");
    }
    return (double)(now_ns() - t0) / (double)iters;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s swapcontext|pthread|thread_yield|pshared_cond ITERS TRIALS | eventfd ITERS TRIALS CPU | fork ITERS TRIALS | exec ITERS TRIALS [LIB] | sleepers N MS TRIALS\n",
                argv[0]);
        return 2;
    }
    const char *t = argv[1];
    double v[64];
    int trials;
    if (strcmp(t, "sleepers") == 0) {
        if (argc < 5)
            return 2;
        long n = atol(argv[2]);
        sleep_ms = atol(argv[3]);
        trials = atoi(argv[4]);
        if (trials < 1 || trials > 64)
            return 2;
        for (int i = 0; i < trials; i++)
            v[i] = sleepers_trial(n);
        report("sleepers", v, trials, "ms");
        return short_sleeps ? 1 : 0;
    }
    iters = atol(argv[2]);
    trials = atoi(argv[3]);
    if (iters < 2 || trials < 1 || trials > 64)
        return 2;
    double (*trial)(void) = NULL;
    const char *name = t;
    char nb[64];
    if (strcmp(t, "swapcontext") == 0)
        trial = swapcontext_trial;
    else if (strcmp(t, "pthread") == 0)
        trial = pthread_trial;
    else if (strcmp(t, "thread_yield") == 0)
        trial = thread_yield_trial;
    else if (strcmp(t, "pshared_cond") == 0)
        trial = pshared_cond_trial;
    else if (strcmp(t, "fork") == 0)
        trial = fork_trial;
    else if (strcmp(t, "exec") == 0) {
        trial = exec_trial;
        exec_preload = argc > 4 ? argv[4] : NULL;
    }
    else if (strcmp(t, "eventfd") == 0 && argc > 4) {
        trial = eventfd_trial;
        pin_cpu = atoi(argv[4]);
        snprintf(nb, sizeof nb, "eventfd_%s", pin_cpu < 0 ? "unpinned" : "pinned");
        name = nb;
    }
    if (!trial) {
        fprintf(stderr, "unknown test %s\n", t);
        return 2;
    }
    trial(); /* warm up */
    for (int i = 0; i < trials; i++)
        v[i] = trial();
    report(name, v, trials, "ns");
    if (trial == fork_trial) {
        struct rusage ru;
        if (getrusage(RUSAGE_CHILDREN, &ru) == 0)
            fprintf(stderr, "page faults per child: %.1f\n", (double)ru.ru_minflt / (double)((trials + 1) * iters));
    }
    return 0;
}
