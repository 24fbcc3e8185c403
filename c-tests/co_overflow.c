/*
 * co_overflow: a coroutine recurses until it runs off its stack. corun must
 * print which coroutine overflowed and how to raise the stack size, then
 * abort (a non-zero exit). The recursion is real: each frame keeps a
 * buffer live across the call so the compiler cannot turn it into a loop.
 */
#include <stdio.h>
#include <string.h>

#include <corun.h>

static volatile int sink;
static volatile int forever = 1;

static int recurse(int depth)
{
    char pad[512];
    memset(pad, depth & 0xff, sizeof pad);
    int r = forever ? recurse(depth + 1) : 0;
    r += pad[depth % sizeof pad];
    sink = r;
    return r;
}

static void *deep(void *arg)
{
    (void)arg;
    fprintf(stderr, "co_overflow: recursing in coroutine %llu\n", (unsigned long long)corun_self_id());
    return (void *)(long)recurse(0);
}

int main(void)
{
    corun_co_t *co = corun_spawn(deep, NULL);
    corun_join(co, NULL);
    printf("co_overflow: survived (should not happen)\n");
    return 0;
}
