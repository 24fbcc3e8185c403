/* libaio-style waits for AIO completions through raw system calls
 * (issue 11): io_setup, io_submit of an IOCB_CMD_POLL on a pipe, then
 * io_getevents (and io_pgetevents) with min_nr = 1 until a thread writes
 * to the pipe 200 ms later. Natively the waiting thread sleeps in the
 * kernel; under corun a coroutine making the call on its worker would
 * stop the worker's other coroutines (with one worker, the ticker and the
 * writer: the wait would never end). The ticker thread counts 1 ms sleeps
 * during each wait. Also io_getevents with min_nr = 0, which never waits.
 * Prints one line per wait; the script compares the transcript natively
 * and under corun (one worker and the default). */
#include <errno.h>
#include <linux/aio_abi.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile int ticks, stop_ticker;
static int pipefd[2];

static void *ticker(void *arg)
{
    (void)arg;
    while (!stop_ticker) {
        ticks++;
        usleep(1000);
    }
    return NULL;
}

static void *write_later(void *arg)
{
    (void)arg;
    usleep(200000);
    if (write(pipefd[1], "aio!", 4) != 4)
        perror("write");
    return NULL;
}

static void submit_poll(aio_context_t ctx, struct iocb *cb)
{
    memset(cb, 0, sizeof *cb);
    cb->aio_fildes = (unsigned)pipefd[0];
    cb->aio_lio_opcode = IOCB_CMD_POLL;
    cb->aio_buf = POLLIN;
    cb->aio_data = 0xC0B0;
    struct iocb *list[1] = {cb};
    long r = syscall(SYS_io_submit, ctx, 1L, list);
    if (r != 1) {
        printf("io_submit: %ld %s\n", r, strerror(errno));
        exit(1);
    }
}

/* One wait for the poll's completion, by `nr` (SYS_io_getevents or
 * SYS_io_pgetevents), while a thread writes to the pipe later. */
static void wait_one(const char *what, aio_context_t ctx, long nr)
{
    struct iocb cb;
    submit_poll(ctx, &cb);
    pthread_t w;
    pthread_create(&w, NULL, write_later, NULL);
    struct io_event ev[1];
    int t0 = ticks;
    long r = nr == SYS_io_getevents ? syscall(nr, ctx, 1L, 1L, ev, NULL)
                                    : syscall(nr, ctx, 1L, 1L, ev, NULL, NULL);
    int ran = ticks - t0 > 5;
    pthread_join(w, NULL);
    char buf[8] = {0};
    ssize_t n = read(pipefd[0], buf, sizeof buf);
    printf("%s: %ld event(s), data 0x%llx, POLLIN %s, pipe read \"%s\" (%zd), others ran meanwhile: %s\n", what,
           r, r == 1 ? (unsigned long long)ev[0].data : 0ULL, r == 1 && (ev[0].res & POLLIN) ? "yes" : "no",
           buf, n, ran ? "yes" : "no");
}

int main(void)
{
    if (pipe(pipefd))
        return 1;
    aio_context_t ctx = 0;
    if (syscall(SYS_io_setup, 8L, &ctx) != 0) {
        printf("io_setup: %s\n", strerror(errno));
        return 1;
    }
    pthread_t tk;
    pthread_create(&tk, NULL, ticker, NULL);
    for (int i = 0; i < 10000 && ticks == 0; i++)
        usleep(1000);
    wait_one("io_getevents", ctx, SYS_io_getevents);
    wait_one("io_pgetevents", ctx, SYS_io_pgetevents);
    /* min_nr = 0: nothing completed, nothing waited for. */
    struct iocb cb;
    submit_poll(ctx, &cb);
    struct io_event ev[1];
    struct timespec zero = {0, 0};
    long r = syscall(SYS_io_getevents, ctx, 0L, 1L, ev, &zero);
    printf("io_getevents, min_nr 0, nothing ready: %ld\n", r);
    if (write(pipefd[1], "x", 1) != 1)
        return 1;
    r = syscall(SYS_io_getevents, ctx, 1L, 1L, ev, NULL);
    printf("io_getevents once ready: %ld event(s), POLLIN %s\n", r, r == 1 && (ev[0].res & POLLIN) ? "yes" : "no");
    syscall(SYS_io_destroy, ctx);
    stop_ticker = 1;
    pthread_join(tk, NULL);
    return 0;
}
