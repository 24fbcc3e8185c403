/* New processes made with clone() and with syscall(SYS_clone / SYS_clone3),
 * none sharing memory (no CLONE_VM), while the parent has a thread of its
 * own parked on a pipe. Each child makes two threads that pass messages
 * with blocking I/O (socket -> pipe -> socket, upper-casing them), joins
 * them and exits with the count; the parent talks to it, checks every byte
 * and prints one line per child. Under corun each child must get fork's
 * treatment (its own scheduler and epoll): sharing the parent's, it lost
 * wake-ups and hung (vsftpd's session processes). The output is the same
 * natively and under corun. */
#include <ctype.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MSGS 200
#define LEN 64

static int sock_child, pipe_r, pipe_w;

/* Reads exactly n bytes (0: EOF first). */
static int read_full(int fd, char *b, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, b + got, n - got);
        if (r <= 0)
            return 0;
        got += (size_t)r;
    }
    return 1;
}

static int write_full(int fd, const char *b, size_t n)
{
    size_t put = 0;
    while (put < n) {
        ssize_t r = write(fd, b + put, n - put);
        if (r <= 0)
            return 0;
        put += (size_t)r;
    }
    return 1;
}

/* Child thread 1: socket -> pipe. */
static void *from_socket(void *unused)
{
    (void)unused;
    char m[LEN];
    long n = 0;
    while (read_full(sock_child, m, LEN) && write_full(pipe_w, m, LEN))
        n++;
    close(pipe_w);
    return (void *)n;
}

/* Child thread 2: pipe -> socket, upper-cased. */
static void *to_socket(void *unused)
{
    (void)unused;
    char m[LEN];
    long n = 0;
    while (read_full(pipe_r, m, LEN)) {
        for (int i = 0; i < LEN; i++)
            m[i] = (char)toupper((unsigned char)m[i]);
        if (!write_full(sock_child, m, LEN))
            break;
        n++;
    }
    return (void *)n;
}

/* The child's work: its exit status is the number of messages both
 * threads passed (MSGS each, so 2 * MSGS % 256 when all went well). */
static int child_main(void *arg)
{
    (void)arg;
    alarm(20);
    int p[2];
    if (pipe(p) != 0)
        return 101;
    pipe_r = p[0];
    pipe_w = p[1];
    pthread_t a, b;
    void *ra, *rb;
    if (pthread_create(&a, NULL, from_socket, NULL) || pthread_create(&b, NULL, to_socket, NULL))
        return 102;
    pthread_join(a, &ra);
    pthread_join(b, &rb);
    return (int)(((long)ra + (long)rb) % 256);
}

/* The parent's own thread: parked on a pipe until the end. */
static int tick_r;
static void *ticker(void *unused)
{
    (void)unused;
    char c;
    long n = 0;
    while (read(tick_r, &c, 1) == 1)
        n++;
    return (void *)n;
}

/* Talks to the child over `s`: MSGS messages out, each back upper-cased. */
static int converse(int s)
{
    int bad = 0;
    char out[LEN], in[LEN], want[LEN];
    for (int i = 0; i < MSGS; i++) {
        snprintf(out, sizeof out, "message %d of the parent, lower case %*s", i, 20, "x");
        memset(out + strlen(out), 'q', LEN - strlen(out));
        for (int k = 0; k < LEN; k++)
            want[k] = (char)toupper((unsigned char)out[k]);
        if (!write_full(s, out, LEN) || !read_full(s, in, LEN))
            return -1;
        bad += memcmp(in, want, LEN) != 0;
    }
    shutdown(s, SHUT_WR);
    return bad;
}

static void report(const char *how, pid_t pid, int s)
{
    if (pid < 0) {
        perror(how);
        exit(1);
    }
    int bad = converse(s);
    close(s);
    int st = 0;
    if (waitpid(pid, &st, 0) != pid) {
        perror("waitpid");
        exit(1);
    }
    printf("%s: %d messages, %d wrong; child %s %d\n", how, MSGS, bad,
           WIFEXITED(st) ? "exited" : "killed by", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

int main(void)
{
    int tp[2];
    if (pipe(tp) != 0)
        return 1;
    tick_r = tp[0];
    pthread_t t;
    pthread_create(&t, NULL, ticker, NULL);
    for (int round = 0; round < 3; round++) {
        for (int how = 0; how < 3; how++) {
            int sv[2];
            if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
                return 1;
            sock_child = sv[1];
            fflush(stdout);
            pid_t pid;
            const char *name;
            if (how == 0) {
                name = "clone()";
                size_t size = 1 << 20;
                char *stack = malloc(size);
                pid = clone(child_main, stack + size, SIGCHLD, NULL);
                free(stack);
            } else if (how == 1) {
                name = "syscall(SYS_clone)";
                pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
                if (pid == 0) {
                    close(sv[0]);
                    _exit(child_main(NULL));
                }
            } else {
                name = "syscall(SYS_clone3)";
                struct clone_args ca;
                memset(&ca, 0, sizeof ca);
                ca.exit_signal = SIGCHLD;
                pid = (pid_t)syscall(SYS_clone3, &ca, sizeof ca);
                if (pid == 0) {
                    close(sv[0]);
                    _exit(child_main(NULL));
                }
            }
            close(sv[1]);
            report(name, pid, sv[0]);
            if (write(tp[1], "t", 1) != 1)
                return 1;
        }
    }
    close(tp[1]);
    void *r;
    pthread_join(t, &r);
    printf("the parent's own thread read %ld ticks\n", (long)r);
    return 0;
}
