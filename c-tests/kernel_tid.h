/*
 * kernel_tid.h - the kernel thread running the caller, for tests that tell
 * which corun worker a thread runs on. /proc/thread-self is resolved by the
 * kernel, where gettid() under corun gives each coroutine thread an id of
 * its own. -1 when /proc cannot say.
 */
#ifndef KERNEL_TID_H
#define KERNEL_TID_H

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline long kernel_tid(void)
{
    char buf[64];
    ssize_t n = readlink("/proc/thread-self", buf, sizeof buf - 1);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    const char *slash = strrchr(buf, '/');
    return slash ? atol(slash + 1) : -1;
}

#endif /* KERNEL_TID_H */
