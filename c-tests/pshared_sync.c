/* Objects only glibc may take (process-shared and robust mutexes,
 * process-shared rwlocks, named and process-shared semaphores,
 * process-shared condition variables and barriers) waited for
 * by threads whose holder sleeps meanwhile: natively the waiter sleeps in
 * the kernel; under corun with one worker, a waiter that blocked its
 * worker would never let the holder wake up (deadlock). Two processes
 * share a named semaphore and a process-shared mutex, then hand a turn
 * back and forth through a process-shared condition variable and meet at
 * a process-shared barrier. A ticker thread
 * shows whether the waits let others run. Output is the same natively and
 * under corun. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct shared {
    pthread_mutex_t pm;     /* process-shared */
    pthread_mutex_t robust; /* robust */
    pthread_rwlock_t rw;    /* process-shared */
    sem_t sem;              /* process-shared */
    long counter;
    pthread_cond_t cond;    /* process-shared, with pm */
    pthread_barrier_t bar;  /* process-shared, 2 threads: one per process */
    int turn;               /* whose turn it is, under pm: 0 parent, 1 child */
    int serial;             /* barrier rounds a thread was the serial one */
    int ticks;              /* the parent's ticker count, for the child to see */
    int phase;              /* the parent's cross-process waits begun so far */
    int phase_t0;           /* `ticks` when the latest of them began */
};

static struct shared *sh;
static volatile int ticks, stop_ticker;
/* The hand-shake of `contend`: a holder sets `holding` once it holds its
 * object (post_later: once it runs), the waiter sets `waiting` just before
 * it waits, and the holder lets go only once the ticker has ticked a few
 * times after that (2 s at most). Fixed sleeps (10 ms head start, 40 ms
 * hold) failed natively and under corun at load 13-20, where a 1 ms sleep
 * can take 20 ms: the wait found the mutex free, or was over before the
 * ticker ran. */
static volatile int holding, waiting;

static void hold_until_waited(void)
{
    holding = 1;
    for (int i = 0; !waiting && i < 10000; i++) /* bounded: 10 s */
        usleep(1000);
    int t = ticks;
    for (int i = 0; ticks - t < 5 && i < 1000; i++) /* bounded: 2 s */
        usleep(2000);
}

static void *ticker(void *arg)
{
    (void)arg;
    while (!stop_ticker) {
        ticks++;
        __atomic_store_n(&sh->ticks, ticks, __ATOMIC_RELAXED);
        usleep(2000);
    }
    return NULL;
}

/* The cross-process hand-shake: the parent calls begin_phase(n) just
 * before its waits for the child; the child calls await_phase(n) before
 * the step that ends the parent's first wait, and so goes on only once
 * the parent waits and its ticker has ticked 5 times since (2 s at most).
 * Fixed sleeps alone (50-80 ms) left a loaded machine's native ticker
 * fewer than the 3 ticks each check asks for. A wait that held the
 * parent's worker stops the ticker: the child then goes on after 2 s and
 * the parent prints "no". */
static void begin_phase(int n)
{
    sh->phase_t0 = ticks;
    __atomic_store_n(&sh->phase, n, __ATOMIC_RELEASE);
}

static void await_phase(int n)
{
    for (int i = 0; __atomic_load_n(&sh->phase, __ATOMIC_ACQUIRE) < n && i < 10000; i++)
        usleep(1000); /* bounded: 10 s */
    for (int i = 0; __atomic_load_n(&sh->ticks, __ATOMIC_RELAXED) - sh->phase_t0 < 5 && i < 1000; i++)
        usleep(2000); /* bounded: 2 s */
}

static void *hold_mutex(void *m)
{
    pthread_mutex_lock(m);
    hold_until_waited();
    sh->counter++;
    pthread_mutex_unlock(m);
    return NULL;
}

static void *hold_rw(void *arg)
{
    (void)arg;
    pthread_rwlock_wrlock(&sh->rw);
    hold_until_waited();
    sh->counter++;
    pthread_rwlock_unlock(&sh->rw);
    return NULL;
}

static void *post_later(void *arg)
{
    (void)arg;
    hold_until_waited();
    sem_post(&sh->sem);
    return NULL;
}

/* Starts `holder`, lets it take the object, then waits for it with
 * `wait`; reports whether the ticker ran meanwhile. */
static void contend(const char *what, void *(*holder)(void *), void *arg, int (*wait)(void))
{
    pthread_t h;
    holding = waiting = 0;
    pthread_create(&h, NULL, holder, arg);
    for (int i = 0; !holding && i < 10000; i++) /* bounded: 10 s */
        usleep(1000);
    int t0 = ticks;
    waiting = 1;
    int r = wait();
    int ran = ticks - t0 > 2;
    pthread_join(h, NULL);
    printf("%s: %s, others ran meanwhile: %s\n", what, r == 0 ? "ok" : strerror(r), ran ? "yes" : "no");
}

static int lock_pm(void)
{
    int r = pthread_mutex_lock(&sh->pm);
    return r ? r : pthread_mutex_unlock(&sh->pm);
}

static int timedlock_pm(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 5;
    int r = pthread_mutex_timedlock(&sh->pm, &ts);
    return r ? r : pthread_mutex_unlock(&sh->pm);
}

static int lock_robust(void)
{
    int r = pthread_mutex_lock(&sh->robust);
    return r ? r : pthread_mutex_unlock(&sh->robust);
}

static int rdlock_rw(void)
{
    int r = pthread_rwlock_rdlock(&sh->rw);
    return r ? r : pthread_rwlock_unlock(&sh->rw);
}

static int wait_sem(void)
{
    return sem_wait(&sh->sem) == 0 ? 0 : errno;
}

static int timedwait_cond(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 200000000; /* long enough for a few ticks at load 20 */
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&sh->pm);
    int r = pthread_cond_timedwait(&sh->cond, &sh->pm, &ts);
    /* The mutex is held again, whatever the result. */
    int held = pthread_mutex_trylock(&sh->pm) == EBUSY;
    pthread_mutex_unlock(&sh->pm);
    return r == ETIMEDOUT && held ? 0 : r ? r : EINVAL;
}

/* Waits (cond var) for `me`'s turn, then gives the turn to the other side. */
static void take_turn(int me)
{
    pthread_mutex_lock(&sh->pm);
    while (sh->turn != me)
        pthread_cond_wait(&sh->cond, &sh->pm);
    sh->counter++;
    sh->turn = !me;
    pthread_cond_broadcast(&sh->cond);
    pthread_mutex_unlock(&sh->pm);
}

#define ROUNDS 5

/* Two processes hand a turn back and forth through the process-shared
 * condition variable, then meet at the process-shared barrier ROUNDS
 * times; the child sleeps before each step so the parent waits. The
 * parent's ticker must run through it all. */
static void cond_and_barrier_across_processes(void)
{
    sh->turn = 1;
    sh->counter = 0;
    sh->serial = 0;
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        await_phase(1);
        for (int i = 0; i < ROUNDS; i++) {
            usleep(10000);
            take_turn(1);
        }
        await_phase(2);
        for (int i = 0; i < ROUNDS; i++) {
            usleep(10000);
            if (pthread_barrier_wait(&sh->bar) == PTHREAD_BARRIER_SERIAL_THREAD)
                __atomic_fetch_add(&sh->serial, 1, __ATOMIC_SEQ_CST);
        }
        _exit(0);
    }
    int t0 = ticks;
    begin_phase(1);
    for (int i = 0; i < ROUNDS; i++)
        take_turn(0);
    int t1 = ticks;
    begin_phase(2);
    int passed = 0;
    for (int i = 0; i < ROUNDS; i++) {
        int r = pthread_barrier_wait(&sh->bar);
        passed += r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD;
        if (r == PTHREAD_BARRIER_SERIAL_THREAD)
            __atomic_fetch_add(&sh->serial, 1, __ATOMIC_SEQ_CST);
    }
    int t2 = ticks;
    int st;
    waitpid(child, &st, 0);
    printf("process-shared condition variable across processes: %ld turns, others ran meanwhile: %s\n",
           sh->counter, t1 - t0 > 2 ? "yes" : "no");
    printf("process-shared barrier across processes: %d rounds passed, %d serial, child %s, others ran "
           "meanwhile: %s\n",
           passed, __atomic_load_n(&sh->serial, __ATOMIC_SEQ_CST),
           WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "ok" : "FAILED", t2 - t1 > 2 ? "yes" : "no");
}

int main(void)
{
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        return 1;
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&sh->pm, &ma);
    pthread_mutexattr_t ra;
    pthread_mutexattr_init(&ra);
    pthread_mutexattr_setrobust(&ra, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&sh->robust, &ra);
    pthread_rwlockattr_t wa;
    pthread_rwlockattr_init(&wa);
    pthread_rwlockattr_setpshared(&wa, PTHREAD_PROCESS_SHARED);
    pthread_rwlock_init(&sh->rw, &wa);
    sem_init(&sh->sem, 1, 0);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
    pthread_cond_init(&sh->cond, &ca);
    pthread_barrierattr_t ba;
    pthread_barrierattr_init(&ba);
    pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&sh->bar, &ba, 2);

    pthread_t tk;
    pthread_create(&tk, NULL, ticker, NULL);
    /* The ticker runs before the first wait is measured (bounded: 10 s). */
    for (int i = 0; i < 10000 && ticks == 0; i++)
        usleep(1000);
    contend("process-shared mutex", hold_mutex, &sh->pm, lock_pm);
    contend("process-shared mutex, timed", hold_mutex, &sh->pm, timedlock_pm);
    contend("robust mutex", hold_mutex, &sh->robust, lock_robust);
    contend("process-shared rwlock", hold_rw, NULL, rdlock_rw);
    contend("process-shared semaphore", post_later, NULL, wait_sem);
    contend("process-shared condition variable, timed out", post_later, NULL, timedwait_cond);
    sem_wait(&sh->sem);
    cond_and_barrier_across_processes();

    /* Two processes: a named semaphore posted by the child 5 times, and
     * the process-shared mutex held by the child across a sleep. */
    char name[64];
    snprintf(name, sizeof name, "/corun-pshared-%d", (int)getpid());
    sem_t *named = sem_open(name, O_CREAT | O_EXCL, 0600, 0);
    if (named == SEM_FAILED) {
        perror("sem_open");
        return 1;
    }
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        pthread_mutex_lock(&sh->pm);
        await_phase(3);
        for (int i = 0; i < 5; i++) {
            usleep(10000);
            sem_post(named);
        }
        usleep(30000);
        sh->counter += 100;
        pthread_mutex_unlock(&sh->pm);
        _exit(0);
    }
    int t0 = ticks, got = 0;
    begin_phase(3);
    for (int i = 0; i < 5; i++)
        got += sem_wait(named) == 0;
    pthread_mutex_lock(&sh->pm);
    long c = sh->counter;
    pthread_mutex_unlock(&sh->pm);
    int st;
    waitpid(child, &st, 0);
    printf("named semaphore across processes: %d posts received; mutex after the child: counter %ld; "
           "others ran meanwhile: %s\n",
           got, c, ticks - t0 > 2 ? "yes" : "no");
    sem_close(named);
    sem_unlink(name);
    stop_ticker = 1;
    pthread_join(tk, NULL);
    return 0;
}
