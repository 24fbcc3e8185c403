/*
 * stdio_bulk_pipe.c - fwrite of much more than a pipe holds, while a
 * ticker thread counts 1 ms sleeps (src/hooks/stdio_bulk.rs).
 *
 * glibc writes such data in one internal write that waits, inside glibc,
 * until the reader has taken most of it: under corun with one worker the
 * writer's worker (and the ticker on it) stopped for the whole transfer.
 * Each phase forks a reader that starts 200 ms later, then reads the pipe
 * slowly (16 KiB every 2 ms) and checks every byte against what the phase
 * wrote; the writer uses one FILE on the pipe:
 *   buffered    fwrite of 1 MiB + 123 bytes after 10 buffered bytes
 *   unbuffered  the same on an unbuffered stream
 *   two threads two threads fwrite 512 KiB each (of 'A's and of 'B's) on
 *               one FILE, while a third fprintf's a line to it: each
 *               block arrives whole, never interleaved (glibc holds the
 *               FILE's lock for a call; so must corun)
 *   epipe       the reader closes its end after 64 KiB: fwrite returns
 *               less, ferror is set, errno EPIPE (SIGPIPE ignored)
 * Prints one line per fact; scripts/tests/stdio_bulk_pipe.sh requires the
 * same lines natively and under corun.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ticker.h"

#define BIG (1024 * 1024 + 123)
#define HALF (512 * 1024)

static unsigned char pattern(size_t i) { return (unsigned char)(i * 7 + i / 4096); }

/* Reads the pipe slowly to its end; returns what it got (malloc'd). */
static unsigned char *slurp(int fd, size_t *len, size_t stop_after)
{
    size_t cap = 4 * 1024 * 1024, n = 0;
    unsigned char *buf = malloc(cap);
    usleep(200000);
    ticker_await();
    for (;;) {
        size_t want = 16384;
        if (stop_after && n + want > stop_after)
            want = stop_after - n;
        if (want == 0 || n + want > cap)
            break;
        ssize_t r = read(fd, buf + n, want);
        if (r <= 0)
            break;
        n += (size_t)r;
        usleep(2000);
    }
    *len = n;
    return buf;
}

/* A reader child that checks the bytes with `check` and exits 0 if right. */
static pid_t reader(int fds[2], int (*check)(const unsigned char *, size_t), size_t stop_after)
{
    pid_t p = fork();
    if (p == 0) {
        close(fds[1]);
        size_t n;
        unsigned char *got = slurp(fds[0], &n, stop_after);
        if (stop_after) {
            close(fds[0]);
            _exit(n == stop_after ? 0 : 1);
        }
        _exit(check(got, n) ? 0 : 1);
    }
    close(fds[0]);
    return p;
}

static int check_big(const unsigned char *got, size_t n)
{
    if (n != 10 + BIG || memcmp(got, "0123456789", 10) != 0)
        return 0;
    for (size_t i = 0; i < BIG; i++)
        if (got[10 + i] != pattern(i))
            return 0;
    return 1;
}

static const char LINE[] = "a line from the third thread\n";

/* One whole block of A, one of B, and the line, in any order. */
static int check_two(const unsigned char *got, size_t n)
{
    size_t line = sizeof LINE - 1;
    if (n != 2 * HALF + line)
        return 0;
    size_t at = 0;
    int seen_a = 0, seen_b = 0, seen_line = 0;
    while (at < n) {
        if (!seen_line && n - at >= line && memcmp(got + at, LINE, line) == 0) {
            seen_line = 1;
            at += line;
            continue;
        }
        unsigned char c = got[at];
        if ((c != 'A' && c != 'B') || (c == 'A' ? seen_a : seen_b) || n - at < HALF)
            return 0;
        for (size_t i = 0; i < HALF; i++)
            if (got[at + i] != c)
                return 0;
        if (c == 'A')
            seen_a = 1;
        else
            seen_b = 1;
        at += HALF;
    }
    return seen_a && seen_b && seen_line;
}

static void reaped(const char *what, pid_t p)
{
    int st = 0;
    waitpid(p, &st, 0);
    printf("%s: reader saw every byte: %s\n", what, WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "yes" : "NO");
}

static unsigned char *big;

static void phase_big(const char *what, int unbuffered)
{
    int fds[2];
    if (pipe(fds) != 0)
        exit(2);
    pid_t p = reader(fds, check_big, 0);
    FILE *f = fdopen(fds[1], "w");
    if (unbuffered)
        setvbuf(f, NULL, _IONBF, 0);
    fwrite("0123456789", 1, 10, f);
    long t0 = ticker_now();
    size_t w = fwrite(big, 1, BIG, f);
    ticker_report(what, t0, 5);
    printf("%s: fwrite returned %s, ferror %d\n", what, w == BIG ? "all" : "less", ferror(f));
    fclose(f);
    reaped(what, p);
}

static FILE *shared;

static void *write_block(void *arg)
{
    unsigned char *block = malloc(HALF);
    memset(block, *(const char *)arg, HALF);
    size_t w = fwrite(block, 1, HALF, shared);
    free(block);
    return (void *)(w == HALF ? "all" : "less");
}

static void *write_line(void *arg)
{
    (void)arg;
    usleep(50000);
    fprintf(shared, "%s", LINE);
    return NULL;
}

static void phase_two(void)
{
    int fds[2];
    if (pipe(fds) != 0)
        exit(2);
    pid_t p = reader(fds, check_two, 0);
    shared = fdopen(fds[1], "w");
    pthread_t a, b, c;
    long t0 = ticker_now();
    pthread_create(&a, NULL, write_block, "A");
    pthread_create(&b, NULL, write_block, "B");
    pthread_create(&c, NULL, write_line, NULL);
    void *ra, *rb;
    pthread_join(a, &ra);
    pthread_join(b, &rb);
    pthread_join(c, NULL);
    ticker_report("two threads", t0, 5);
    printf("two threads: fwrite returned %s and %s\n", (char *)ra, (char *)rb);
    fclose(shared);
    reaped("two threads", p);
}

static void phase_epipe(void)
{
    int fds[2];
    if (pipe(fds) != 0)
        exit(2);
    pid_t p = reader(fds, check_big, 65536);
    FILE *f = fdopen(fds[1], "w");
    errno = 0;
    size_t w = fwrite(big, 1, BIG, f);
    int err = errno;
    printf("epipe: fwrite returned %s, ferror %d, errno %s\n", w < BIG ? "less" : "all", ferror(f),
           err == EPIPE ? "EPIPE" : strerror(err));
    fclose(f);
    reaped("epipe", p);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);
    big = malloc(BIG);
    for (size_t i = 0; i < BIG; i++)
        big[i] = pattern(i);
    ticker_start(1000, 20000);
    phase_big("buffered", 0);
    phase_big("unbuffered", 1);
    phase_two();
    phase_epipe();
    ticker_stop();
    return 0;
}
