// A POSIX timer with SIGEV_THREAD_ID aimed at another thread's gettid()
// signals that thread: its handler runs there with SI_TIMER and the
// timer's value. NOT FIXED: under corun a thread's tid is corun's (2^26 +
// task id) and timer_create passes it to the kernel, which fails with
// EINVAL.
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static __thread int idx;
static volatile sig_atomic_t h_idx = -1, h_code, h_val;
static sem_t got, ready, done;
static pid_t tid1;

static void on_sig(int s, siginfo_t *si, void *uc) {
    (void)s;
    (void)uc;
    h_idx = idx;
    h_code = si->si_code;
    h_val = si->si_value.sival_int;
    sem_post(&got);
}

static void *thr(void *a) {
    (void)a;
    idx = 1;
    tid1 = gettid();
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGRTMIN);
    pthread_sigmask(SIG_UNBLOCK, &s, NULL);
    sem_post(&ready);
    while (sem_wait(&done) != 0 && errno == EINTR)
        ;
    return NULL;
}

int main(void) {
    sem_init(&got, 0, 0);
    sem_init(&ready, 0, 0);
    sem_init(&done, 0, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sig;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGRTMIN, &sa, NULL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGRTMIN);
    pthread_sigmask(SIG_BLOCK, &s, NULL);
    pthread_t t;
    pthread_create(&t, NULL, thr, NULL);
    sem_wait(&ready);
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = SIGRTMIN;
    ev.sigev_value.sival_int = 42;
    ev._sigev_un._tid = tid1;
    timer_t tm;
    if (timer_create(CLOCK_MONOTONIC, &ev, &tm)) {
        printf("timer_create: %s\n", strerror(errno));
    } else {
        struct itimerspec its = {{0, 0}, {0, 20000000}};
        printf("timer_settime: %d\n", timer_settime(tm, 0, &its, NULL));
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 5;
        int r;
        while ((r = sem_timedwait(&got, &ts)) != 0 && errno == EINTR)
            ;
        printf("signal: %s in thread %d code %s value %d\n", r ? "none" : "taken", (int)h_idx,
               h_code == SI_TIMER ? "SI_TIMER" : "other", (int)h_val);
        timer_delete(tm);
    }
    sem_post(&done);
    pthread_join(t, NULL);
    return 0;
}
