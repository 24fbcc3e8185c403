/*
 * cancel_sigwait - pthread_cancel of a thread waiting for a signal.
 * `pause`, `sigsuspend`, `sigwait`, `sigwaitinfo` and `sigtimedwait` are
 * cancellation points (POSIX, and glibc makes each one): a thread waiting
 * in one for a signal that never comes is cancelled, runs its cleanup
 * handler, and its join gives PTHREAD_CANCELED.
 *
 * One thread per call (deferred cancellation), plus `pause` with
 * asynchronous cancellation and `sigsuspend` with a request that was
 * already pending when the call began. Each thread tells main it is about
 * to wait; main sleeps a little and cancels it: whether the request comes
 * before or during the call, the call is where it acts. A join that has
 * not returned after 10 s is reported as a failure (the thread still
 * waits) and the program exits 1. Identical natively and under corun.
 *
 * The cleanup handler notes whether SIGUSR2 is blocked: `sigsuspend`'s
 * mask blocks it, the thread's own mask does not. Natively a request that
 * comes while `sigsuspend` waits acts with the mask it waits with (glibc
 * unwinds from its cancellation signal's handler, which interrupted the
 * kernel's sigsuspend), and one already pending when it begins acts with
 * the thread's own mask.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum kind { PAUSE, SIGSUSPEND, SIGWAIT, SIGWAITINFO, SIGTIMEDWAIT, PAUSE_ASYNC, SUSPEND_PENDING, NKINDS };
static const char *names[NKINDS] = {"pause", "sigsuspend", "sigwait", "sigwaitinfo", "sigtimedwait",
                                    "pause (asynchronous)", "sigsuspend (request pending)"};

static sem_t ready;
static volatile int cleaned[NKINDS];
static volatile int returned[NKINDS];
static volatile int usr2_blocked[NKINDS];

static void cleanup(void *arg)
{
    sigset_t now;
    pthread_sigmask(SIG_BLOCK, NULL, &now);
    usr2_blocked[(long)arg] = sigismember(&now, SIGUSR2);
    cleaned[(long)arg] = 1;
}

static void *waiter(void *arg)
{
    long k = (long)arg;
    sigset_t set, suspend_mask;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    suspend_mask = set;
    sigaddset(&suspend_mask, SIGUSR2);
    struct timespec ts = {60, 0};
    int sig;
    pthread_cleanup_push(cleanup, arg);
    if (k == PAUSE_ASYNC)
        pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
    if (k == SUSPEND_PENDING) {
        /* The request comes while cancellation is disabled; the wait
         * begins after it is enabled again. */
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
        sem_post(&ready);
        while (1) {
            struct timespec d = {0, 300 * 1000 * 1000};
            /* A cancellation point, but cancellation is disabled. */
            nanosleep(&d, NULL);
            break;
        }
        pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
    } else {
        sem_post(&ready);
    }
    switch (k) {
    case PAUSE:
    case PAUSE_ASYNC:
        pause();
        break;
    case SIGSUSPEND:
    case SUSPEND_PENDING:
        /* SIGUSR1 stays blocked: sigsuspend's mask blocks it too, and
         * SIGUSR2 (never sent) while it waits. */
        sigsuspend(&suspend_mask);
        break;
    case SIGWAIT:
        sigwait(&set, &sig);
        break;
    case SIGWAITINFO:
        sigwaitinfo(&set, NULL);
        break;
    case SIGTIMEDWAIT:
        sigtimedwait(&set, NULL, &ts);
        break;
    }
    returned[k] = 1;
    pthread_cleanup_pop(0);
    return NULL;
}

int main(void)
{
    int failures = 0;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    /* Every thread inherits the mask: SIGUSR1 (never sent) stays blocked. */
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    sem_init(&ready, 0, 0);
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (long k = 0; k < NKINDS; k++) {
        pthread_t t;
        if (pthread_create(&t, NULL, waiter, (void *)k) != 0) {
            printf("FAIL: %s: pthread_create\n", names[k]);
            return 1;
        }
        sem_wait(&ready);
        struct timespec d = {0, 100 * 1000 * 1000};
        nanosleep(&d, NULL);
        pthread_cancel(t);
        struct timespec limit;
        clock_gettime(CLOCK_REALTIME, &limit);
        limit.tv_sec += 10;
        void *res = NULL;
        int r = pthread_timedjoin_np(t, &res, &limit);
        if (r == ETIMEDOUT) {
            printf("FAIL: %s: the thread was not cancelled within 10 s\n", names[k]);
            fflush(stdout);
            _exit(1);
        }
        int ok = r == 0 && res == PTHREAD_CANCELED && cleaned[k] && !returned[k];
        printf("%s: %s: join %s, result %s, cleanup %s%s\n", ok ? "ok" : "FAIL", names[k], r ? strerror(r) : "0",
               res == PTHREAD_CANCELED ? "PTHREAD_CANCELED" : "not cancelled", cleaned[k] ? "ran" : "did not run",
               k == SIGSUSPEND || k == SUSPEND_PENDING
                   ? (usr2_blocked[k] == 1 ? " with sigsuspend's mask" : " with the thread's own mask")
                   : "");
        if (!ok)
            failures++;
    }
    if (failures)
        return 1;
    printf("cancel_sigwait: all checks passed\n");
    return 0;
}
