/*
 * omp_team.c - an OpenMP program (GCC's libgomp) with more team threads
 * than corun has workers: a parallel reduction, 2,000 regions each with a
 * barrier, a task tree and a critical section, from main and then from a
 * pthread, and a region whose starter waits 300 ms for the others.
 * libgomp's team threads wait with inline futex system calls no
 * hook sees; as coroutines they held every worker and the program hung
 * (src/hooks/pthread/foreign.rs keeps them kernel threads). Prints one
 * line per result; scripts/tests/omp_team.sh requires the same lines
 * natively and under corun.
 */
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static long fib(int n)
{
    if (n < 2)
        return n;
    long a, b;
#pragma omp task shared(a)
    a = fib(n - 1);
#pragma omp task shared(b)
    b = fib(n - 2);
#pragma omp taskwait
    return a + b;
}

static void *team_work(void *arg)
{
    const char *who = arg;
    long sum = 0;
#pragma omp parallel for reduction(+ : sum) num_threads(8)
    for (long i = 0; i < 20000000; i++)
        sum += (i * i) % 7;
    printf("%s: reduction %ld\n", who, sum);

    int regions = 0;
    for (int r = 0; r < 2000; r++) {
#pragma omp parallel num_threads(6)
        {
#pragma omp barrier
#pragma omp master
            regions++;
        }
    }
    printf("%s: regions with a barrier %d\n", who, regions);

    long f = 0;
#pragma omp parallel num_threads(4)
#pragma omp single
    f = fib(18);
    printf("%s: fib(18) with tasks %ld\n", who, f);

    int counted = 0, size = 0;
#pragma omp parallel num_threads(5)
    {
#pragma omp critical
        counted++;
#pragma omp single
        size = omp_get_num_threads();
    }
    printf("%s: critical sections %d of a team of %d\n", who, counted, size);

    /* The thread that started the team waits 300 ms for the others at the
       region's end, asleep in libgomp's futex: no stall to report. */
    int late = 0;
#pragma omp parallel num_threads(3)
    {
        if (omp_get_thread_num() != 0) {
            usleep(300000);
#pragma omp atomic
            late++;
        }
    }
    printf("%s: members that finished late %d\n", who, late);
    return NULL;
}

int main(void)
{
    team_work("main");
    pthread_t t;
    if (pthread_create(&t, NULL, team_work, "pthread") != 0)
        return 2;
    pthread_join(t, NULL);
    return 0;
}
