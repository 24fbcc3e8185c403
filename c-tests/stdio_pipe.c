/*
 * stdio_pipe.c - stdio input on an empty pipe, in one thread, while a
 * ticker thread counts 1 ms sleeps: fgets, getline, fread, fgetc,
 * getc_unlocked (glibc's inline buffer, then __uflow), fscanf, vfscanf,
 * and getchar and scanf on stdin, each waiting for a line another process writes 200 ms later.
 * Under corun (one worker) the ticker must keep running during each wait
 * (src/hooks/stdio.rs); glibc's stdio reads through its internal read,
 * which no hook sees. Then a SIGALRM handler without SA_RESTART ends an
 * fgets and an fscanf with EINTR and the FILE's error flag, as natively.
 * Prints one line per fact; scripts/tests/stdio_pipe.sh requires the same
 * lines natively and under corun.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ticker.h"


/* The ticker ran during the last wait (at least 5 ticks of 1 ms in 200). */
static void ticked(const char *what, long before) { ticker_report(what, before, 5); }

static FILE *in;
static int wfd;

/* vfscanf, as a program's own scanf-like wrapper calls it. */
static int scan_from(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vfscanf(f, fmt, ap);
    va_end(ap);
    return n;
}

static void *reader(void *arg)
{
    (void)arg;
    char buf[128];
    long t0 = ticker_now();
    pid_t p = write_later(wfd, "first line\n", 200);
    printf("fgets: %s", fgets(buf, sizeof buf, in) ? buf : "NULL\n");
    ticked("fgets", t0);
    reap_child(p);

    char *line = NULL;
    size_t cap = 0;
    t0 = ticker_now();
    p = write_later(wfd, "second line\n", 200);
    ssize_t n = getline(&line, &cap, in);
    printf("getline: %zd %s", n, n > 0 ? line : "\n");
    ticked("getline", t0);
    reap_child(p);
    free(line);

    t0 = ticker_now();
    p = write_later(wfd, "0123456789", 200);
    size_t got = fread(buf, 1, 10, in);
    printf("fread: %zu %.10s\n", got, buf);
    ticked("fread", t0);
    reap_child(p);

    t0 = ticker_now();
    p = write_later(wfd, "xy", 200);
    int c1 = fgetc(in);
    int c2 = getc_unlocked(in);
    printf("fgetc, getc_unlocked: %c%c\n", c1, c2);
    ticked("fgetc", t0);
    reap_child(p);

    t0 = ticker_now();
    p = write_later(wfd, "z", 200);
    int c3 = getc_unlocked(in);
    printf("getc_unlocked on an empty buffer: %c\n", c3);
    ticked("getc_unlocked", t0);
    reap_child(p);

    int a = 0, b = 0;
    double d = 0;
    t0 = ticker_now();
    p = write_later(wfd, "12 34 2.5\n", 200);
    int k = fscanf(in, "%d %d %lf", &a, &b, &d);
    printf("fscanf: %d items: %d %d %.1f\n", k, a, b, d);
    ticked("fscanf", t0);
    reap_child(p);

    t0 = ticker_now();
    p = write_later(wfd, "77 w\n", 200);
    char w = 0;
    k = scan_from(in, "%d %c", &a, &w);
    printf("vfscanf after a newline left in the buffer: %d items: %d %c\n", k, a, w);
    ticked("vfscanf", t0);
    reap_child(p);
    /* "%c" reads what is there (the newline) without waiting. */
    k = fscanf(in, "%c", &w);
    printf("fscanf %%c of a buffered newline: %d items, %s\n", k, w == '\n' ? "newline" : "other");
    return NULL;
}

static void on_alarm(int sig) { (void)sig; }

int main(void)
{
    int fds[2];
    if (pipe(fds) != 0)
        return 2;
    in = fdopen(fds[0], "r");
    wfd = fds[1];
    pthread_t rd;
    ticker_start(1000, 20000);
    pthread_create(&rd, NULL, reader, NULL);
    pthread_join(rd, NULL);

    /* getchar on stdin made a pipe. */
    int sp[2];
    if (pipe(sp) != 0 || dup2(sp[0], 0) < 0)
        return 2;
    long t0 = ticker_now();
    pid_t p = write_later(sp[1], "!", 200);
    int c = getchar();
    printf("getchar: %c\n", c);
    ticked("getchar", t0);
    reap_child(p);

    int v = 0;
    t0 = ticker_now();
    p = write_later(sp[1], "56\n", 200);
    int k = scanf("%d", &v);
    printf("scanf: %d items: %d\n", k, v);
    ticked("scanf", t0);
    reap_child(p);

    /* A handler without SA_RESTART ends fgets with EINTR. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    alarm(1);
    char buf[64];
    errno = 0;
    char *r = fgets(buf, sizeof buf, in);
    int e = errno;
    printf("fgets, SIGALRM handler: %s errno %s, ferror %s\n", r ? "a line" : "NULL", e == EINTR ? "EINTR" : "other",
           ferror(in) ? "set" : "clear");

    /* ... and fscanf: EOF, EINTR, the error flag. */
    clearerr(in);
    alarm(1);
    errno = 0;
    int x = 0;
    k = fscanf(in, "%d", &x);
    e = errno;
    printf("fscanf, SIGALRM handler: %d errno %s, ferror %s\n", k, e == EINTR ? "EINTR" : "other",
           ferror(in) ? "set" : "clear");
    ticker_stop();
    return 0;
}
