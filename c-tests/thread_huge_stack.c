/*
 * thread_huge_stack - pthread_create with stack size attributes glibc
 * cannot or can honour: 1 TiB (more than memory and swap: EAGAIN, and no
 * thread), then 64 MiB (created, runs, joins). Prints each result.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int ran;

static void *body(void *arg)
{
    (void)arg;
    ran++;
    return NULL;
}

static void try_size(const char *label, size_t size)
{
    pthread_attr_t a;
    pthread_attr_init(&a);
    int set = pthread_attr_setstacksize(&a, size);
    pthread_t t;
    int r = pthread_create(&t, &a, body, NULL);
    printf("%s: setstacksize %d, pthread_create %s", label, set, r ? strerrorname_np(r) : "0");
    if (r == 0)
        printf(", join %d", pthread_join(t, NULL));
    printf(", threads run so far %d\n", ran);
    pthread_attr_destroy(&a);
}

int main(void)
{
    try_size("1 TiB", (size_t)1 << 40);
    try_size("64 MiB", (size_t)64 << 20);
    try_size("1 TiB again", (size_t)1 << 40);
    return 0;
}
