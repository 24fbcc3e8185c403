// A child whose parent-death signal is SIGTERM (prctl PR_SET_PDEATHSIG)
// gets it when the thread that forked it ends, not when the process does
// (prctl(2): the "parent" is the creating thread). NOT FIXED: under corun
// the child's parent is the worker's kernel thread, which outlives the
// coroutine: the child lives on (here it exits 0 after its 3 s sleep).
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t child;
static int pfd[2];

static void *forker(void *a) {
    (void)a;
    child = fork();
    if (child == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        char c = 'r';
        if (write(pfd[1], &c, 1) < 0)
            _exit(3);
        sleep(3);
        _exit(0);
    }
    char c;
    if (read(pfd[0], &c, 1) != 1)
        return NULL;
    return NULL;
}

int main(void) {
    if (pipe(pfd))
        return 1;
    pthread_t t;
    pthread_create(&t, NULL, forker, NULL);
    pthread_join(t, NULL);
    int st;
    pid_t w = waitpid(child, &st, 0);
    printf("child waited: %d, killed by SIGTERM: %d\n", w == child,
           WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    return 0;
}
