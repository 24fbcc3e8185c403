/* A named semaphore waited for by threads of processes that have other
 * threads (each has a companion thread parked on a pipe, so that under
 * corun no waiter is its process's only coroutine, which would make
 * glibc's blocking call as natively):
 *
 * 1. a 400 ms wait for a post from another process sleeps: the waiting
 *    thread makes few voluntary context switches meanwhile (RUSAGE_THREAD:
 *    under corun its worker's; natively 1 or 2; under corun a few more, a
 *    look at the word every 100 ms; a waiter that retried on a timer
 *    every millisecond made hundreds);
 * 2. two such processes hand a turn back and forth 2,000 times;
 * 3. nine waiters in three processes take 600 tokens posted one at a time
 *    (then one more each, to stop): every post reaches a waiter (a wake
 *    the kernel gave to a process whose waiter no longer wanted it must
 *    be passed on), no wait runs into its 20 s safety timeout.
 *
 * Output is the same natively and under corun (counts and yes/no, no
 * timings). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 2000
#define TOKENS 600
#define PROCS 3
#define THREADS 3
#define WAITERS (PROCS * THREADS)

struct shared {
    atomic_int taken;
    atomic_int lost;
};

static struct shared *sh;
static sem_t *a, *b, *tok;
static int companion_pipe[2];

static void *companion(void *arg)
{
    (void)arg;
    char c;
    if (read(companion_pipe[0], &c, 1) < 0)
        perror("companion");
    return NULL;
}

/* A companion thread in the calling process (a forked child has none of
 * its parent's threads). */
static void start_companion(void)
{
    pthread_t t;
    if (pipe(companion_pipe) || pthread_create(&t, NULL, companion, NULL)) {
        perror("companion");
        exit(1);
    }
    pthread_detach(t);
}

static sem_t *named(const char *what)
{
    char name[64];
    snprintf(name, sizeof name, "/corun_sem_wake_%s_%d", what, (int)getpid());
    sem_t *s = sem_open(name, O_CREAT | O_EXCL, 0600, 0);
    if (s == SEM_FAILED) {
        perror("sem_open");
        exit(1);
    }
    sem_unlink(name);
    return s;
}

static int wait_bounded(sem_t *s)
{
    struct timespec d;
    clock_gettime(CLOCK_REALTIME, &d);
    d.tv_sec += 20;
    while (sem_timedwait(s, &d) != 0) {
        if (errno != EINTR)
            return -1;
    }
    return 0;
}

static void sleep_cost(void)
{
    pid_t p = fork();
    if (p == 0) {
        usleep(400000);
        sem_post(a);
        _exit(0);
    }
    struct rusage r0, r1;
    getrusage(RUSAGE_THREAD, &r0);
    int r = wait_bounded(a);
    getrusage(RUSAGE_THREAD, &r1);
    waitpid(p, NULL, 0);
    long sw = r1.ru_nvcsw - r0.ru_nvcsw;
    printf("a 400 ms wait: %s, fewer than 30 voluntary context switches: %s\n",
           r == 0 ? "posted" : "timed out", sw < 30 ? "yes" : "no");
    fprintf(stderr, "%ld voluntary context switches in the 400 ms wait\n", sw);
}

static void ping_pong(void)
{
    pid_t p = fork();
    if (p == 0) {
        start_companion();
        for (int i = 0; i < ROUNDS; i++) {
            if (wait_bounded(a))
                _exit(1);
            sem_post(b);
        }
        _exit(0);
    }
    int done = 0;
    for (; done < ROUNDS; done++) {
        sem_post(a);
        if (wait_bounded(b))
            break;
    }
    int st;
    waitpid(p, &st, 0);
    printf("turns handed back: %d of %d, the other side ended %s\n", done, ROUNDS,
           WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "well" : "badly");
}

static void *taker(void *arg)
{
    (void)arg;
    for (;;) {
        if (wait_bounded(tok)) {
            atomic_fetch_add(&sh->lost, 1);
            return NULL;
        }
        if (atomic_fetch_add(&sh->taken, 1) >= TOKENS)
            return NULL;
    }
}

static void takers(void)
{
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, taker, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
}

static void many_waiters(void)
{
    pid_t kids[PROCS - 1];
    for (int i = 0; i < PROCS - 1; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            start_companion();
            takers();
            _exit(0);
        }
    }
    pthread_t mine[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&mine[i], NULL, taker, NULL);
    usleep(50000); /* let most of them sleep */
    for (int i = 0; i < TOKENS + WAITERS; i++) {
        sem_post(tok);
        if (i % 20 == 19)
            usleep(2000);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(mine[i], NULL);
    for (int i = 0; i < PROCS - 1; i++)
        waitpid(kids[i], NULL, 0);
    int left = 0;
    while (sem_trywait(tok) == 0)
        left++;
    printf("%d waiters in %d processes took %d tokens (%d left over), waits that timed out: %d\n",
           WAITERS, PROCS, atomic_load(&sh->taken), left, atomic_load(&sh->lost));
}

int main(void)
{
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    a = named("a");
    b = named("b");
    tok = named("tok");
    start_companion();
    sleep_cost();
    ping_pong();
    many_waiters();
    return 0;
}
