/* Loops of poll/ppoll/select that get an answer at once, waiting for
 * another thread: the descriptor stays ready until that thread reads it.
 * CPython's multiprocessing.Pool does this (its worker-handler thread
 * waits on the result pipe, readable until the result-handler thread
 * reads it, then polls another pipe with a zero timeout, in a loop).
 * Natively the kernel preempts the looping thread and the reader runs.
 * Under corun, with the reader homed on the looping thread's worker, the
 * loop never parked and the reader never ran: Pool.map hung. Each round
 * gives up after 10 s and says so instead of hanging. */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

static int fds[2];
static volatile int drained;

static void *drainer(void *arg)
{
    (void)arg;
    char c;
    if (read(fds[0], &c, 1) == 1)
        drained = 1;
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One poll of the read end in the way `how` names: 1 if readable. */
static int ready(const char *how)
{
    struct pollfd p = {.fd = fds[0], .events = POLLIN};
    if (how[0] == 'p' && how[1] == 'o' && how[4] == '0') /* poll0 */
        return poll(&p, 1, 0) == 1;
    if (how[0] == 'p' && how[1] == 'o') /* poll: 50 ms, returns at once while readable */
        return poll(&p, 1, 50) == 1;
    if (how[0] == 'p') { /* ppoll */
        struct timespec ts = {0, 50 * 1000 * 1000};
        return ppoll(&p, 1, &ts, NULL) == 1;
    }
    fd_set r;
    FD_ZERO(&r);
    FD_SET(fds[0], &r);
    struct timeval tv = {0, 50 * 1000};
    return select(fds[0] + 1, &r, NULL, NULL, &tv) == 1;
}

int main(void)
{
    const char *hows[] = {"poll", "poll0", "ppoll", "select"};
    if (pipe(fds) != 0)
        return 2;
    int failed = 0;
    for (int i = 0; i < 4; i++) {
        drained = 0;
        if (write(fds[1], "x", 1) != 1)
            return 2;
        pthread_t t;
        pthread_create(&t, NULL, drainer, NULL);
        double start = now_s();
        long rounds = 0;
        while (!drained && now_s() - start < 10) {
            ready(hows[i]);
            rounds++;
        }
        if (drained) {
            pthread_join(t, NULL);
            printf("%s: the reader ran while this thread looped\n", hows[i]);
        } else {
            printf("%s: the reader never ran in 10 s (%ld calls)\n", hows[i], rounds);
            failed = 1;
            fflush(stdout);
            _exit(1); /* the reader is still blocked in read */
        }
    }
    return failed;
}
