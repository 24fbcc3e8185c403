/* system() and lockf(F_LOCK) wait while another thread keeps running,
 * with glibc's results. glibc makes their waits inside libc (its own
 * waitpid, its own fcntl F_SETLKW), past corun's hooks: under corun with
 * one worker a ticker sharing the worker stopped for the whole command or
 * lock wait. Also checked: system's statuses (exit 3, a shell killed by
 * SIGTERM, NULL: a shell exists), SIGINT back at its action after the
 * call, the environment reaching the command. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int done, ticks;

static void *ticker(void *a)
{
    (void)a;
    while (!done) {
        usleep(20000);
        ticks++;
    }
    return NULL;
}

static const char *ran(int before) { return ticks - before >= 5 ? "yes" : "no"; }

int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, ticker, NULL);

    int before = ticks;
    int s = system("sleep 0.3; exit 4");
    printf("system: exit %d, the other thread ran meanwhile: %s\n", WEXITSTATUS(s), ran(before));
    printf("system(NULL): %s\n", system(NULL) ? "a shell exists" : "no shell");
    s = system("exit 3");
    printf("system(\"exit 3\"): exited %d, status %d\n", WIFEXITED(s), WEXITSTATUS(s));
    s = system("kill -TERM $$");
    printf("system(\"kill -TERM $$\"): signalled %d, signal %d\n", WIFSIGNALED(s), WTERMSIG(s));
    struct sigaction sa;
    sigaction(SIGINT, NULL, &sa);
    printf("SIGINT after system: %s\n", sa.sa_handler == SIG_DFL ? "default" : "changed");
    fflush(stdout);
    s = system("echo \"command sees SYSTEM_LOCKF=$SYSTEM_LOCKF\"");

    char path[] = "/tmp/system_lockf.XXXXXX";
    int fd = mkstemp(path);
    unlink(path);
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        lockf(fd, F_LOCK, 0);
        usleep(400000);
        _exit(0);
    }
    usleep(100000); /* the child holds the lock by now */
    before = ticks;
    int r = lockf(fd, F_LOCK, 0);
    printf("lockf(F_LOCK): %d, the other thread ran meanwhile: %s\n", r, ran(before));
    waitpid(p, NULL, 0);

    done = 1;
    pthread_join(t, NULL);
    return 0;
}
