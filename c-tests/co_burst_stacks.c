/*
 * co_burst_stacks N - a burst of N coroutines that each sleep 1 ms touches
 * about as many stacks as run at once, not N.
 *
 * main spawns N sleepers in a row, then joins them, and prints the page
 * faults the burst cost (getrusage, minor faults), per coroutine.
 * scripts/tests/burst_stacks.sh checks the figure.
 *
 * A spawn reserves a stack (so that it can fail as pthread_create does),
 * and a burst reserves N of them. A task now starts on the stack a task
 * that ended on its worker left (src/sched/stack_pool.rs,
 * `recent_stack`), and woken tasks run before never-run ones
 * (src/sched/run_queue.rs), so sleepers end while the burst starts and
 * their stacks are reused: the reserved ones are never touched. Before,
 * every sleeper started on its own reserved stack and none ended before
 * all had started: each of the N stacks was faulted in (100,000 sleepers
 * of 1 ms: 100,000 faults, a third of the first run's time).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include <corun.h>

static long minflt(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_minflt;
}

static void *sleeper(void *arg)
{
    (void)arg;
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 1000000};
    nanosleep(&ts, NULL);
    return NULL;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 20000;
    corun_co_t **cos = calloc((size_t)n, sizeof *cos);
    if (!cos || corun_self_id() == 0) {
        fprintf(stderr, "co_burst_stacks: run under corun\n");
        return 2;
    }
    long f0 = minflt();
    for (long i = 0; i < n; i++)
        if (!(cos[i] = corun_spawn(sleeper, NULL)))
            return 1;
    for (long i = 0; i < n; i++)
        if (corun_join(cos[i], NULL) != 0)
            return 1;
    long f = minflt() - f0;
    printf("page faults of a burst of %ld sleepers: %ld (%.2f a coroutine)\n", n, f, (double)f / (double)n);
    return 0;
}
