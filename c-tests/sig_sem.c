/*
 * sig_sem [ROUNDS]: sem_post from a signal handler (it is async-signal-
 * safe) wakes a thread waiting in sem_wait. A 20 us interval timer posts;
 * main takes ROUNDS (default 100,000) posts, retrying sem_wait when it
 * fails with EINTR (no SA_RESTART), while a second thread waits on a
 * condition variable that main signals every 1,000 rounds. Prints the
 * rounds taken and whether every failure was EINTR.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static sem_t sem;
static void on_alarm(int s)
{
    (void)s;
    int e = errno;
    sem_post(&sem);
    errno = e;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long gen, seen;
static int done;

static void *follower(void *a)
{
    (void)a;
    pthread_mutex_lock(&mu);
    while (!done) {
        while (seen == gen && !done)
            pthread_cond_wait(&cv, &mu);
        seen = gen;
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 100000;
    sem_init(&sem, 0, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    sigset_t al;
    sigemptyset(&al);
    sigaddset(&al, SIGALRM);
    /* The follower does not take SIGALRM: main does. */
    pthread_sigmask(SIG_BLOCK, &al, NULL);
    pthread_t f;
    pthread_create(&f, NULL, follower, NULL);
    pthread_sigmask(SIG_UNBLOCK, &al, NULL);

    struct itimerval it = {{0, 20}, {0, 20}};
    setitimer(ITIMER_REAL, &it, NULL);
    long other = 0;
    for (long i = 0; i < rounds; i++) {
        while (sem_wait(&sem) != 0)
            if (errno != EINTR)
                other++;
        if (i % 1000 == 999) {
            pthread_mutex_lock(&mu);
            gen++;
            pthread_cond_signal(&cv);
            pthread_mutex_unlock(&mu);
        }
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    pthread_mutex_lock(&mu);
    done = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(f, NULL);
    printf("sem_post from a 20 us timer handler: %ld rounds taken, failures other than EINTR: %ld\n", rounds, other);
    return other != 0;
}
