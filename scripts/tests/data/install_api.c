/* A program written for corun's C API, built by the install test against an
 * installed corun found through pkg-config: 10 coroutines each send their
 * number squared on a channel; main sums what it receives and checks that
 * every coroutine had an id of its own. */
#include <corun.h>
#include <stdint.h>
#include <stdio.h>

static corun_chan_t *ch;

static void *square(void *arg)
{
    long n = (long)(intptr_t)arg;
    long sq = n * n;
    corun_yield();
    if (corun_chan_send(ch, &sq) != 0)
        return (void *)1;
    return (void *)(uintptr_t)corun_self_id();
}

int main(void)
{
    corun_co_t *co[10];
    ch = corun_chan_new(sizeof(long), 0);
    if (!ch || corun_self_id() == 0) {
        printf("not running under corun\n");
        return 1;
    }
    for (long i = 0; i < 10; i++)
        co[i] = corun_spawn(square, (void *)(intptr_t)i);
    long sum = 0, got;
    for (int i = 0; i < 10; i++) {
        if (corun_chan_recv(ch, &got) != 0)
            return 1;
        sum += got;
    }
    uint64_t ids[10];
    int distinct = 1;
    for (int i = 0; i < 10; i++) {
        void *r;
        if (corun_join(co[i], &r) != 0)
            return 1;
        ids[i] = (uint64_t)(uintptr_t)r;
        for (int j = 0; j < i; j++)
            distinct &= ids[j] != ids[i] && ids[i] > 1;
    }
    corun_chan_free(ch);
    printf("sum of squares 0..9 = %ld\n", sum);
    printf("10 coroutines, distinct ids: %s\n", distinct ? "yes" : "no");
    return 0;
}
