/* A thread's CPU affinity is its own (src/hooks/pthread/affinity.rs): what
 * a thread sets with pthread_setaffinity_np, sched_setaffinity(0 or its
 * tid) or pthread_attr_setaffinity_np is what it (and others) read back,
 * with the kernel's rules (masks kept within the usable CPUs, EINVAL when
 * none is left or a buffer is too small), a new thread inherits its
 * creator's, a forked child of a pinned thread is pinned; and setting one
 * thread's affinity changes no other thread's (under corun main's library
 * pinned the worker, which main shares with its threads on 1 worker). The
 * output is compared with the native run's (scripts/tests/thread_affinity.sh);
 * libuv's test-thread-affinity.c is the same pattern. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static cpu_set_t all;     /* main's CPUs at the start */
static int first, second; /* the first two of them (second = first if one) */

static void show(const char *what, const cpu_set_t *s) {
    printf("%s:", what);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, s))
            printf(" %d", c);
    printf("\n");
}

static cpu_set_t one(int c) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(c, &s);
    return s;
}

static void show_self(const char *what) {
    cpu_set_t a, b;
    CPU_ZERO(&a);
    CPU_ZERO(&b);
    int r1 = sched_getaffinity(0, sizeof a, &a);
    int r2 = pthread_getaffinity_np(pthread_self(), sizeof b, &b);
    if (r1 != 0 || r2 != 0 || !CPU_EQUAL(&a, &b)) {
        printf("%s: sched_getaffinity %d, pthread_getaffinity_np %d, %s\n", what, r1, r2,
               CPU_EQUAL(&a, &b) ? "same" : "different masks");
        return;
    }
    show(what, &a);
}

static void *child_of_pinned(void *arg) {
    (void)arg;
    show_self("  its child inherits");
    return NULL;
}

static void *pins_itself(void *arg) {
    (void)arg;
    cpu_set_t s = one(second);
    printf("sched_setaffinity(0) in a thread: %d\n", sched_setaffinity(0, sizeof s, &s));
    show_self("  the thread reads");
    pthread_t c;
    pthread_create(&c, NULL, child_of_pinned, NULL);
    pthread_join(c, NULL);
    /* The libuv pattern: set again, reading the old mask first. */
    cpu_set_t old, now = one(first);
    pthread_getaffinity_np(pthread_self(), sizeof old, &old);
    show("  old mask", &old);
    printf("pthread_setaffinity_np(self): %d\n", pthread_setaffinity_np(pthread_self(), sizeof now, &now));
    show_self("  the thread reads");
    /* A child process of a pinned thread is pinned, in the kernel. */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        cpu_set_t k;
        CPU_ZERO(&k);
        long n = syscall(SYS_sched_getaffinity, 0, sizeof k, &k);
        printf("  forked child, kernel mask (%s):", n > 0 ? "ok" : "failed");
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &k))
                printf(" %d", c);
        printf("\n");
        fflush(stdout);
        _exit(0);
    }
    waitpid(pid, NULL, 0);
    return NULL;
}

static void *errors(void *arg) {
    (void)arg;
    /* No usable CPU in the mask: EINVAL, the mask unchanged. */
    static unsigned char far[128];
    far[127] = 0x80; /* CPU 1023 */
    errno = 0;
    int r = sched_setaffinity(0, sizeof far, (cpu_set_t *)far);
    printf("a mask of CPU 1023 only: %d %s\n", r, strerror(errno));
    r = pthread_setaffinity_np(pthread_self(), sizeof far, (cpu_set_t *)far);
    printf("  pthread_setaffinity_np: %s\n", strerror(r));
    cpu_set_t empty;
    CPU_ZERO(&empty);
    r = pthread_setaffinity_np(pthread_self(), sizeof empty, &empty);
    printf("an empty mask: %s\n", strerror(r));
    show_self("  the thread reads");
    /* A buffer too small or not a multiple of a long. */
    unsigned char small[4];
    errno = 0;
    r = sched_getaffinity(0, sizeof small, (cpu_set_t *)small);
    printf("sched_getaffinity into 4 bytes: %d %s\n", r, strerror(errno));
    r = pthread_getaffinity_np(pthread_self(), sizeof small, (cpu_set_t *)small);
    printf("  pthread_getaffinity_np: %s\n", strerror(r));
    /* A short mask is read as far as it goes: the rest is clear. */
    unsigned char shortm[8] = {0};
    shortm[first / 8] |= (unsigned char)(1u << (first % 8));
    r = sched_setaffinity(0, first < 64 ? sizeof shortm : 0, (cpu_set_t *)shortm);
    printf("an 8-byte mask: %d\n", r);
    show_self("  the thread reads");
    return NULL;
}

static void *from_attr(void *arg) {
    (void)arg;
    show_self("a thread made with an affinity attribute reads");
    return NULL;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int stage;

static void *waits(void *arg) {
    (void)arg;
    pthread_mutex_lock(&mu);
    stage = 1;
    pthread_cond_broadcast(&cv);
    while (stage != 2)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    show_self("  the thread reads");
    return NULL;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (sched_getaffinity(0, sizeof all, &all) != 0)
        return 1;
    first = second = -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &all)) {
            if (first < 0)
                first = c;
            else if (second < 0)
                second = c;
        }
    if (second < 0)
        second = first;

    pthread_t t;
    pthread_create(&t, NULL, pins_itself, NULL);
    pthread_join(t, NULL);
    cpu_set_t m;
    sched_getaffinity(0, sizeof m, &m);
    printf("main's mask %s\n", CPU_EQUAL(&m, &all) ? "unchanged" : "changed");
    pthread_getaffinity_np(pthread_self(), sizeof m, &m);
    printf("  pthread_getaffinity_np(main): %s\n", CPU_EQUAL(&m, &all) ? "unchanged" : "changed");
    long n = syscall(SYS_sched_getaffinity, 0, sizeof m, &m);
    printf("  kernel mask of main's thread: %s\n", n > 0 && CPU_EQUAL(&m, &all) ? "unchanged" : "changed");

    pthread_create(&t, NULL, errors, NULL);
    pthread_join(t, NULL);

    pthread_attr_t a;
    pthread_attr_init(&a);
    cpu_set_t s = one(second);
    pthread_attr_setaffinity_np(&a, sizeof s, &s);
    int r = pthread_create(&t, &a, from_attr, NULL);
    pthread_join(t, NULL);
    printf("pthread_create with an attribute: %d\n", r);
    CPU_ZERO(&s);
    CPU_SET(CPU_SETSIZE - 1, &s);
    pthread_attr_setaffinity_np(&a, sizeof s, &s);
    printf("  with no usable CPU in it: %s\n", strerror(pthread_create(&t, &a, from_attr, NULL)));
    pthread_attr_destroy(&a);

    /* One thread sets another's, which reads it; then by its tid. */
    pthread_create(&t, NULL, waits, NULL);
    pthread_mutex_lock(&mu);
    while (stage != 1)
        pthread_cond_wait(&cv, &mu);
    s = one(first);
    printf("main sets a thread's: %d\n", pthread_setaffinity_np(t, sizeof s, &s));
    pthread_getaffinity_np(t, sizeof m, &m);
    show("  main reads", &m);
    stage = 2;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(t, NULL);
    return 0;
}
