/*
 * aio_posix.c - POSIX AIO waits (glibc's helper threads): aio_suspend on a
 * pipe read that a child process answers 200 ms later, aio_suspend
 * timing out (EAGAIN) and cut by a signal handler (EINTR), aio_suspend on
 * a list with NULL entries and a finished request (at once), and
 * lio_listio(LIO_WAIT) of two pipe reads answered later, of a file write
 * and read, and of a list with a failing request (EIO, the request's own
 * error EBADF). glibc waits on a futex through an inline system call:
 * under corun it held the worker (src/hooks/aio.rs). A pthread ticker
 * counts 1 ms sleeps; with one worker it must run during every wait.
 * Every byte read is checked. Prints one line per fact;
 * scripts/tests/aio_posix.sh requires the same lines natively and under
 * corun.
 */
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ticker.h"

static void ticked(const char *what, long before) { ticker_report(what, before, 5); }

static void read_req(struct aiocb *cb, int fd, char *buf, size_t n)
{
    memset(cb, 0, sizeof *cb);
    cb->aio_fildes = fd;
    cb->aio_buf = buf;
    cb->aio_nbytes = n;
    cb->aio_lio_opcode = LIO_READ;
    cb->aio_sigevent.sigev_notify = SIGEV_NONE;
}

static void on_alarm(int s) { (void)s; }

static const char *err_name(int e)
{
    switch (e) {
    case 0: return "0";
    case EAGAIN: return "EAGAIN";
    case EINTR: return "EINTR";
    case EIO: return "EIO";
    case EBADF: return "EBADF";
    case EINPROGRESS: return "EINPROGRESS";
    default: return "other";
    }
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    ticker_start(1000, 10000);

    int p1[2], p2[2];
    if (pipe(p1) || pipe(p2))
        return 1;
    char b1[64], b2[64];
    struct aiocb c1, c2;

    /* aio_suspend until a child writes. */
    memset(b1, 0, sizeof b1);
    read_req(&c1, p1[0], b1, sizeof b1 - 1);
    aio_read(&c1);
    const struct aiocb *l1[] = {&c1};
    long t0 = ticker_now();
    pid_t w = write_later(p1[1], "first answer", 200);
    int r = aio_suspend(l1, 1, NULL);
    printf("aio_suspend: %d, error %s, return %zd, data \"%s\"\n", r, err_name(aio_error(&c1)),
           aio_return(&c1), b1);
    ticked("aio_suspend", t0);
    reap_child(w);

    /* Timed out, then cut by a handler. */
    memset(b1, 0, sizeof b1);
    read_req(&c1, p1[0], b1, sizeof b1 - 1);
    aio_read(&c1);
    t0 = ticker_now();
    struct timespec ts = {0, 150000000L};
    r = aio_suspend(l1, 1, &ts);
    printf("aio_suspend with a 150 ms timeout: %d %s; request %s\n", r,
           r ? err_name(errno) : "-", err_name(aio_error(&c1)));
    ticked("aio_suspend timed out", t0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 0}, {0, 100000}};
    setitimer(ITIMER_REAL, &it, NULL);
    ts.tv_sec = 5;
    r = aio_suspend(l1, 1, &ts);
    printf("aio_suspend cut by a handler: %d %s\n", r, r ? err_name(errno) : "-");
    if (write(p1[1], "second", 6) != 6)
        return 1;
    r = aio_suspend(l1, 1, NULL);
    printf("then: %d, return %zd, data \"%s\"\n", r, aio_return(&c1), b1);

    /* NULL entries, and one request already done: at once. */
    const struct aiocb *l3[] = {NULL, &c1, NULL};
    printf("aio_suspend on a done request among NULLs: %d\n", aio_suspend(l3, 3, NULL));
    const struct aiocb *l0[] = {NULL};
    printf("aio_suspend on NULLs only: %d\n", aio_suspend(l0, 1, NULL));

    /* lio_listio(LIO_WAIT): two pipe reads answered 200 ms later. */
    memset(b1, 0, sizeof b1);
    memset(b2, 0, sizeof b2);
    read_req(&c1, p1[0], b1, sizeof b1 - 1);
    read_req(&c2, p2[0], b2, sizeof b2 - 1);
    struct aiocb nop;
    memset(&nop, 0, sizeof nop);
    nop.aio_lio_opcode = LIO_NOP;
    struct aiocb *l2[] = {&c1, NULL, &nop, &c2};
    t0 = ticker_now();
    pid_t w1 = write_later(p1[1], "for one", 200);
    pid_t w2 = write_later(p2[1], "for two", 250);
    r = lio_listio(LIO_WAIT, l2, 4, NULL);
    printf("lio_listio(LIO_WAIT): %d; %zd \"%s\", %zd \"%s\"\n", r, aio_return(&c1), b1,
           aio_return(&c2), b2);
    ticked("lio_listio", t0);
    reap_child(w1);
    reap_child(w2);

    /* A file: write 100 KB of a pattern, read it back, check each byte. */
    char path[] = "/tmp/aio_posix.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 1;
    unlink(path);
    size_t n = 100000;
    char *out = malloc(n), *in = calloc(1, n);
    for (size_t i = 0; i < n; i++)
        out[i] = (char)(i * 7 + 3);
    struct aiocb wc;
    memset(&wc, 0, sizeof wc);
    wc.aio_fildes = fd;
    wc.aio_buf = out;
    wc.aio_nbytes = n;
    wc.aio_lio_opcode = LIO_WRITE;
    struct aiocb *lw[] = {&wc};
    r = lio_listio(LIO_WAIT, lw, 1, NULL);
    printf("file write: %d, %zd bytes\n", r, aio_return(&wc));
    read_req(&c1, fd, in, n);
    aio_read(&c1);
    const struct aiocb *lr[] = {&c1};
    while (aio_error(&c1) == EINPROGRESS)
        aio_suspend(lr, 1, NULL);
    printf("file read: %zd bytes, same bytes: %s\n", aio_return(&c1),
           memcmp(in, out, n) == 0 ? "yes" : "NO");

    /* A failing request: EIO for the list, EBADF for the request. */
    read_req(&c1, fd, in, 10);
    read_req(&c2, 999, b2, 10);
    struct aiocb *lf[] = {&c1, &c2};
    r = lio_listio(LIO_WAIT, lf, 2, NULL);
    printf("lio_listio with a bad fd: %d %s; requests %s %s\n", r, r ? err_name(errno) : "-",
           err_name(aio_error(&c1)), err_name(aio_error(&c2)));

    ticker_stop();
    return 0;
}
