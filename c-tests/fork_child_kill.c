/*
 * fork_child_kill.c - signals aimed at a thread of a forked child reach it.
 *
 * A forked child is a new thread group: its one thread has a new tid. The
 * program forks (after it made a thread, so that the runtime runs), and
 * the child sends signals to its own threads with pthread_kill:
 *
 *   1. SIGUSR2, handled, to itself (main of the child): the handler runs;
 *   2. SIGUSR1, handled, to a thread it made: the handler runs there;
 *   3. SIGTERM, left at its default action, to that thread: the child is
 *      killed by SIGTERM (pthread_kill returns 0 first, as natively).
 *
 * The parent prints what each step returned and how the child ended; the
 * test script compares that transcript with the native one.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t got_usr1, got_usr2;
static volatile int thread_ready;

static void on_usr1(int sig) { (void)sig; got_usr1 = 1; }
static void on_usr2(int sig) { (void)sig; got_usr2 = 1; }

static void *nap(void *arg)
{
    (void)arg;
    __atomic_store_n(&thread_ready, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < 4000 && !got_usr1; i++)
        usleep(1000);
    /* Wait for the SIGTERM that ends the child (bounded). */
    for (int i = 0; i < 4000; i++)
        usleep(1000);
    return NULL;
}

static void *nothing(void *arg) { return arg; }

/* The child: reports each step on the pipe fd `out`, one line each. */
static void child(int out)
{
    char line[128];
    int r = pthread_kill(pthread_self(), SIGUSR2);
    for (int i = 0; i < 2000 && !got_usr2; i++)
        usleep(1000);
    dprintf(out, "kill self USR2: %s, handler ran: %d\n", r ? strerror(r) : "0", (int)got_usr2);

    pthread_t t;
    if (pthread_create(&t, NULL, nap, NULL) != 0) {
        dprintf(out, "pthread_create failed\n");
        _exit(2);
    }
    while (!__atomic_load_n(&thread_ready, __ATOMIC_SEQ_CST))
        usleep(1000);
    r = pthread_kill(t, SIGUSR1);
    for (int i = 0; i < 2000 && !got_usr1; i++)
        usleep(1000);
    dprintf(out, "kill thread USR1: %s, handler ran: %d\n", r ? strerror(r) : "0", (int)got_usr1);

    r = pthread_kill(t, SIGTERM);
    snprintf(line, sizeof line, "kill thread TERM: %s\n", r ? strerror(r) : "0");
    if (write(out, line, strlen(line)) < 0)
        _exit(2);
    pthread_join(t, NULL);
    dprintf(out, "still alive after SIGTERM\n");
    _exit(3);
}

int main(void)
{
    /* A thread first: the runtime (under corun) starts its workers. */
    pthread_t t0;
    pthread_create(&t0, NULL, nothing, NULL);
    pthread_join(t0, NULL);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_handler = on_usr2;
    sigaction(SIGUSR2, &sa, NULL);

    int p[2];
    if (pipe(p) != 0)
        return 1;
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        close(p[0]);
        child(p[1]);
    }
    close(p[1]);
    char buf[512];
    size_t n = 0;
    ssize_t k;
    while (n < sizeof buf - 1 && (k = read(p[0], buf + n, sizeof buf - 1 - n)) > 0)
        n += (size_t)k;
    buf[n] = 0;
    int st;
    if (waitpid(pid, &st, 0) != pid)
        return 1;
    printf("%s", buf);
    if (WIFSIGNALED(st))
        printf("child killed by %s\n", WTERMSIG(st) == SIGTERM ? "SIGTERM" : strsignal(WTERMSIG(st)));
    else
        printf("child exited %d\n", WEXITSTATUS(st));
    return 0;
}
