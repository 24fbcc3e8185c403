/* Exit handlers that wait for threads, as libuv's destructor
 * (uv__threadpool_cleanup: Node.js) and many C++ static destructors do:
 * after main returns, an atexit handler and a destructor each wake a
 * thread parked on a condition variable and join it; the thread prints
 * and ends. Natively the handlers run on the main thread while the other
 * threads go on running. Under corun, main returning handed the status to
 * glibc, whose exit ran the handlers on worker 0's kernel thread outside
 * any coroutine: a thread whose home is worker 0 could never run again,
 * and the join waited for ever (node hung at every exit after a file or
 * DNS call). Each handler gives up after 5 s and says so instead of
 * hanging. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct sleeper {
    pthread_t t;
    pthread_mutex_t m;
    pthread_cond_t c;
    int go, ready;
    const char *name;
};

static struct sleeper a = {.m = PTHREAD_MUTEX_INITIALIZER, .c = PTHREAD_COND_INITIALIZER, .name = "atexit"};
static struct sleeper d = {.m = PTHREAD_MUTEX_INITIALIZER, .c = PTHREAD_COND_INITIALIZER, .name = "destructor"};

static void *sleeper_main(void *arg)
{
    struct sleeper *s = arg;
    pthread_mutex_lock(&s->m);
    s->ready = 1;
    pthread_cond_broadcast(&s->c);
    while (!s->go)
        pthread_cond_wait(&s->c, &s->m);
    pthread_mutex_unlock(&s->m);
    printf("%s thread: woken after main returned\n", s->name);
    return (void *)s->name;
}

static void start(struct sleeper *s)
{
    pthread_create(&s->t, NULL, sleeper_main, s);
    pthread_mutex_lock(&s->m);
    while (!s->ready)
        pthread_cond_wait(&s->c, &s->m);
    pthread_mutex_unlock(&s->m);
}

static void wake_and_join(struct sleeper *s)
{
    pthread_mutex_lock(&s->m);
    s->go = 1;
    pthread_cond_broadcast(&s->c);
    pthread_mutex_unlock(&s->m);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    void *r = NULL;
    int e = pthread_timedjoin_np(s->t, &r, &until);
    if (e == 0)
        printf("%s handler: joined the %s thread\n", s->name, (const char *)r);
    else
        printf("%s handler: join failed: %s\n", s->name, e == ETIMEDOUT ? "timed out after 5 s" : "error");
    fflush(stdout);
}

static void at_exit_handler(void) { wake_and_join(&a); }

__attribute__((destructor)) static void destructor(void) { wake_and_join(&d); }

int main(void)
{
    start(&a);
    start(&d);
    atexit(at_exit_handler);
    printf("main: returning 3\n");
    return 3;
}
