/* Robust mutexes whose owner died. POSIX: the next locker gets EOWNERDEAD
 * (and may mark the mutex consistent); Linux does it by walking, when a
 * thread exits, the list of robust mutexes it holds (set_robust_list).
 *
 * 1. A thread locks a robust mutex and returns without unlocking it; main
 *    then locks it (a timed lock, 2 s).
 * 2. The same with two robust mutexes held by one thread, one of them
 *    recursive; main marks each consistent and uses it again.
 * 3. A forked child's thread locks a process-shared robust mutex and
 *    returns, then the child exits; the parent locks it.
 *
 * Natively every lock returns EOWNERDEAD. Under corun each thread is a
 * coroutine with a glibc descriptor of its own, whose robust list the
 * kernel does not know: the mutexes stayed locked by the worker's tid and
 * the timed locks ended with ETIMEDOUT (ctx/robust.rs now walks the list
 * when the coroutine ends). Not covered, so not here: a process that dies
 * while one of its coroutines holds one (README, Known limits). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t *m1, *m2, *shm;

static void init_robust(pthread_mutex_t *m, int pshared, int type)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutexattr_settype(&a, type);
    if (pshared)
        pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(m, &a);
    pthread_mutexattr_destroy(&a);
}

static const char *name(int r)
{
    switch (r) {
    case 0: return "0";
    case EOWNERDEAD: return "EOWNERDEAD";
    case ETIMEDOUT: return "ETIMEDOUT";
    case ENOTRECOVERABLE: return "ENOTRECOVERABLE";
    default: return strerror(r);
    }
}

/* A timed lock of 2 s; on EOWNERDEAD, marks it consistent, unlocks it and
 * locks it once more (which must then succeed at once). */
static void take(const char *what, pthread_mutex_t *m)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 2;
    int r = pthread_mutex_timedlock(m, &ts);
    printf("%s: lock %s", what, name(r));
    if (r == EOWNERDEAD) {
        int c = pthread_mutex_consistent(m);
        int u = pthread_mutex_unlock(m);
        int again = pthread_mutex_trylock(m);
        printf(", consistent %s, unlock %s, relock %s", name(c), name(u), name(again));
        if (again == 0)
            pthread_mutex_unlock(m);
    } else if (r == 0) {
        pthread_mutex_unlock(m);
    }
    printf("\n");
    fflush(stdout);
}

static void *lock_one(void *arg)
{
    pthread_mutex_lock(arg);
    return NULL;
}

static void *lock_two(void *arg)
{
    (void)arg;
    pthread_mutex_lock(m1);
    pthread_mutex_lock(m2);
    pthread_mutex_lock(m2); /* recursive: held twice */
    return NULL;
}

static void child(void)
{
    pid_t p = fork();
    if (p == 0) {
        pthread_t t;
        pthread_create(&t, NULL, lock_one, shm);
        pthread_join(t, NULL);
        exit(0);
    }
    int st;
    waitpid(p, &st, 0);
    printf("child exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

int main(void)
{
    static pthread_mutex_t a, b;
    m1 = &a;
    m2 = &b;
    shm = mmap(NULL, sizeof *shm, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shm == MAP_FAILED)
        return 1;
    pthread_t t;

    init_robust(m1, 0, PTHREAD_MUTEX_NORMAL);
    pthread_create(&t, NULL, lock_one, m1);
    pthread_join(t, NULL);
    take("thread returned holding it", m1);

    init_robust(m1, 0, PTHREAD_MUTEX_ERRORCHECK);
    init_robust(m2, 0, PTHREAD_MUTEX_RECURSIVE);
    pthread_create(&t, NULL, lock_two, NULL);
    pthread_join(t, NULL);
    take("two held, first", m1);
    take("two held, recursive", m2);

    init_robust(shm, 1, PTHREAD_MUTEX_NORMAL);
    child();
    take("child's thread held it, child exited", shm);
    return 0;
}
