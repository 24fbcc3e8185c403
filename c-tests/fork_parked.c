/* A forked child (no exec) whose thread parks on a read of stdin, for
 * `corun dump` of a forked child (scripts/tests/dump_forked.sh): the
 * parent forks, the child starts the thread, prints "child PID ready" and
 * joins it; one line on stdin ends it. The parent prints how the child
 * ended. */
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static void *forked_reader(void *arg) {
    char c;
    (void)arg;
    while (read(0, &c, 1) == 1 && c != '\n')
        ;
    return NULL;
}

int main(void) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        pthread_t t;
        if (pthread_create(&t, NULL, forked_reader, NULL) != 0)
            _exit(2);
        printf("child %d ready\n", (int)getpid());
        fflush(stdout);
        pthread_join(t, NULL);
        _exit(0);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid) {
        perror("waitpid");
        return 1;
    }
    printf("child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
}
