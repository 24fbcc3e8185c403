/* Threads that fork, and children that make threads, then end by the
 * return of their only thread (CPython's test_threading,
 * test_3_join_in_forked_from_thread, does this; so does any thread that
 * forks a helper process).
 *
 * main starts FORKERS threads; each forks ROUNDS children in turn. Each
 * child makes 3 threads that fill 64 KiB of their stack and sum it, joins
 * them, has one of 2 more threads fork a grandchild (which makes a thread
 * and ends the same way), calls setegid(getegid()) (glibc signals every
 * thread it lists), and ends by returning from the forking thread's start
 * routine: the last thread's end, exit status 0. Each parent checks its
 * child's status and output line.
 *
 * Under corun, a child forked by a coroutine lost the stack its one kernel
 * thread ran on: glibc's fork put the worker thread's descriptor in its
 * stack cache as free, and the child's next kernel thread got that stack
 * (SIGSEGV in the child). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define FORKERS 4
#define ROUNDS 5

static int out_fd[2];

static void die(const char *what)
{
    perror(what);
    _exit(99);
}

static void *fill(void *arg)
{
    volatile unsigned char buf[64 * 1024];
    unsigned seed = (unsigned)(uintptr_t)arg;
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)(seed + i * 7);
    uint64_t sum = 0;
    for (size_t i = 0; i < sizeof buf; i++)
        sum += buf[i];
    return (void *)(uintptr_t)sum;
}

static uint64_t want_sum(unsigned seed)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < 64 * 1024; i++)
        sum += (unsigned char)(seed + i * 7);
    return sum;
}

/* Makes n threads that fill their stacks, joins them, checks the sums. */
static int fill_threads(int n)
{
    pthread_t t[4];
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, fill, (void *)(uintptr_t)(i + 1)))
            die("pthread_create");
    int bad = 0;
    for (int i = 0; i < n; i++) {
        void *r;
        if (pthread_join(t[i], &r))
            die("pthread_join");
        bad += (uint64_t)(uintptr_t)r != want_sum((unsigned)i + 1);
    }
    return bad;
}

/* Waits for child pid; 1 if it exited 0. */
static int exited_0(pid_t pid)
{
    int st;
    if (waitpid(pid, &st, 0) != pid)
        die("waitpid");
    if (WIFSIGNALED(st))
        fprintf(stderr, "child %d killed by signal %d\n", (int)pid, WTERMSIG(st));
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void *grandchild_body(void *arg)
{
    (void)arg;
    if (fill_threads(1))
        die("grandchild: a thread's stack sum");
    return NULL;
}

/* In a child: forks a grandchild whose forking thread makes a thread and
 * returns. Returns 1 if the grandchild exited 0. */
static void *fork_grandchild(void *arg)
{
    (void)arg;
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        grandchild_body(NULL);
        pthread_exit(NULL); /* the grandchild's only thread ends: exit 0 */
    }
    return (void *)(uintptr_t)exited_0(pid);
}

static void *forker(void *arg)
{
    int id = (int)(uintptr_t)arg;
    int ok = 0;
    for (int r = 0; r < ROUNDS; r++) {
        pid_t pid = fork();
        if (pid < 0)
            die("fork");
        if (pid == 0) {
            int bad = fill_threads(3);
            pthread_t g, idle;
            void *gok;
            if (pthread_create(&idle, NULL, fill, (void *)(uintptr_t)9) ||
                pthread_create(&g, NULL, fork_grandchild, NULL))
                die("pthread_create");
            if (pthread_join(g, &gok) || pthread_join(idle, NULL))
                die("pthread_join");
            if (setegid(getegid()))
                die("setegid");
            char line[64];
            int n = snprintf(line, sizeof line, "%d.%d %s %s\n", id, r, bad ? "bad" : "sums",
                             gok ? "grandchild-0" : "grandchild-failed");
            if (write(out_fd[1], line, (size_t)n) != n)
                die("write");
            return NULL; /* the child's last thread ends: exit status 0 */
        }
        ok += exited_0(pid);
    }
    return (void *)(uintptr_t)ok;
}

int main(void)
{
    if (pipe(out_fd))
        die("pipe");
    pthread_t t[FORKERS];
    for (int i = 0; i < FORKERS; i++)
        if (pthread_create(&t[i], NULL, forker, (void *)(uintptr_t)i))
            die("pthread_create");
    int ok = 0;
    for (int i = 0; i < FORKERS; i++) {
        void *r;
        if (pthread_join(t[i], &r))
            die("pthread_join");
        ok += (int)(uintptr_t)r;
    }
    close(out_fd[1]);
    char buf[4096];
    size_t len = 0;
    ssize_t n;
    while ((n = read(out_fd[0], buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t)n;
    buf[len] = 0;
    int good = 0;
    for (char *p = buf; (p = strstr(p, " sums grandchild-0\n")); p++)
        good++;
    printf("%d of %d children exited 0, %d with good sums and a grandchild that exited 0\n", ok,
           FORKERS * ROUNDS, good);
    return ok == FORKERS * ROUNDS && good == FORKERS * ROUNDS ? 0 : 1;
}
