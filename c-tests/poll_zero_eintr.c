/* poll_zero_eintr - zero-timeout poll/ppoll/select/pselect never fail with
 * EINTR when no signal of the program's came (scripts/tests/poll_zero_eintr.sh).
 *
 * A program that installs no handler and sends itself no signal cannot see
 * EINTR from a call that does not wait. Under corun the preemption monitor
 * sends SIGURG to a worker whose coroutine has run past its slice, or
 * past 1 ms while a timer of that worker is due; the kernel fails a poll
 * or select it lands in with EINTR, zero timeout or not, SA_RESTART or
 * not. A ticker thread (1 ms sleeps: a timer is always due soon) and main
 * calling the four waits with a zero timeout on an empty pipe, 250 ms
 * each, make that happen often on one worker: with corun's library
 * before the fix, 3-52 EINTRs per call kind in its 250 ms.
 *
 * stdout, compared with the native run: per call kind, whether every
 * call returned 0 ("0 EINTR, no other error") or what went wrong.
 * stderr: how many calls were made.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;

static void *ticker(void *arg)
{
    (void)arg;
    while (!stop)
        usleep(1000);
    return NULL;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int fd;

static int call(int kind)
{
    struct pollfd pf = {fd, POLLIN, 0};
    struct timespec ts = {0, 0};
    struct timeval tv = {0, 0};
    fd_set rs;
    FD_ZERO(&rs);
    FD_SET(fd, &rs);
    sigset_t none;
    sigemptyset(&none);
    switch (kind) {
    case 0: return poll(&pf, 1, 0);
    case 1: return ppoll(&pf, 1, &ts, NULL);
    case 2: return select(fd + 1, &rs, NULL, NULL, &tv);
    default: return pselect(fd + 1, &rs, NULL, NULL, &ts, &none);
    }
}

int main(void)
{
    static const char *names[] = {"poll", "ppoll", "select", "pselect"};
    int p[2];
    if (pipe(p))
        return 1;
    fd = p[0];
    pthread_t t;
    pthread_create(&t, NULL, ticker, NULL);
    for (int kind = 0; kind < 4; kind++) {
        long calls = 0, eintr = 0, other = 0, ready = 0;
        double t0 = now();
        while (now() - t0 < 0.25) {
            int r = call(kind);
            calls++;
            if (r < 0 && errno == EINTR)
                eintr++;
            else if (r < 0)
                other++;
            else if (r > 0)
                ready++;
        }
        if (eintr == 0 && other == 0 && ready == 0)
            printf("%s: 0 EINTR, no other error\n", names[kind]);
        else
            printf("%s: %ld EINTR, %ld other errors, %ld ready\n", names[kind], eintr, other, ready);
        fprintf(stderr, "%s: %ld calls\n", names[kind], calls);
    }
    stop = 1;
    pthread_join(t, NULL);
    return 0;
}
