/*
 * fork_in_handler.c - a child forked inside a signal handler unblocks
 * signals and takes them (PostgreSQL 15's postmaster starts its walwriter
 * and autovacuum launcher from its SIGCHLD handler, whose sa_mask blocks
 * everything; the child unblocks with sigprocmask and must then get the
 * SIGTERM of a fast shutdown).
 *
 * The parent waits in select with signals open until a timer's SIGALRM,
 * whose handler (sa_mask: every signal) forks. The child, still inside that handler, sets an empty
 * mask and waits in poll for SIGTERM, which the parent sends once the
 * child said it is ready (a pipe); the child's SIGTERM handler runs, the
 * child reports it and exits 0. Prints one line per step; the test
 * requires the same output natively and under corun.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static int ready[2];
static volatile sig_atomic_t child_pid, got_term;

static void on_term(int sig)
{
    (void)sig;
    got_term = 1;
}

static void child_body(void)
{
    sigset_t m, none;
    sigprocmask(SIG_SETMASK, NULL, &m);
    printf("child: in the handler, SIGTERM blocked: %d\n", sigismember(&m, SIGTERM));
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    sigprocmask(SIG_SETMASK, NULL, &m);
    printf("child: after sigprocmask, SIGTERM blocked: %d\n", sigismember(&m, SIGTERM));
    fflush(stdout);
    if (write(ready[1], "r", 1) != 1)
        _exit(3);
    /* Up to 5 s for the SIGTERM: poll fails with EINTR when it comes. */
    for (int i = 0; i < 50 && !got_term; i++) {
        int r = poll(NULL, 0, 100);
        if (r < 0 && errno != EINTR)
            _exit(4);
    }
    printf("child: SIGTERM handled: %d\n", (int)got_term);
    fflush(stdout);
    _exit(got_term ? 0 : 1);
}

static void on_alarm(int sig)
{
    (void)sig;
    pid_t p = fork();
    if (p == 0)
        child_body();
    child_pid = p;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (pipe(ready))
        return 2;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = on_alarm;
    sigfillset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);

    /* Everything blocked outside the wait, as the postmaster does. */
    sigset_t all, open;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    struct itimerval it = {{0, 0}, {0, 50000}};
    setitimer(ITIMER_REAL, &it, NULL); /* SIGALRM during the select */
    sigemptyset(&open);
    sigprocmask(SIG_SETMASK, &open, NULL);
    struct timeval tv = {5, 0};
    int r = select(0, NULL, NULL, NULL, &tv);
    int e = errno;
    sigprocmask(SIG_SETMASK, &all, NULL);
    if (child_pid <= 0)
        return 2;
    char c;
    if (read(ready[0], &c, 1) != 1)
        return 2;
    printf("parent: select = %d (%s), child forked: %d\n", r, r < 0 ? strerrorname_np(e) : "-",
           child_pid > 0);
    kill(child_pid, SIGTERM);
    int st;
    if (waitpid(child_pid, &st, 0) != child_pid)
        return 2;
    printf("parent: child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
