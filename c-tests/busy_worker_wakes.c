/*
 * busy_worker_wakes - a wake that comes from another kernel thread reaches
 * a coroutine whose worker never runs out of work.
 *
 * Two threads do nothing but sched_yield until told to stop, so (under
 * corun, one worker) the worker's run queue never drains. A third thread
 * makes stat() calls: corun runs each on its blocking pool, and the pool's
 * helper thread wakes the caller through the worker's inbox. MariaDB hung
 * so under corun with one worker (sysbench prepare): readers of an InnoDB
 * latch woke each other without end while its holder's wake from the pool
 * waited in the inbox, which the worker read only with an empty run queue.
 * Prints what it did; the same natively and under corun.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static atomic_int stop;

static void *spinner(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop))
        sched_yield();
    return NULL;
}

static void *statter(void *arg)
{
    (void)arg;
    int ok = 0;
    for (int i = 0; i < 200; i++) {
        struct stat st;
        if (stat("/", &st) == 0 && S_ISDIR(st.st_mode))
            ok++;
    }
    atomic_store(&stop, 1);
    return (void *)(long)ok;
}

int main(void)
{
    pthread_t s[2], t;
    for (int i = 0; i < 2; i++)
        if (pthread_create(&s[i], NULL, spinner, NULL))
            abort();
    if (pthread_create(&t, NULL, statter, NULL))
        abort();
    void *ok;
    pthread_join(t, &ok);
    for (int i = 0; i < 2; i++)
        pthread_join(s[i], NULL);
    printf("stat calls made while two threads yielded: %ld of 200 saw a directory\n", (long)ok);
    return 0;
}
