/* dup2/dup3 over an fd other threads are blocked on (issue 11).
 *
 * Natively a thread blocked in read(5) holds the *file*: when another
 * thread does dup2(q[0], 5), the read goes on with the old pipe, and the
 * bytes written to the old pipe reach it. Under corun the parked read used
 * to come back with EBADF, the old pipe lost its only reader and the
 * writer died of SIGPIPE.
 *
 * Each round: readers (one or two) block in read on p[0]; once they are
 * in the call, the main thread replaces p[0]'s number with a second pipe
 * (dup2, or dup3 with O_CLOEXEC), then writes to the *old* pipe: every
 * reader must get exactly those bytes. Then the number must read the new
 * pipe, and once the readers are done the old pipe must have no reader
 * left (a write fails with EPIPE: nothing kept the old file open behind
 * the program). The same again through the raw system calls
 * (syscall(SYS_dup2), syscall(SYS_dup3)). A last round does the same with a writer blocked on a
 * full pipe whose write end is replaced. And a number replaced by an
 * inline system call (no hook sees it) between two blocking reads: the
 * second read must wait on the new file, not on what corun registered for
 * the old one. SIGPIPE stays at its default
 * until the EPIPE checks: a lost reader kills the process.
 *
 * Prints one line per check; the script compares the transcript natively
 * and under corun (one worker and the default).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MSG "bytes for the old pipe, 40 of them....."
#define MSG_LEN 40

struct reader {
    int fd;
    atomic_int *started;
    atomic_int *finished;
    char buf[128];
    ssize_t n;
    int err;
};

static void msleep(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void *reader(void *arg)
{
    struct reader *r = arg;
    atomic_fetch_add(r->started, 1);
    r->n = read(r->fd, r->buf, sizeof r->buf);
    r->err = r->n < 0 ? errno : 0;
    atomic_fetch_add(r->finished, 1);
    return NULL;
}

/* Waits until `n` threads said they are about to block, then leaves them
 * time to be in the call (generous: the machine may be loaded). */
static void wait_started(atomic_int *started, int n)
{
    for (int i = 0; i < 10000 && atomic_load(started) < n; i++)
        msleep(1);
    msleep(300);
}

/* Replace through the libc names, or the raw system calls (which corun
 * must notice as well). */
static int raw;

static int replace(int dup3_flags, int newfile, int fd)
{
    if (raw)
        return dup3_flags < 0 ? (int)syscall(SYS_dup2, newfile, fd)
                              : (int)syscall(SYS_dup3, newfile, fd, dup3_flags);
    return dup3_flags < 0 ? dup2(newfile, fd) : dup3(newfile, fd, dup3_flags);
}

static void check(const char *what, int good)
{
    printf("%s: %s\n", what, good ? "ok" : "WRONG");
    fflush(stdout);
    if (!good)
        exit(1);
}

/* Readers parked on a pipe's read end while its number is replaced. */
static void read_round(const char *name, int dup3_flags, int nreaders)
{
    int p[2], q[2];
    if (pipe(p) || pipe(q))
        exit(2);
    printf("-- %s, %d reader(s)\n", name, nreaders);
    atomic_int started = 0, finished = 0;
    struct reader rs[2];
    pthread_t ts[2];
    for (int i = 0; i < nreaders; i++) {
        rs[i] = (struct reader){.fd = p[0], .started = &started, .finished = &finished};
        pthread_create(&ts[i], NULL, reader, &rs[i]);
    }
    wait_started(&started, nreaders);
    check("replaced the number", replace(dup3_flags, q[0], p[0]) == p[0]);
    if (dup3_flags == O_CLOEXEC)
        check("close-on-exec as asked", fcntl(p[0], F_GETFD) == FD_CLOEXEC);
    /* One message per reader, written once the previous one was taken:
     * each reader gets exactly one. */
    for (int i = 0; i < nreaders; i++) {
        ssize_t w = write(p[1], MSG, MSG_LEN);
        check("wrote to the old pipe", w == MSG_LEN);
        for (int t = 0; t < 10000 && atomic_load(&finished) <= i; t++)
            msleep(1);
    }
    for (int i = 0; i < nreaders; i++) {
        pthread_join(ts[i], NULL);
        printf("reader %d: %zd bytes%s%s\n", i, rs[i].n, rs[i].err ? ", " : "",
               rs[i].err ? strerrorname_np(rs[i].err) : "");
        check("reader got the old pipe's bytes",
              rs[i].n == MSG_LEN && memcmp(rs[i].buf, MSG, MSG_LEN) == 0);
    }
    /* The number reads the new pipe now. */
    check("wrote to the new pipe", write(q[1], "new", 3) == 3);
    char buf[16] = {0};
    ssize_t n = read(p[0], buf, sizeof buf);
    check("the number reads the new pipe", n == 3 && memcmp(buf, "new", 3) == 0);
    /* Nobody reads the old pipe any more. */
    signal(SIGPIPE, SIG_IGN);
    ssize_t w = write(p[1], "x", 1);
    printf("write to the old pipe after the readers: %zd %s\n", w, w < 0 ? strerrorname_np(errno) : "");
    check("the old pipe has no reader left", w < 0 && errno == EPIPE);
    signal(SIGPIPE, SIG_DFL);
    close(p[0]);
    close(p[1]);
    close(q[0]);
    close(q[1]);
}

struct writer {
    int fd;
    atomic_int *started;
    const char *buf;
    size_t len;
    ssize_t n;
};

static void *writer(void *arg)
{
    struct writer *w = arg;
    atomic_fetch_add(w->started, 1);
    w->n = write(w->fd, w->buf, w->len);
    return NULL;
}

/* A writer parked on a full pipe while its write end's number is replaced. */
static void write_round(void)
{
    int p[2], q[2];
    if (pipe2(p, O_NONBLOCK) || pipe(q))
        exit(2);
    printf("-- dup2 over a parked write\n");
    size_t filled = 0;
    char chunk[4096];
    memset(chunk, 'f', sizeof chunk);
    for (;;) {
        ssize_t w = write(p[1], chunk, sizeof chunk);
        if (w < 0)
            break;
        filled += (size_t)w;
    }
    fcntl(p[1], F_SETFL, 0);
    fcntl(p[0], F_SETFL, 0);
    static char big[10000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (char)('a' + i % 26);
    atomic_int started = 0;
    struct writer wr = {.fd = p[1], .started = &started, .buf = big, .len = sizeof big};
    pthread_t t;
    pthread_create(&t, NULL, writer, &wr);
    wait_started(&started, 1);
    check("replaced the write end's number", dup2(q[1], p[1]) == p[1]);
    /* Drain the old pipe: the filler, then every byte of the parked write. */
    static char got[sizeof big];
    size_t skip = filled, have = 0;
    while (have < sizeof big) {
        char buf[8192];
        size_t want = skip > 0 ? (skip < sizeof buf ? skip : sizeof buf) : sizeof big - have;
        if (want > sizeof buf)
            want = sizeof buf;
        ssize_t n = read(p[0], buf, want);
        if (n <= 0)
            break;
        if (skip > 0) {
            skip -= (size_t)n;
        } else {
            memcpy(got + have, buf, (size_t)n);
            have += (size_t)n;
        }
    }
    pthread_join(t, NULL);
    printf("writer: %zd of %zu bytes; drained %zu\n", wr.n, sizeof big, have);
    check("the old pipe got every byte of the parked write",
          wr.n == (ssize_t)sizeof big && have == sizeof big && memcmp(got, big, sizeof big) == 0);
    check("the number writes the new pipe", write(p[1], "new", 3) == 3);
    char buf[16] = {0};
    check("and the new pipe has it", read(q[0], buf, sizeof buf) == 3 && memcmp(buf, "new", 3) == 0);
    /* Nobody writes the old pipe any more: its reader sees end of file. */
    check("the old pipe has no writer left", read(p[0], buf, sizeof buf) == 0);
    close(p[0]);
    close(p[1]);
    close(q[0]);
    close(q[1]);
}

/* dup2 as an inline system call: no libc function, nothing corun sees. */
static long inline_dup2(int oldfd, int newfd)
{
    long r;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "0"((long)SYS_dup2), "D"((long)oldfd), "S"((long)newfd)
                     : "rcx", "r11", "memory");
    return r;
}

/* A reader that gets `want` from fd within 10 s, while main writes it to
 * `wfd` once the reader is in its call. */
static void read_once(int fd, int wfd, const char *want)
{
    atomic_int started = 0, finished = 0;
    struct reader r = {.fd = fd, .started = &started, .finished = &finished};
    pthread_t t;
    pthread_create(&t, NULL, reader, &r);
    wait_started(&started, 1);
    check("wrote", write(wfd, want, strlen(want)) == (ssize_t)strlen(want));
    for (int i = 0; i < 10000 && atomic_load(&finished) == 0; i++)
        msleep(1);
    check("the reader woke", atomic_load(&finished) == 1);
    pthread_join(t, NULL);
    check("and got the bytes", r.n == (ssize_t)strlen(want) && memcmp(r.buf, want, (size_t)r.n) == 0);
}

/* The number replaced where no hook sees it, between two blocking reads:
 * the second one waits on the new file (and must wake when it has data). */
static void behind_the_back_round(void)
{
    int p[2], q[2];
    if (pipe(p) || pipe(q))
        exit(2);
    printf("-- an inline dup2 system call between two parked reads\n");
    read_once(p[0], p[1], "first");
    check("replaced the number (inline system call)", inline_dup2(q[0], p[0]) == p[0]);
    read_once(p[0], q[1], "second");
    close(p[0]);
    close(p[1]);
    close(q[0]);
    close(q[1]);
}

int main(void)
{
    read_round("dup2", -1, 1);
    read_round("dup3", O_CLOEXEC, 1);
    read_round("dup2", -1, 2);
    read_round("dup3", 0, 2);
    raw = 1;
    read_round("syscall(SYS_dup2)", -1, 1);
    read_round("syscall(SYS_dup3)", O_CLOEXEC, 2);
    write_round();
    behind_the_back_round();
    printf("done\n");
    return 0;
}
