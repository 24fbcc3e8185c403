/* A thread that waits for its own signal handler in a loop that spends
 * most of its time in glibc (clock_gettime: a timeout check, a memcpy, a
 * strlen) takes a pthread_kill at once natively. Under corun with two
 * workers (main on one, the thread alone on the other) the kick lands
 * with the pc in glibc, no safe point, and the monitor never preempts the
 * only coroutine of a worker: the handler waited until the thread made a
 * call corun sees (here the printf after 2 s); the monitor now retries
 * the preemption until one lands at a safe point. Prints how many of 20
 * signals were not handled within 2 s; exit 1 if any. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static atomic_int flag, spinning;
static int late;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void on_usr1(int s)
{
    (void)s;
    atomic_store(&flag, 1);
}

static void *spin(void *p)
{
    (void)p;
    for (int round = 0; round < 20; round++) {
        atomic_store(&spinning, round + 1);
        double t0 = now();
        while (!atomic_load(&flag))
            if (now() - t0 > 2) {
                late++;
                fprintf(stderr, "round %d: handler not run after 2 s\n", round);
                break;
            }
        atomic_store(&flag, 0);
    }
    return NULL;
}

int main(void)
{
    signal(SIGUSR1, on_usr1);
    pthread_t t;
    pthread_create(&t, NULL, spin, NULL);
    for (int round = 1; round <= 20; round++) {
        while (atomic_load(&spinning) < round)
            usleep(100);
        usleep(2000);
        pthread_kill(t, SIGUSR1);
    }
    pthread_join(t, NULL);
    printf("signals not handled within 2 s: %d of 20\n", late);
    return late != 0;
}
