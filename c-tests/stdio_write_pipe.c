/*
 * stdio_write_pipe.c - stdio output into a full pipe, while a ticker
 * thread counts 1 ms sleeps. glibc's stdio writes through its internal
 * write, which no hook sees: a thread whose printf/fputs/fwrite/putc/
 * fflush met a full pipe held its worker until the reader made room
 * (src/hooks/stdio_write.rs). Each phase fills a pipe (64 KiB), starts a
 * child that reads it 200 ms later and checks every byte it gets (the
 * filler, then exactly what the phase wrote), and writes through one
 * stdio call family: fputs+fflush, fwrite larger than the buffer,
 * fprintf with int and double arguments, putc across the buffer, an
 * unbuffered and a line-buffered stream, fclose with bytes pending,
 * vfprintf, dprintf, printf and puts on stdout moved onto the pipe, a
 * thread holding the FILE's lock (flockfile) while another waits for it
 * (it must not park holding it: the other would wait in the kernel and
 * hold the worker, and neither would go on); then
 * a SIGALRM handler without SA_RESTART ends an fflush with EINTR and the
 * error flag (the bytes pending are dropped, as glibc drops them).
 * Under corun (one worker) the ticker must run during each wait. Prints
 * one line per fact; scripts/tests/stdio_write_pipe.sh requires the same
 * lines natively and under corun.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ticker.h"

static void ticked(const char *what, long before) { ticker_report(what, before, 5); }

#define FILLER 65536

static int wfd;
static pid_t child;

/* Makes a pipe, fills it, and forks a reader that waits delay_ms, then
 * reads FILLER bytes of 'f' and then exactly `expect` up to EOF (exit 0),
 * or exits 2 at the first byte that differs. Returns the write end. */
static int start(const char *expect, int delay_ms)
{
    int p[2];
    if (pipe(p))
        exit(1);
    fcntl(p[1], F_SETFL, O_NONBLOCK);
    char chunk[4096];
    memset(chunk, 'f', sizeof chunk);
    long filled = 0;
    while (write(p[1], chunk, sizeof chunk) == (ssize_t)sizeof chunk)
        filled += sizeof chunk;
    fcntl(p[1], F_SETFL, 0);
    if (filled != FILLER)
        exit(1);
    fflush(stdout);
    child = fork();
    if (child == 0) {
        close(p[1]);
        usleep(delay_ms * 1000);
        ticker_await();
        size_t want = strlen(expect), got = 0;
        long seen = 0;
        char buf[8192];
        ssize_t n;
        while ((n = read(p[0], buf, sizeof buf)) > 0) {
            for (ssize_t i = 0; i < n; i++, seen++) {
                if (seen < FILLER) {
                    if (buf[i] != 'f')
                        _exit(2);
                } else if (got >= want || buf[i] != expect[got++]) {
                    _exit(2);
                }
            }
        }
        _exit(got == want ? 0 : 3);
    }
    close(p[0]);
    wfd = p[1];
    return p[1];
}

static void finish(const char *what)
{
    int st;
    waitpid(child, &st, 0);
    printf("%s: the reader got every byte: %s\n", what,
           WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "yes" : "NO");
}

static int wrapped(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vfprintf(f, fmt, ap);
    va_end(ap);
    return n;
}

static void on_alarm(int s) { (void)s; }

static FILE *locked;
static void *writes_locked(void *arg)
{
    (void)arg;
    fputs("other thread\n", locked);
    fflush(locked);
    return NULL;
}

static char big[10001], chars[5001];

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    ticker_start(1000, 10000);
    for (int i = 0; i < 10000; i++)
        big[i] = 'a' + i % 26;
    for (int i = 0; i < 5000; i++)
        chars[i] = '0' + i % 10;

    FILE *w = fdopen(start("one hundred bytes? no: a short line\n", 200), "w");
    long t0 = ticker_now();
    int r1 = fputs("one hundred bytes? no: a short line\n", w);
    int r2 = fflush(w);
    printf("fputs %s, fflush %d\n", r1 >= 0 ? "ok" : "EOF", r2);
    ticked("fputs+fflush", t0);
    fclose(w);
    finish("fputs+fflush");

    w = fdopen(start(big, 200), "w");
    t0 = ticker_now();
    printf("fwrite of 10000 bytes: %zu\n", fwrite(big, 1, 10000, w));
    ticked("fwrite", t0);
    fclose(w);
    finish("fwrite");

    w = fdopen(start("n=42 x=2.50 s=str\n", 200), "w");
    t0 = ticker_now();
    fputs("n=", w); /* something pending, then the formatted rest */
    int r = fprintf(w, "%d x=%.2f s=%s\n", 42, 2.5, "str");
    printf("fprintf: %d, fflush %d\n", r, fflush(w));
    ticked("fprintf+fflush", t0);
    fclose(w);
    finish("fprintf");

    w = fdopen(start(chars, 200), "w");
    t0 = ticker_now();
    int bad = 0;
    for (int i = 0; i < 5000; i++)
        bad |= putc(chars[i], w) != chars[i];
    printf("putc 5000 times: %s\n", bad ? "an error" : "ok");
    ticked("putc", t0);
    fclose(w);
    finish("putc");

    w = fdopen(start("unbuffered\n", 200), "w");
    setvbuf(w, NULL, _IONBF, 0);
    t0 = ticker_now();
    printf("unbuffered fputs: %s\n", fputs("unbuffered\n", w) >= 0 ? "ok" : "EOF");
    ticked("unbuffered fputs", t0);
    fclose(w);
    finish("unbuffered");

    w = fdopen(start("line one\nline two\n", 200), "w");
    setvbuf(w, NULL, _IOLBF, 0);
    t0 = ticker_now();
    fputs("line one\n", w);
    fputs("line two\n", w);
    ticked("line-buffered fputs", t0);
    fclose(w);
    finish("line-buffered");

    w = fdopen(start("pending at fclose\n", 200), "w");
    fputs("pending at fclose\n", w);
    t0 = ticker_now();
    printf("fclose: %d\n", fclose(w));
    ticked("fclose", t0);
    finish("fclose");

    w = fdopen(start("via vfprintf 7\n", 200), "w");
    t0 = ticker_now();
    wrapped(w, "via %s %d\n", "vfprintf", 7);
    printf("vfprintf then fflush: %d\n", fflush(w));
    ticked("vfprintf", t0);
    fclose(w);
    finish("vfprintf");

    int fd = start("dprintf 3\n", 200);
    t0 = ticker_now();
    printf("dprintf: %d\n", dprintf(fd, "dprintf %d\n", 3));
    ticked("dprintf", t0);
    close(fd);
    finish("dprintf");

    /* stdout itself on the pipe: printf, puts, putchar. */
    fd = start("printf 5\nputs\n!", 200);
    int saved = dup(1);
    dup2(fd, 1);
    close(fd);
    t0 = ticker_now();
    printf("printf %d\n", 5);
    puts("puts");
    putchar('!');
    fflush(stdout);
    long during = ticker_now() - t0;
    dup2(saved, 1);
    close(saved);
    printf("stdout on a full pipe: ticker ran during the wait: %s\n", during >= 5 ? "yes" : "NO");
    finish("stdout");

    /* A thread that holds the FILE's lock (flockfile) meets the full pipe
     * while another thread wants the lock: both must get through. */
    locked = fdopen(start("held: first\nheld: second\nother thread\n", 200), "w");
    pthread_t other;
    flockfile(locked);
    pthread_create(&other, NULL, writes_locked, NULL);
    fputs("held: first\n", locked);
    fflush(locked);
    fputs("held: second\n", locked);
    funlockfile(locked);
    pthread_join(other, NULL);
    fclose(locked);
    finish("flockfile");

    /* A handler without SA_RESTART ends the wait: EINTR, error flag. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    w = fdopen(start("after\n", 300), "w");
    fputs("dropped\n", w);
    struct itimerval it = {{0, 0}, {0, 50000}};
    setitimer(ITIMER_REAL, &it, NULL);
    errno = 0;
    r = fflush(w);
    int e = errno;
    printf("fflush cut by a handler: %d, errno EINTR: %s, ferror: %d\n", r,
           e == EINTR ? "yes" : "no", ferror(w) != 0);
    clearerr(w);
    fputs("after\n", w);
    fclose(w);
    finish("after EINTR");

    ticker_stop();
    return 0;
}
