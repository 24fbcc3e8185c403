/*
 * system_wait.c - system(3) and pclose(3) from threads while a ticker
 * thread counts 2 ms sleeps. glibc's system and pclose wait for the
 * command with their internal waitpid, which no hook sees: under corun
 * they held the worker, and the ticker stopped
 * (src/hooks/process/system.rs, popen.rs). Checks, natively and under
 * corun alike: exit statuses (7, 127 for a missing command), the shell's
 * signal mask and ignored set (the caller's blocked SIGUSR1 and ignored
 * SIGPIPE, never SIGCHLD), a SIGINT sent to the caller during the call
 * (ignored, as system does), two threads in system at once, and the
 * ticker running during every wait; pclose of a "w" stream whose command
 * reads to the end and then runs on, and of an "r" one, with statuses;
 * lockf(F_LOCK) on a file a child holds locked (glibc's fcntl F_SETLKW,
 * an internal call no hook sees); a shell killed by SIGTERM, the
 * environment reaching the command. (wait3 is in wait_family.c.)
 * Prints one line per fact;
 * scripts/tests/system_wait.sh requires the same lines natively and
 * under corun.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ticker.h"

/* At least 3 ticks of 2 ms during a wait of 200 ms or more. */
static void ticked(const char *what, long before) { ticker_report(what, before, 3); }

static int statuses[6];

static void *in_thread(void *arg)
{
    int n = (int)(long)arg;
    char cmd[64];
    snprintf(cmd, sizeof cmd, "sleep 0.2; exit %d", n);
    int st = system(cmd);
    statuses[n] = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return NULL;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    ticker_start(2000, 10000);

    long t0 = ticker_now();
    int st = system("sleep 0.3; exit 7");
    printf("exit status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    ticked("system", t0);

    st = system("exec /nonexistent/command 2>/dev/null");
    printf("a command that is not there: %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);

    printf("system(NULL) finds a shell: %s\n", system(NULL) ? "yes" : "no");

    st = system("kill -TERM $$");
    printf("a shell killed by SIGTERM: signalled %d, signal %d\n", WIFSIGNALED(st), WTERMSIG(st));

    st = system("echo \"the command sees SYSTEM_WAIT=$SYSTEM_WAIT\"");

    /* What the shell inherits: the caller's mask and ignored signals. */
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &s, NULL);
    signal(SIGPIPE, SIG_IGN);
    fflush(stdout);
    system("exec grep -E '^Sig(Blk|Ign)' /proc/self/status");
    pthread_sigmask(SIG_UNBLOCK, &s, NULL);
    signal(SIGPIPE, SIG_DFL);

    /* SIGINT to the caller while system runs: ignored. */
    t0 = ticker_now();
    st = system("kill -INT $PPID; sleep 0.1; echo after SIGINT");
    printf("survived a SIGINT during system: status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    struct sigaction now;
    sigaction(SIGINT, NULL, &now);
    printf("SIGINT's action after: %s\n", now.sa_handler == SIG_DFL ? "default" : "other");

    /* Two threads at once. */
    t0 = ticker_now();
    pthread_t a, b;
    pthread_create(&a, NULL, in_thread, (void *)3L);
    pthread_join(a, NULL);
    pthread_create(&a, NULL, in_thread, (void *)4L);
    pthread_create(&b, NULL, in_thread, (void *)5L);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("threads' exit statuses: %d %d %d\n", statuses[3], statuses[4], statuses[5]);
    ticked("threads in system", t0);

    /* pclose: the command sees the end of its input, then runs on. */
    t0 = ticker_now();
    FILE *p = popen("wc -c; sleep 0.3; exit 9", "w");
    fputs("twelve bytes", p);
    st = pclose(p);
    printf("pclose of a \"w\" stream: status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    ticked("pclose w", t0);
    t0 = ticker_now();
    p = popen("echo from the command; sleep 0.3; exit 8", "r");
    char line[64];
    printf("read: %s", fgets(line, sizeof line, p) ? line : "nothing\n");
    st = pclose(p);
    printf("pclose of an \"r\" stream: status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    ticked("pclose r", t0);

    /* lockf(F_LOCK) on a file a child holds locked for 300 ms. */
    char path[] = "/tmp/system_wait.XXXXXX";
    int fd = mkstemp(path);
    unlink(path);
    int sync[2];
    if (fd < 0 || pipe(sync) != 0)
        return 2;
    pid_t c = fork();
    if (c == 0) {
        if (lockf(fd, F_LOCK, 0) != 0 || write(sync[1], "l", 1) != 1)
            _exit(1);
        usleep(300000);
        _exit(0);
    }
    char ch;
    if (read(sync[0], &ch, 1) != 1)
        return 2;
    t0 = ticker_now();
    int lr = lockf(fd, F_LOCK, 0);
    printf("lockf after the child let go: %d\n", lr);
    ticked("lockf", t0);
    waitpid(c, &st, 0);

    ticker_stop();
    return 0;
}
