/*
 * hooks_rw - read/write family transcript (see transcript.h).
 *
 * read, write, readv, writev, preadv2, pwritev2, pread, pwrite and the
 * fortified __read_chk,
 * __pread_chk on
 * pipes, socketpairs, an eventfd, a timerfd and a regular file: data that
 * arrives later, EOF, full pipes that drain later, EPIPE, EBADF, ESPIPE,
 * and the program's own O_NONBLOCK wish (pipe2, fcntl, ioctl FIONBIO) kept
 * through dup/dup2 and forgotten when the fd is closed and its number
 * reused. After the waits, no fd may have been left O_NONBLOCK by corun.
 */
#undef _FORTIFY_SOURCE
#define _FORTIFY_SOURCE 2
#include <signal.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>

#include "transcript.h"

static char big[300000];
static char sink[300000];

int main(void)
{
    tr_start();
    signal(SIGPIPE, SIG_IGN);
    int p[2], s[2];
    char buf[64];
    volatile size_t drained = 0;

    /* Data arriving later on a pipe; EOF when the writer closes. */
    T("pipe", pipe(p));
    later_write(DELAY, p[1], "hello", 5);
    WAITS("read pipe (data later)", read(p[0], buf, sizeof buf));
    later_close(DELAY, p[1]);
    WAITS("read pipe (writer closes later)", read(p[0], buf, sizeof buf));
    CHECK("pipe read end left blocking", !tr_nonblock(p[0]));
    close(p[0]);

    /* A full pipe drained later: the blocking write completes in full. */
    T("pipe", pipe(p));
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (char)(i * 7 + 3);
    later_drain(DELAY, p[0], sizeof big, &drained);
    WAITS("write 300000 to pipe (drained later)", write(p[1], big, sizeof big));
    while (drained != sizeof big)
        usleep(1000);
    CHECK("drained all", drained == sizeof big);
    CHECK("pipe write end left blocking", !tr_nonblock(p[1]));
    close(p[0]);
    T("write to pipe without reader", write(p[1], "x", 1));
    close(p[1]);

    /* readv/writev on a socketpair. */
    T("socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, s));
    later_write(DELAY, s[1], "abcdefgh", 8);
    char a[3], b[10];
    struct iovec iv[2] = {{a, sizeof a}, {b, sizeof b}};
    WAITS("readv socketpair (data later)", readv(s[0], iv, 2));
    CHECK("readv bytes", memcmp(a, "abc", 3) == 0 && memcmp(b, "defgh", 5) == 0);
    struct iovec wv[2] = {{big, 100000}, {big + 100000, 200000}};
    later_drain(DELAY, s[1], 300000, &drained);
    drained = 0;
    WAITS("writev 300000 to socketpair (drained later)", writev(s[0], wv, 2));
    while (drained != 300000)
        usleep(1000);
    CHECK("socket left blocking", !tr_nonblock(s[0]));
    later_close(DELAY, s[1]);
    WAITS("read socketpair (peer closes later)", read(s[0], buf, sizeof buf));
    close(s[0]);

    /* preadv2/pwritev2 at offset -1 without flags are readv/writev; with
     * RWF_NOWAIT they are what the program asked for. */
    T("pipe", pipe(p));
    char pv[16];
    struct iovec piv = {pv, sizeof pv};
    later_write(DELAY, p[1], "preadv2", 7);
    WAITS("preadv2 -1 on a pipe (data later)", preadv2(p[0], &piv, 1, -1, 0));
    T("preadv2 RWF_NOWAIT on an empty pipe", preadv2(p[0], &piv, 1, -1, RWF_NOWAIT));
    T("preadv2 at offset 0 on a pipe", preadv2(p[0], &piv, 1, 0, 0));
    struct iovec bigv = {big, 100000};
    drained = 0;
    later_drain(DELAY, p[0], 100000, &drained);
    WAITS("pwritev2 -1 100000 to a pipe (drained later)", pwritev2(p[1], &bigv, 1, -1, 0));
    while (drained != 100000)
        usleep(1000);
    close(p[0]);
    close(p[1]);

    /* eventfd and timerfd. */
    int efd = T("eventfd", eventfd(0, 0));
    static uint64_t three = 3;
    later_write(DELAY, efd, &three, 8);
    uint64_t v = 0;
    WAITS("read eventfd (written later)", read(efd, &v, 8));
    printf("eventfd value %llu\n", (unsigned long long)v);
    close(efd);
    int tfd = T("timerfd_create", timerfd_create(CLOCK_MONOTONIC, 0));
    struct itimerspec its = {{0, 0}, {0, DELAY * 1000000L}};
    T("timerfd_settime", timerfd_settime(tfd, 0, &its, NULL));
    WAITS("read timerfd (expires later)", read(tfd, &v, 8));
    printf("timerfd expirations %llu\n", (unsigned long long)v);
    close(tfd);

    /* Fortified read: __read_chk when the buffer size is known and the
     * length is not (a constant length that fits calls plain read). */
    T("pipe", pipe(p));
    later_write(DELAY, p[1], "fortified", 9);
    volatile size_t len = sizeof buf;
    WAITS("read (fortified, data later)", read(p[0], buf, len));
    close(p[0]);
    close(p[1]);

    /* Regular file: pread/pwrite pass through; ESPIPE on a pipe. */
    char path[] = "/tmp/hooks_rw.XXXXXX";
    int f = T("mkstemp", mkstemp(path));
    unlink(path);
    T("pwrite file", pwrite(f, "0123456789", 10, 5));
    T("pread file", pread(f, buf, 4, 7));
    CHECK("pread bytes", memcmp(buf, "2345", 4) == 0);
    T("read file at 0", read(f, buf, sizeof buf));
    T("pread file (fortified: __pread_chk)", pread(f, buf, len, 0));
    close(f);
    T("pipe", pipe(p));
    T("pread pipe", pread(p[0], buf, 4, 0));
    T("read bad fd", read(999, buf, 4));
    T("write bad fd", write(999, buf, 4));
    close(p[0]);
    close(p[1]);

    /* The program's O_NONBLOCK wish, however expressed. */
    T("pipe2 O_NONBLOCK", pipe2(p, O_NONBLOCK));
    T("read pipe2 O_NONBLOCK", read(p[0], buf, sizeof buf));
    int d = dup(p[0]);
    T("read dup of it", read(d, buf, sizeof buf));
    T("dup2 onto 40", dup2(p[0], 40));
    T("read dup2 of it", read(40, buf, sizeof buf));
    T("fcntl F_SETFL 0 via the dup", fcntl(d, F_SETFL, 0));
    later_write(DELAY, p[1], "sharedflag", 10);
    WAITS("read original (flag cleared through dup)", read(p[0], buf, sizeof buf));
    close(d);
    close(40);
    close(p[0]);
    close(p[1]);

    T("pipe", pipe(p));
    T("fcntl F_SETFL O_NONBLOCK", fcntl(p[0], F_SETFL, O_NONBLOCK));
    T("read after F_SETFL O_NONBLOCK", read(p[0], buf, sizeof buf));
    int on = 0;
    T("ioctl FIONBIO 0", ioctl(p[0], FIONBIO, &on));
    CHECK("FIONBIO 0 cleared the flag", !tr_nonblock(p[0]));
    later_write(DELAY, p[1], "fionbio", 7);
    WAITS("read after FIONBIO 0 (data later)", read(p[0], buf, sizeof buf));
    on = 1;
    T("ioctl FIONBIO 1", ioctl(p[0], FIONBIO, &on));
    T("read after FIONBIO 1", read(p[0], buf, sizeof buf));
    int old = p[0];
    close(p[0]);
    close(p[1]);
    /* The number comes back for a blocking pipe: the wish is forgotten. */
    T("pipe (reuses the number)", pipe(p));
    CHECK("same number", p[0] == old);
    later_write(DELAY, p[1], "reused", 6);
    WAITS("read reused number (data later)", read(p[0], buf, sizeof buf));
    close(p[0]);
    close(p[1]);
    (void)sink;
    return tr_end();
}
