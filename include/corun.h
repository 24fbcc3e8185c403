/*
 * corun.h - the C API of corun, for programs written for it.
 *
 * Unchanged programs need none of this: under LD_PRELOAD=libcorun.so their
 * main and threads already are coroutines. This API is for programs that
 * want coroutines explicitly. Link with -lcorun (pkg-config corun) and run
 * under corun (LD_PRELOAD=libcorun.so, or the `corun` launcher).
 */
#ifndef CORUN_H
#define CORUN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A coroutine handle. Opaque; valid until joined or detached. */
typedef struct corun_co corun_co_t;

/* Starts fn(arg) as a coroutine on the least loaded worker, with a stack of
 * CORUN_STACK_SIZE bytes (default 256 KiB). Returns NULL and sets errno
 * (EINVAL for a NULL fn, EAGAIN or ENOMEM when no stack can be had). */
corun_co_t *corun_spawn(void *(*fn)(void *), void *arg);

/* Waits for co to end and stores fn's return value in *result (if result is
 * not NULL). Returns 0, or EINVAL (NULL handle), ESRCH (already joined,
 * detached, or not a handle), EDEADLK (a coroutine joining itself). From a
 * coroutine it parks; from a native thread it blocks. */
int corun_join(corun_co_t *co, void **result);

/* Lets co run to completion unjoined. Returns 0, EINVAL or ESRCH. */
int corun_detach(corun_co_t *co);

/* Lets every other runnable coroutine of this worker run once. */
void corun_yield(void);

/* Sleeps ns nanoseconds: parks a coroutine, blocks a native thread.
 * Returns 0 (or -1 with errno from nanosleep outside coroutines). */
int corun_sleep_ns(uint64_t ns);

/* The running coroutine's id (1, 2, ...), or 0 outside a coroutine. */
uint64_t corun_self_id(void);

#ifdef __cplusplus
}
#endif

#endif /* CORUN_H */
