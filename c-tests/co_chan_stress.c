/*
 * co_chan_stress PRODUCERS CONSUMERS ITEMS CAPACITY
 *
 * PRODUCERS coroutines send ITEMS distinct integers in all through one
 * channel of CAPACITY (0: unbuffered) to CONSUMERS coroutines, which count
 * each value they receive; at the end every value must have been received
 * exactly once. Prints "moved N items ... in X ms (Y ns/item)".
 */
#include <errno.h>
#include <stdatomic.h>

#include <corun.h>

#include "co_check.h"

static corun_chan_t *ch;
static long items, producers;
static unsigned char *seen; /* per value: times received (saturating) */
static atomic_long received, dup;

static void *produce(void *arg)
{
    long p = (long)(intptr_t)arg;
    for (long v = p; v < items; v += producers)
        CHECK_EQ(corun_chan_send(ch, &v), 0);
    return NULL;
}

static void *consume(void *arg)
{
    (void)arg;
    long v, n = 0;
    while (corun_chan_recv(ch, &v) == 0) {
        CHECK(v >= 0 && v < items);
        /* Each value is sent once; a second receipt is a duplicate. */
        if (__atomic_fetch_add(&seen[v], 1, __ATOMIC_RELAXED) != 0)
            atomic_fetch_add(&dup, 1);
        n++;
    }
    atomic_fetch_add(&received, n);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s PRODUCERS CONSUMERS ITEMS CAPACITY\n", argv[0]);
        return 2;
    }
    producers = atol(argv[1]);
    long consumers = atol(argv[2]);
    items = atol(argv[3]);
    ch = corun_chan_new(sizeof(long), (size_t)atol(argv[4]));
    seen = calloc((size_t)items, 1);
    CHECK(ch && seen && producers > 0 && consumers > 0);
    corun_co_t **ps = calloc((size_t)producers, sizeof *ps), **cs = calloc((size_t)consumers, sizeof *cs);
    uint64_t t0 = co_now_ns();
    for (long i = 0; i < consumers; i++)
        CHECK((cs[i] = corun_spawn(consume, NULL)) != NULL);
    for (long i = 0; i < producers; i++)
        CHECK((ps[i] = corun_spawn(produce, (void *)(intptr_t)i)) != NULL);
    for (long i = 0; i < producers; i++)
        CHECK_EQ(corun_join(ps[i], NULL), 0);
    CHECK_EQ(corun_chan_close(ch), 0);
    for (long i = 0; i < consumers; i++)
        CHECK_EQ(corun_join(cs[i], NULL), 0);
    uint64_t ns = co_now_ns() - t0;
    long lost = 0;
    for (long v = 0; v < items; v++)
        lost += seen[v] == 0;
    printf("moved %ld items from %ld producers to %ld consumers (capacity %s): received %ld, lost %ld, "
           "duplicated %ld, in %.0f ms (%.0f ns/item)\n",
           items, producers, consumers, argv[4], atomic_load(&received), lost, atomic_load(&dup), ns / 1e6,
           (double)ns / (double)items);
    CHECK_EQ(atomic_load(&received), items);
    CHECK_EQ(lost, 0);
    CHECK_EQ(atomic_load(&dup), 0);
    corun_chan_free(ch);
    return 0;
}
