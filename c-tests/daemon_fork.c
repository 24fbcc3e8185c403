/* daemon() and forkpty() from a program with threads: libc forks inside
 * them, with a fork no interposed `fork` sees.
 *
 *   daemon_fork daemon OUTFILE   threads run, a "ticker" thread counts
 *       every millisecond, then daemon(0, 0). The daemon checks what
 *       daemon(3) promises (its own session, cwd "/", stdin, stdout and
 *       stderr on /dev/null), that the ticker is gone (natively the child
 *       has only the thread that forked), and that 50 new threads compute
 *       right; it writes its report to OUTFILE (an absolute path) and
 *       exits 0.
 *   daemon_fork forkpty          the same ticker, then forkpty(): the child
 *       checks its session and terminal, the ticker, 20 threads, and prints
 *       its report on the terminal; the parent reads it from the master
 *       and prints it with the child's status.
 *
 * Under corun the child kept the parent's runtime as it was: the ticker
 * went on ticking in the daemon, and the child waited on the parent's
 * epoll instances. */
#include <fcntl.h>
#include <pthread.h>
#include <pty.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

static atomic_long ticks;

static void *spin(void *arg)
{
    (void)arg;
    volatile long x = 0;
    for (long i = 0; i < 20000000; i++)
        x += i;
    return NULL;
}

static void *ticker(void *arg)
{
    (void)arg;
    for (;;) {
        usleep(1000);
        atomic_fetch_add(&ticks, 1);
    }
    return NULL;
}

static void *work(void *arg)
{
    long *r = arg;
    volatile long x = 0;
    for (long i = 0; i < 1000000; i++)
        x += i;
    usleep(1000);
    *r = x;
    return NULL;
}

/* Starts a few computing threads (so that every worker has run one), then
 * the ticker, and lets it tick. */
static void start_threads(void)
{
    pthread_t s[4], t;
    for (int i = 0; i < 4; i++)
        if (pthread_create(&s[i], NULL, spin, NULL))
            exit(2);
    for (int i = 0; i < 4; i++)
        pthread_join(s[i], NULL);
    if (pthread_create(&t, NULL, ticker, NULL))
        exit(2);
    while (atomic_load(&ticks) < 5)
        usleep(1000);
}

/* What every child checks of itself; returns the report's line. */
static void child_report(char *out, size_t len, int threads)
{
    long before = atomic_load(&ticks);
    usleep(100 * 1000);
    int ticker_gone = atomic_load(&ticks) == before;
    pthread_t w[50];
    long r[50];
    for (int i = 0; i < threads; i++)
        if (pthread_create(&w[i], NULL, work, &r[i]))
            exit(2);
    int good = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(w[i], NULL);
        good += r[i] == 499999500000L;
    }
    snprintf(out, len, "own session %s, ticker %s, %d of %d threads right",
             getsid(0) == getpid() ? "yes" : "no", ticker_gone ? "gone" : "STILL TICKING", good,
             threads);
}

static int is_dev_null(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
}

static int mode_daemon(const char *outfile)
{
    start_threads();
    if (daemon(0, 0)) {
        perror("daemon");
        return 1;
    }
    char line[256], cwd[64];
    child_report(line, sizeof line, 50);
    int fd = open(outfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return 1;
    dprintf(fd, "daemon: %s, cwd %s, stdio %s\n", line,
            getcwd(cwd, sizeof cwd) ? cwd : "?",
            is_dev_null(0) && is_dev_null(1) && is_dev_null(2) ? "/dev/null" : "NOT /dev/null");
    close(fd);
    return 0;
}

static int mode_forkpty(void)
{
    start_threads();
    int master;
    pid_t pid = forkpty(&master, NULL, NULL, NULL);
    if (pid < 0) {
        perror("forkpty");
        return 1;
    }
    if (pid == 0) {
        char line[256];
        child_report(line, sizeof line, 20);
        printf("pty child: %s, stdin %s\n", line, isatty(0) ? "a terminal" : "NOT a terminal");
        fflush(stdout);
        return 0;
    }
    char buf[1024];
    size_t len = 0;
    ssize_t n;
    while (len < sizeof buf - 1 && (n = read(master, buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t)n;
    buf[len] = 0;
    int st;
    if (waitpid(pid, &st, 0) != pid)
        return 1;
    /* The terminal turns "\n" into "\r\n". */
    for (char *p = buf; *p; p++)
        if (*p != '\r')
            putchar(*p);
    printf("child status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "daemon") && argv[2][0] == '/')
        return mode_daemon(argv[2]);
    if (argc == 2 && !strcmp(argv[1], "forkpty"))
        return mode_forkpty();
    fprintf(stderr, "usage: %s daemon /ABS/OUTFILE | forkpty\n", argv[0]);
    return 2;
}
