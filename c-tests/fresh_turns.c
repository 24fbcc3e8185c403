/*
 * fresh_turns NSPIN NNEW - a burst of new threads starts within about one
 * round of the threads already runnable, however long the run queue.
 *
 * NSPIN threads yield in a loop, counting their yields in one shared
 * counter, so (under corun, one worker) the run queue never drains. Then
 * main makes NNEW threads in a row without yielding; each notes the
 * counter when it first runs. Prints how many yields the others made
 * between the burst and the start of its last thread, and the one-round
 * figure NSPIN it is compared with by scripts/tests/fresh_turns.sh.
 *
 * A server's accept loop does this: 10,000 connections arrive at once
 * while the first ones are served. corun used to start a never-run
 * coroutine every 61st task while others were ready, so the last of a
 * burst waited NNEW * 61 tasks (seconds, at 10,000 connections).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static atomic_long yields;
static atomic_int stop, spinning;
static long *started_at;

static void *spinner(void *arg)
{
    (void)arg;
    atomic_fetch_add(&spinning, 1);
    while (!atomic_load(&stop)) {
        sched_yield();
        atomic_fetch_add(&yields, 1);
    }
    return NULL;
}

static void *newcomer(void *arg)
{
    started_at[(long)arg] = atomic_load(&yields);
    return NULL;
}

int main(int argc, char **argv)
{
    long nspin = argc > 1 ? atol(argv[1]) : 1000;
    long nnew = argc > 2 ? atol(argv[2]) : 1000;
    pthread_t *s = calloc((size_t)nspin, sizeof *s);
    pthread_t *n = calloc((size_t)nnew, sizeof *n);
    started_at = calloc((size_t)nnew, sizeof *started_at);
    if (!s || !n || !started_at)
        abort();
    for (long i = 0; i < nspin; i++)
        if (pthread_create(&s[i], NULL, spinner, NULL))
            abort();
    while (atomic_load(&spinning) < nspin)
        sched_yield();
    /* A few rounds, so that every spinner has run and yielded. */
    long until = atomic_load(&yields) + 3 * nspin;
    while (atomic_load(&yields) < until)
        sched_yield();
    long burst = atomic_load(&yields);
    for (long i = 0; i < nnew; i++)
        if (pthread_create(&n[i], NULL, newcomer, (void *)i))
            abort();
    long last = 0;
    for (long i = 0; i < nnew; i++) {
        pthread_join(n[i], NULL);
        if (started_at[i] - burst > last)
            last = started_at[i] - burst;
    }
    atomic_store(&stop, 1);
    for (long i = 0; i < nspin; i++)
        pthread_join(s[i], NULL);
    printf("yields before the last of %ld new threads started: %ld (one round: %ld)\n", nnew, last, nspin);
    return 0;
}
