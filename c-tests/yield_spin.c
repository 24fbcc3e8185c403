/*
 * yield_spin.c - a thread waits for another with sched_yield in a loop,
 * while the other is parked in poll on an eventfd the first one writes
 * (GLib's gio "contexts" test: the main thread yields until every
 * GMainContext thread, woken through its eventfd, has seen a new value).
 * Natively sched_yield lets the kernel run the woken thread. Under corun
 * with one worker, a yield with nothing runnable returned at once and the
 * worker never looked at its netpoller: the poller never woke, the loop
 * never ended (src/hooks/signal.rs: after a 2 ms slice of such yields the
 * worker polls, sched::slice). 100 round trips, then the thread ends on a
 * last value; prints what it saw. scripts/tests/yield_spin.sh requires
 * the same lines natively and under corun.
 */
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <unistd.h>

static int efd;
static volatile int current, observed = -1;
static long wakeups;

static void *poller(void *arg)
{
    (void)arg;
    for (;;) {
        struct pollfd p = {efd, POLLIN, 0};
        if (poll(&p, 1, -1) != 1)
            return NULL;
        uint64_t v;
        if (read(efd, &v, sizeof v) != sizeof v)
            return NULL;
        wakeups++;
        __atomic_store_n(&observed, __atomic_load_n(&current, __ATOMIC_SEQ_CST), __ATOMIC_SEQ_CST);
        if (observed < 0)
            return NULL;
    }
}

int main(void)
{
    efd = eventfd(0, 0);
    pthread_t t;
    pthread_create(&t, NULL, poller, NULL);
    int rounds = 0;
    for (int n = 0; n < 100; n++) {
        __atomic_store_n(&current, n, __ATOMIC_SEQ_CST);
        uint64_t one = 1;
        if (write(efd, &one, sizeof one) != sizeof one)
            return 1;
        while (__atomic_load_n(&observed, __ATOMIC_SEQ_CST) != n)
            sched_yield();
        rounds++;
    }
    __atomic_store_n(&current, -5, __ATOMIC_SEQ_CST);
    uint64_t one = 1;
    if (write(efd, &one, sizeof one) != sizeof one)
        return 1;
    pthread_join(t, NULL);
    printf("round trips: %d, last value seen: %d, the poller woke at least 101 times: %s\n", rounds,
           observed, wakeups >= 101 ? "yes" : "no");
    return 0;
}
