/* Objects only glibc may take (process-shared and robust mutexes,
 * process-shared rwlocks, named and process-shared semaphores) waited for
 * by threads whose holder sleeps meanwhile: natively the waiter sleeps in
 * the kernel; under corun with one worker, a waiter that blocked its
 * worker would never let the holder wake up (deadlock). Two processes
 * share a named semaphore and a process-shared mutex. A ticker thread
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
};

static struct shared *sh;
static volatile int ticks, stop_ticker;

static void *ticker(void *arg)
{
    (void)arg;
    while (!stop_ticker) {
        ticks++;
        usleep(2000);
    }
    return NULL;
}

static void *hold_mutex(void *m)
{
    pthread_mutex_lock(m);
    usleep(40000);
    sh->counter++;
    pthread_mutex_unlock(m);
    return NULL;
}

static void *hold_rw(void *arg)
{
    (void)arg;
    pthread_rwlock_wrlock(&sh->rw);
    usleep(40000);
    sh->counter++;
    pthread_rwlock_unlock(&sh->rw);
    return NULL;
}

static void *post_later(void *arg)
{
    (void)arg;
    usleep(40000);
    sem_post(&sh->sem);
    return NULL;
}

/* Starts `holder`, lets it take the object, then waits for it with
 * `wait`; reports whether the ticker ran meanwhile. */
static void contend(const char *what, void *(*holder)(void *), void *arg, int (*wait)(void))
{
    pthread_t h;
    pthread_create(&h, NULL, holder, arg);
    usleep(10000);
    int t0 = ticks;
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

    pthread_t tk;
    pthread_create(&tk, NULL, ticker, NULL);
    contend("process-shared mutex", hold_mutex, &sh->pm, lock_pm);
    contend("process-shared mutex, timed", hold_mutex, &sh->pm, timedlock_pm);
    contend("robust mutex", hold_mutex, &sh->robust, lock_robust);
    contend("process-shared rwlock", hold_rw, NULL, rdlock_rw);
    contend("process-shared semaphore", post_later, NULL, wait_sem);

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
