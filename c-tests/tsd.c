/*
 * tsd - thread-specific data, a plain pthread program (no corun header).
 * 1,000 threads keep their own values under two keys while they sleep and
 * interleave; every destructor runs exactly once per value when its thread
 * ends (by returning or by pthread_exit), a destructor that sets a value
 * again is called again, and a deleted key reads NULL. Prints one summary
 * line; exits 1 on any wrong result. Identical natively and under corun.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define THREADS 1000

static pthread_key_t k_slot, k_heap, k_again;
static atomic_int destroyed[THREADS];
static atomic_int heap_freed, again_calls, wrong;

struct heap_val {
    int owner;
    int magic;
};

static void slot_dtor(void *v)
{
    atomic_fetch_add(&destroyed[*(int *)v], 1);
}

static void heap_dtor(void *v)
{
    struct heap_val *h = v;
    if (h->magic != 0x5eed)
        atomic_fetch_add(&wrong, 1);
    h->magic = 0;
    free(h);
    atomic_fetch_add(&heap_freed, 1);
}

/* Sets its value again on the first call: glibc calls it a second time. */
static void again_dtor(void *v)
{
    int n = atomic_fetch_add(&again_calls, 1);
    (void)n;
    if (v == (void *)1)
        pthread_setspecific(k_again, (void *)2);
}

static int ids[THREADS];

static volatile char sink;

static void deep_exit(int depth, void *ret)
{
    char pad[64];
    if (depth < 0)
        return;
    memset(pad, depth, sizeof pad);
    if (depth == 0)
        pthread_exit(ret);
    deep_exit(depth - 1, ret);
    sink = pad[depth % 64];
}

static void *worker(void *arg)
{
    int i = (int)(long)arg;
    if (pthread_getspecific(k_slot) != NULL || pthread_getspecific(k_heap) != NULL)
        atomic_fetch_add(&wrong, 1); /* a new thread starts with NULL */
    ids[i] = i;
    pthread_setspecific(k_slot, &ids[i]);
    struct heap_val *h = malloc(sizeof *h);
    h->owner = i;
    h->magic = 0x5eed;
    pthread_setspecific(k_heap, h);
    if (i % 10 == 0)
        pthread_setspecific(k_again, (void *)1);
    for (int r = 0; r < 3; r++) {
        usleep(1000 + (unsigned)(i % 7) * 100); /* let the others run and set theirs */
        if (pthread_getspecific(k_slot) != &ids[i])
            atomic_fetch_add(&wrong, 1);
        struct heap_val *g = pthread_getspecific(k_heap);
        if (g != h || g->owner != i)
            atomic_fetch_add(&wrong, 1);
    }
    if (i % 2)
        deep_exit(20, arg); /* destructors also run on pthread_exit */
    return arg;
}

static sem_t key_set, key_deleted;

static void *deleted_key(void *arg)
{
    pthread_key_t k = *(pthread_key_t *)arg;
    pthread_setspecific(k, (void *)7);
    sem_post(&key_set);
    sem_wait(&key_deleted); /* main deletes k and creates another, maybe same number */
    return pthread_getspecific(k);
}

int main(void)
{
    pthread_key_create(&k_slot, slot_dtor);
    pthread_key_create(&k_heap, heap_dtor);
    pthread_key_create(&k_again, again_dtor);
    int main_val = -1;
    pthread_setspecific(k_slot, &main_val);

    static pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)i) != 0) {
            printf("FAIL pthread_create\n");
            return 1;
        }
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        if ((long)r != i)
            atomic_fetch_add(&wrong, 1);
    }
    int once_each = 1;
    for (int i = 0; i < THREADS; i++)
        once_each &= atomic_load(&destroyed[i]) == 1;
    if (pthread_getspecific(k_slot) != &main_val)
        atomic_fetch_add(&wrong, 1);

    pthread_key_t k;
    pthread_key_create(&k, NULL);
    pthread_t d;
    sem_init(&key_set, 0, 0);
    sem_init(&key_deleted, 0, 0);
    pthread_create(&d, NULL, deleted_key, &k);
    sem_wait(&key_set);
    pthread_key_delete(k);
    pthread_key_t k2;
    pthread_key_create(&k2, NULL);
    sem_post(&key_deleted);
    void *after;
    pthread_join(d, &after);
    int deleted_ok = after == NULL;

    int ok = !atomic_load(&wrong) && once_each && atomic_load(&heap_freed) == THREADS &&
             atomic_load(&again_calls) == 2 * (THREADS / 10) && deleted_ok;
    printf("tsd: %d threads, values isolated%s, slot destructors once each%s, %d heap values freed, "
           "re-set value destroyed again (%d calls), deleted key reads %s\n",
           THREADS, atomic_load(&wrong) ? " NOT" : "", once_each ? "" : " NOT", atomic_load(&heap_freed),
           atomic_load(&again_calls), deleted_ok ? "NULL" : "non-NULL");
    return ok ? 0 : 1;
}
