// Timer slack (prctl PR_SET_TIMERSLACK / PR_GET_TIMERSLACK) and the I/O
// priority (syscall ioprio_set / ioprio_get, IOPRIO_WHO_PROCESS) are each
// thread's own: two threads set different values and each reads back its
// own, main's stay as they were, another thread reads a thread's I/O
// priority through its gettid(), a new thread inherits its creator's, and
// PR_SET_TIMERSLACK 0 brings back the value the thread started with.
// corun passed them to the kernel: they were the worker's, shared by every
// thread there, and ioprio_get on a thread's tid failed with ESRCH.
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define WHO_PROCESS 1
#define PRIO(c, d) (((c) << 13) | (d))

static pthread_barrier_t bar;
static pid_t tids[3];
static unsigned long slack[3];
static long io[3];

static long ioprio_get(int who) { return syscall(SYS_ioprio_get, WHO_PROCESS, who); }

static void *child(void *a) {
    (void)a;
    printf("inherited: slack=%lu ioprio=%ld\n", (unsigned long)prctl(PR_GET_TIMERSLACK),
           ioprio_get(0));
    return NULL;
}

static void *thr(void *a) {
    long i = (long)a;
    tids[i] = gettid();
    prctl(PR_SET_TIMERSLACK, 1000UL * (unsigned long)i);
    long r = syscall(SYS_ioprio_set, WHO_PROCESS, 0, PRIO(2, (int)i));
    if (r)
        printf("ioprio_set: %s\n", strerror(errno));
    pthread_barrier_wait(&bar);
    slack[i] = (unsigned long)prctl(PR_GET_TIMERSLACK);
    io[i] = ioprio_get(0);
    pthread_barrier_wait(&bar);
    pthread_barrier_wait(&bar);
    if (i == 1) {
        pthread_t c;
        pthread_create(&c, NULL, child, NULL);
        pthread_join(c, NULL);
        prctl(PR_SET_TIMERSLACK, 0UL);
        printf("t1 slack after 0: %lu\n", (unsigned long)prctl(PR_GET_TIMERSLACK));
    }
    return NULL;
}

int main(void) {
    pthread_barrier_init(&bar, NULL, 3);
    unsigned long m0 = (unsigned long)prctl(PR_GET_TIMERSLACK);
    long io0 = ioprio_get(0);
    pthread_t a, b;
    pthread_create(&a, NULL, thr, (void *)1);
    pthread_create(&b, NULL, thr, (void *)2);
    pthread_barrier_wait(&bar);
    pthread_barrier_wait(&bar);
    printf("slack t1=%lu t2=%lu main same=%d\n", slack[1], slack[2],
           (unsigned long)prctl(PR_GET_TIMERSLACK) == m0);
    printf("ioprio t1=%ld t2=%ld main same=%d\n", io[1], io[2], ioprio_get(0) == io0);
    long o1 = ioprio_get(tids[1]);
    printf("ioprio of t1 from main: %ld %s\n", o1, o1 < 0 ? strerror(errno) : "");
    pthread_barrier_wait(&bar);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return 0;
}
