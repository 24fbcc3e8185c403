/* Threads on stacks the program allocated (pthread_attr_setstack, and
 * pthread_attr_setstackaddr + setstacksize): each thread checks that a
 * local variable lies inside the memory it was given, that
 * pthread_getattr_np reports exactly that stack, that deep recursion
 * works there, and that after parking (a pipe read, a sleep) it still runs
 * there. The same memory is reused for the next round of threads; at the
 * end the stacks are unmapped after the join (and, with "free", freed
 * malloc'd stacks), and a thread with a plain setstacksize still works.
 * Prints "setstack: ok" and exits 0, or names the first failure.
 *
 * Usage: setstack [ROUNDS] */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4
#define STACK_BYTES (256 * 1024)

struct job {
    char *lo;
    size_t size;
    int pipe_rd;
    int failed;
    char why[160];
};

static void failf(struct job *j, const char *what, uintptr_t a, uintptr_t b)
{
    if (!j->failed)
        snprintf(j->why, sizeof j->why, "%s (0x%lx vs 0x%lx)", what, (unsigned long)a,
                 (unsigned long)b);
    j->failed = 1;
}

static int inside(const struct job *j, const void *p)
{
    return (const char *)p >= j->lo && (const char *)p < j->lo + j->size;
}

/* About 1 KiB a frame: 100 frames use about 100 KiB of the 256 KiB. */
static unsigned recurse(struct job *j, unsigned depth)
{
    volatile char pad[1000];
    memset((char *)pad, (int)depth, sizeof pad);
    if (!inside(j, (const void *)pad))
        failf(j, "a deep frame is outside the given stack", (uintptr_t)pad, (uintptr_t)j->lo);
    if (depth == 0)
        return pad[7];
    return pad[depth % sizeof pad] + recurse(j, depth - 1);
}

static void check_here(struct job *j, const char *when)
{
    int local = 0;
    if (!inside(j, &local)) {
        char what[80];
        snprintf(what, sizeof what, "local variable outside the given stack %s", when);
        failf(j, what, (uintptr_t)&local, (uintptr_t)j->lo);
    }
}

static void *body(void *arg)
{
    struct job *j = arg;
    check_here(j, "at start");
    pthread_attr_t a;
    if (pthread_getattr_np(pthread_self(), &a) != 0) {
        failf(j, "pthread_getattr_np failed", 0, 0);
    } else {
        void *addr = NULL;
        size_t size = 0;
        pthread_attr_getstack(&a, &addr, &size);
        if (addr != j->lo)
            failf(j, "pthread_getattr_np: another stack address", (uintptr_t)addr,
                  (uintptr_t)j->lo);
        if (size != j->size)
            failf(j, "pthread_getattr_np: another stack size", size, j->size);
        pthread_attr_destroy(&a);
    }
    unsigned sum = recurse(j, 100);
    char c;
    if (read(j->pipe_rd, &c, 1) != 1)
        failf(j, "pipe read failed", 0, 0);
    check_here(j, "after a pipe read");
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
    check_here(j, "after a sleep");
    sum += recurse(j, 50);
    return (void *)(uintptr_t)(sum | 1);
}

/* Runs THREADS threads on the stacks in `mem`; 0 if all passed. */
static int round_on(char **mem, int how, int round)
{
    pthread_t t[THREADS];
    struct job jobs[THREADS];
    int fds[THREADS][2];
    for (int i = 0; i < THREADS; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        if (pipe(fds[i]) != 0) {
            perror("pipe");
            return 1;
        }
        jobs[i].lo = mem[i];
        jobs[i].size = STACK_BYTES;
        jobs[i].pipe_rd = fds[i][0];
        pthread_attr_t a;
        pthread_attr_init(&a);
        int r;
        if (how == 0) {
            r = pthread_attr_setstack(&a, mem[i], STACK_BYTES);
        } else {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
            r = pthread_attr_setstackaddr(&a, mem[i] + STACK_BYTES);
#pragma GCC diagnostic pop
            if (r == 0)
                r = pthread_attr_setstacksize(&a, STACK_BYTES);
        }
        if (r == 0)
            r = pthread_create(&t[i], &a, body, &jobs[i]);
        pthread_attr_destroy(&a);
        if (r != 0) {
            fprintf(stderr, "setstack: round %d: pthread_create: %s\n", round, strerror(r));
            return 1;
        }
    }
    /* Let every thread park in its read first, then wake them. */
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
    for (int i = 0; i < THREADS; i++)
        if (write(fds[i][1], "x", 1) != 1)
            return 1;
    int bad = 0;
    for (int i = 0; i < THREADS; i++) {
        void *res = NULL;
        pthread_join(t[i], &res);
        close(fds[i][0]);
        close(fds[i][1]);
        if (res == NULL)
            jobs[i].failed = 1;
        if (jobs[i].failed) {
            fprintf(stderr, "setstack: round %d thread %d: %s\n", round, i, jobs[i].why);
            bad = 1;
        }
    }
    return bad;
}

static void *plain(void *arg)
{
    int local = 0;
    *(int *)arg = (int)(((uintptr_t)&local) & 1) + 41;
    return NULL;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    char *mem[THREADS];
    for (int i = 0; i < THREADS; i++) {
        mem[i] = mmap(NULL, STACK_BYTES, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (mem[i] == MAP_FAILED) {
            perror("mmap");
            return 1;
        }
    }
    for (int r = 0; r < rounds; r++)
        if (round_on(mem, r % 2, r))
            return 1;
    /* The memory is the program's: unmapping it after the join must not
     * upset the runtime (nothing of it is kept or reused). */
    for (int i = 0; i < THREADS; i++)
        munmap(mem[i], STACK_BYTES);
    /* malloc'd stacks, freed after the join. */
    for (int i = 0; i < THREADS; i++) {
        mem[i] = aligned_alloc(4096, STACK_BYTES);
        if (mem[i] == NULL)
            return 1;
    }
    if (round_on(mem, 0, rounds))
        return 1;
    for (int i = 0; i < THREADS; i++)
        free(mem[i]);
    /* A size alone: a stack of the runtime's, as before. */
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 128 * 1024);
    pthread_t t;
    int v = 0;
    if (pthread_create(&t, &a, plain, &v) != 0 || pthread_join(t, NULL) != 0 || v < 41) {
        fprintf(stderr, "setstack: a thread with a stack size alone failed\n");
        return 1;
    }
    pthread_attr_destroy(&a);
    /* Threads with the memory gone: new mappings may land where the old
     * stacks were; spawn a few more on the runtime's stacks. */
    for (int i = 0; i < 8; i++) {
        if (pthread_create(&t, NULL, plain, &v) != 0 || pthread_join(t, NULL) != 0)
            return 1;
    }
    printf("setstack: ok\n");
    return 0;
}
