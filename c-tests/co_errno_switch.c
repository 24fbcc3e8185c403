/*
 * co_errno_switch: coroutines that share their worker's TLS (corun_spawn
 * tasks; pthreads with CORUN_TLS=worker) share its errno, which corun
 * saves and restores around every switch. Each of 16 coroutines (and 16
 * pthreads) sets errno to a value of its own, then yields, sleeps (a
 * park on a timer) and yields again, 200 times, checking after each
 * switch that its errno is still its own. Prints "co_errno_switch: ok".
 */
#include <errno.h>
#include <sched.h>
#include <pthread.h>
#include <unistd.h>

#include <corun.h>

#include "co_check.h"

#define N 16
#define ROUNDS 200

static void *body(void *arg)
{
    int mine = 1000 + (int)(intptr_t)arg;
    for (int r = 0; r < ROUNDS; r++) {
        errno = mine;
        corun_yield();
        CHECK_EQ(errno, mine);
        if (r % 20 == 0) {
            usleep(100);
            /* usleep succeeded: errno is whatever it was before */
            CHECK_EQ(errno, mine);
        }
        sched_yield();
        CHECK_EQ(errno, mine);
        errno = mine + 1;
        corun_yield();
        CHECK_EQ(errno, mine + 1);
    }
    return NULL;
}

int main(void)
{
    corun_co_t *co[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        co[i] = corun_spawn(body, (void *)(intptr_t)i);
        CHECK(co[i] != NULL);
        CHECK_EQ(pthread_create(&th[i], NULL, body, (void *)(intptr_t)(N + i)), 0);
    }
    for (int i = 0; i < N; i++) {
        CHECK_EQ(corun_join(co[i], NULL), 0);
        CHECK_EQ(pthread_join(th[i], NULL), 0);
    }
    printf("co_errno_switch: ok\n");
    return 0;
}
