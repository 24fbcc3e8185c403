/* Timed waits on objects only glibc may take (a named semaphore, a
 * process-shared semaphore, process-shared and robust mutexes, a
 * process-shared rwlock) that nobody releases in time, and signal handlers
 * that run during a semaphore wait: what CPython's multiprocessing does
 * (SemLock is a named semaphore waited for with sem_timedwait; a child's
 * os.kill(SIGINT) must end the parent's wait with EINTR).
 *
 * Every timed wait must end with ETIMEDOUT once its deadline passed, not
 * before it and not much later. A handler ends a semaphore wait with EINTR
 * as the kernel ends glibc's futex wait: always when the wait has a
 * timeout, only without SA_RESTART when it has none (checked natively).
 * A companion thread waits on a pipe for the whole run: under corun a
 * process's only coroutine makes glibc's blocking calls, as natively, and
 * the waits tested here are those of a coroutine that shares its process.
 * Output is the same natively and under corun; timings are reported as
 * "in time: yes/no", never as figures. Bounded: every wait is at most
 * 2 s long; the run, about 1 s. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS 60
/* How late a wait may end: generous, the machine may be loaded. */
#define LATE_MS 3000

struct shared {
    sem_t sem; /* process-shared */
    pthread_mutex_t pm; /* process-shared */
    pthread_mutex_t robust;
    pthread_rwlock_t rw; /* process-shared */
};

static struct shared *sh;
static sem_t *named;
static int to_holder[2], from_holder[2], to_companion[2];

static void *companion(void *arg)
{
    (void)arg;
    char c;
    if (read(to_companion[0], &c, 1) < 0)
        perror("companion");
    return NULL;
}

static long long mono_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

static struct timespec in_ms(clockid_t clk, long ms)
{
    struct timespec t;
    clock_gettime(clk, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

/* Takes the mutexes and the write lock, says so, and lets go when told. */
static void *holder(void *arg)
{
    (void)arg;
    char c = 0;
    pthread_mutex_lock(&sh->pm);
    pthread_mutex_lock(&sh->robust);
    pthread_rwlock_wrlock(&sh->rw);
    if (write(from_holder[1], &c, 1) != 1 || read(to_holder[0], &c, 1) != 1)
        perror("holder pipe");
    pthread_rwlock_unlock(&sh->rw);
    pthread_mutex_unlock(&sh->robust);
    pthread_mutex_unlock(&sh->pm);
    return NULL;
}

/* r: 0 or an errno value. */
static void report(const char *what, int r, long long t0, long min_ms)
{
    long long took = mono_ms() - t0;
    printf("%s: %s, in time: %s\n", what, r ? strerror(r) : "ok",
           took >= min_ms && took < min_ms + LATE_MS ? "yes" : "no");
    fflush(stdout);
}

static int sem_r(int r)
{
    return r ? errno : 0;
}

static void timeouts(void)
{
    struct timespec d;
    long long t0;

    d = in_ms(CLOCK_REALTIME, WAIT_MS);
    t0 = mono_ms();
    report("named sem_timedwait", sem_r(sem_timedwait(named, &d)), t0, WAIT_MS);

    d = in_ms(CLOCK_MONOTONIC, WAIT_MS);
    t0 = mono_ms();
    report("named sem_clockwait monotonic", sem_r(sem_clockwait(named, CLOCK_MONOTONIC, &d)), t0, WAIT_MS);

    d = in_ms(CLOCK_REALTIME, WAIT_MS);
    t0 = mono_ms();
    report("process-shared sem_timedwait", sem_r(sem_timedwait(&sh->sem, &d)), t0, WAIT_MS);

    /* A deadline already passed: the try still comes first. */
    d = in_ms(CLOCK_REALTIME, -1000);
    t0 = mono_ms();
    report("named sem_timedwait, deadline passed", sem_r(sem_timedwait(named, &d)), t0, 0);
    sem_post(named);
    t0 = mono_ms();
    report("named sem_timedwait, deadline passed, posted", sem_r(sem_timedwait(named, &d)), t0, 0);

    pthread_t h;
    char c = 0;
    pthread_create(&h, NULL, holder, NULL);
    if (read(from_holder[0], &c, 1) != 1)
        perror("read");
    d = in_ms(CLOCK_REALTIME, WAIT_MS);
    t0 = mono_ms();
    report("process-shared pthread_mutex_timedlock", pthread_mutex_timedlock(&sh->pm, &d), t0, WAIT_MS);
    d = in_ms(CLOCK_REALTIME, WAIT_MS);
    t0 = mono_ms();
    report("robust pthread_mutex_timedlock", pthread_mutex_timedlock(&sh->robust, &d), t0, WAIT_MS);
    d = in_ms(CLOCK_MONOTONIC, WAIT_MS);
    t0 = mono_ms();
    report("robust pthread_mutex_clocklock monotonic",
           pthread_mutex_clocklock(&sh->robust, CLOCK_MONOTONIC, &d), t0, WAIT_MS);
    d = in_ms(CLOCK_REALTIME, WAIT_MS);
    t0 = mono_ms();
    report("process-shared pthread_rwlock_timedrdlock", pthread_rwlock_timedrdlock(&sh->rw, &d), t0, WAIT_MS);
    d = in_ms(CLOCK_REALTIME, WAIT_MS);
    t0 = mono_ms();
    report("process-shared pthread_rwlock_timedwrlock", pthread_rwlock_timedwrlock(&sh->rw, &d), t0, WAIT_MS);
    if (write(to_holder[1], &c, 1) != 1)
        perror("write");
    pthread_join(h, NULL);
}

static volatile sig_atomic_t handled;
static atomic_int returned, post_at_once;
static void on_alarm(int sig)
{
    (void)sig;
    handled++;
}

#define SIGNAL_MS 30

/* Posts `arg` once the handler ran and, where the wait is to end with
 * EINTR (natively), once it did (5 s at most each): a post that came
 * first would end the wait with success wherever the waiter is slow to
 * resume. SIGALRM is blocked here, so the timer's signal goes to the
 * waiter. */
static void *post_later(void *arg)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &s, NULL);
    for (int i = 0; !handled && i < 5000; i++)
        usleep(1000);
    for (int i = 0; !post_at_once && !atomic_load(&returned) && i < 5000; i++)
        usleep(1000);
    usleep(20000);
    sem_post(arg);
    return NULL;
}

/* A SIGALRM (SIGNAL_MS after the start) while the caller waits for `s`,
 * which another thread posts after the handler ran. */
static void interrupted(const char *what, sem_t *s)
{
    for (int restart = 0; restart < 2; restart++)
        for (int timed = 0; timed < 2; timed++) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = on_alarm;
            sa.sa_flags = restart ? SA_RESTART : 0;
            sigaction(SIGALRM, &sa, NULL);
            handled = 0;
            atomic_store(&returned, 0);
            /* The kernel restarts only an untimed wait, and only after a
             * handler with SA_RESTART: there the post ends the wait. */
            post_at_once = restart && !timed;
            pthread_t p;
            pthread_create(&p, NULL, post_later, s);
            struct itimerval it = {{0, 0}, {0, SIGNAL_MS * 1000}};
            setitimer(ITIMER_REAL, &it, NULL);
            struct timespec d = in_ms(CLOCK_REALTIME, 2000);
            long long t0 = mono_ms();
            int r = sem_r(timed ? sem_timedwait(s, &d) : sem_wait(s));
            atomic_store(&returned, 1);
            char line[160];
            snprintf(line, sizeof line, "%s %s, handler %s SA_RESTART (ran %d)", what,
                     timed ? "sem_timedwait" : "sem_wait", restart ? "with" : "without", (int)handled);
            report(line, r, t0, SIGNAL_MS);
            pthread_join(p, NULL);
            while (sem_trywait(s) == 0)
                ;
        }
}

int main(void)
{
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED || pipe(to_holder) || pipe(from_holder) || pipe(to_companion)) {
        perror("setup");
        return 1;
    }
    char name[64];
    snprintf(name, sizeof name, "/corun_pshared_timeout_%d", (int)getpid());
    named = sem_open(name, O_CREAT | O_EXCL, 0600, 0);
    if (named == SEM_FAILED) {
        perror("sem_open");
        return 1;
    }
    sem_unlink(name);
    sem_init(&sh->sem, 1, 0);
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&sh->pm, &ma);
    pthread_mutexattr_destroy(&ma);
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&sh->robust, &ma);
    pthread_mutexattr_destroy(&ma);
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setpshared(&ra, PTHREAD_PROCESS_SHARED);
    pthread_rwlock_init(&sh->rw, &ra);
    pthread_rwlockattr_destroy(&ra);

    pthread_t comp;
    pthread_create(&comp, NULL, companion, NULL);
    timeouts();
    /* A process-shared semaphore takes the named one's path. */
    interrupted("named", named);
    static sem_t private_sem;
    sem_init(&private_sem, 0, 0);
    interrupted("private", &private_sem);
    close(to_companion[1]);
    pthread_join(comp, NULL);
    printf("done\n");
    return 0;
}
