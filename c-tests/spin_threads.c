/*
 * spin_threads - pthread spinlocks under contention.
 *
 * 4 threads each take a spinlock 100,000 times to bump a plain counter;
 * every 5,000th time the holder sleeps 200 us inside the critical section
 * (under corun: parked while holding the lock, with the other coroutines of
 * its worker spinning for it). Then the same with a PTHREAD_PROCESS_SHARED
 * lock. Prints the lock word's value when free (glibc's convention: 1 on
 * x86_64), what trylock says of a held lock, and the exact totals.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define THREADS 4
#define ROUNDS 100000

static pthread_spinlock_t lock;
static long counter;
static int busy_seen;

static void *body(void *arg)
{
    (void)arg;
    for (int i = 1; i <= ROUNDS; i++) {
        pthread_spin_lock(&lock);
        long c = counter;
        if (i % 5000 == 0)
            usleep(200);
        counter = c + 1;
        pthread_spin_unlock(&lock);
    }
    return NULL;
}

static void *try_held(void *arg)
{
    (void)arg;
    busy_seen = pthread_spin_trylock(&lock);
    return NULL;
}

static void run(int pshared)
{
    if (pthread_spin_init(&lock, pshared))
        return;
    int v;
    v = lock;
    printf("%s: word when free %d\n", pshared ? "shared" : "private", v);
    pthread_spin_lock(&lock);
    pthread_t t;
    pthread_create(&t, NULL, try_held, NULL);
    pthread_join(t, NULL);
    printf("trylock of a held lock: %s\n", busy_seen ? strerrorname_np(busy_seen) : "0");
    pthread_spin_unlock(&lock);
    printf("trylock of a free lock: %d\n", pthread_spin_trylock(&lock));
    pthread_spin_unlock(&lock);
    counter = 0;
    pthread_t ts[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&ts[i], NULL, body, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(ts[i], NULL);
    v = lock;
    printf("%d threads x %d: counter %ld, word after %d\n", THREADS, ROUNDS, counter, v);
    pthread_spin_destroy(&lock);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    run(PTHREAD_PROCESS_PRIVATE);
    run(PTHREAD_PROCESS_SHARED);
    return 0;
}
