/*
 * handler_blocks.c - a signal handler that runs while its thread waits in
 * an interruptible call (ppoll) and that itself blocks: it cancels and
 * joins a thread parked in pthread_cond_wait, as Redis's crash handler
 * does (sigsegvHandler -> bioKillThreads: pthread_cancel, pthread_join of
 * each background thread), here of 8 threads (some on the handler's own
 * worker under corun). Each join must wait for its thread's end, and after the handler the interrupted ppoll fails with EINTR.
 *
 * The signal is made pending while blocked, then ppoll unblocks it: it is
 * delivered inside the ppoll every time, natively and under corun.
 * Prints one line per step; the test requires the same output natively
 * and under corun (and a bounded run: the join spun for ever before).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static pthread_cond_t started = PTHREAD_COND_INITIALIZER;
#define WAITERS 8
static int waiting;
static pthread_t waiter[WAITERS];
static volatile sig_atomic_t joined, cancelled, handler_done;

static void unlock(void *m)
{
    pthread_mutex_unlock(m);
}

static void *wait_for_ever(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    waiting++;
    pthread_cond_signal(&started);
    pthread_cleanup_push(unlock, &lock);
    for (;;)
        pthread_cond_wait(&never, &lock);
    pthread_cleanup_pop(1);
    return NULL;
}

static void on_usr1(int sig)
{
    (void)sig;
    for (int i = 0; i < WAITERS; i++) {
        void *ret = NULL;
        if (pthread_cancel(waiter[i]) == 0 && pthread_join(waiter[i], &ret) == 0) {
            joined++;
            cancelled += ret == PTHREAD_CANCELED;
        }
    }
    handler_done = 1;
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, NULL) != 0) {
        perror("sigaction");
        return 1;
    }
    for (int i = 0; i < WAITERS; i++)
        if (pthread_create(&waiter[i], NULL, wait_for_ever, NULL) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            return 1;
        }
    pthread_mutex_lock(&lock);
    while (waiting < WAITERS)
        pthread_cond_wait(&started, &lock);
    pthread_mutex_unlock(&lock);
    printf("%d waiters wait in pthread_cond_wait\n", WAITERS);

    sigset_t usr1, open;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &usr1, &open);
    sigdelset(&open, SIGUSR1);
    raise(SIGUSR1); /* to this thread: pending, blocked */

    int fds[2];
    if (pipe(fds) != 0) {
        perror("pipe");
        return 1;
    }
    struct pollfd p = {.fd = fds[0], .events = POLLIN};
    /* Nothing is ever written: only the signal ends the wait (30 s: a
     * bound, never reached natively). */
    struct timespec bound = {.tv_sec = 30};
    int rc = ppoll(&p, 1, &bound, &open);
    int e = errno;
    printf("ppoll: %d (%s)\n", rc, rc < 0 ? strerror(e) : "no error");
    printf("handler ran: %d\n", (int)handler_done);
    printf("joined in the handler: %d, cancelled: %d\n", (int)joined, (int)cancelled);
    return rc == -1 && e == EINTR && handler_done && joined == WAITERS && cancelled == WAITERS ? 0 : 1;
}
