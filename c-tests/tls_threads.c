/* Thread identity: each thread has its own TLS, as natively.
 *
 * 200 threads (x 3 rounds) each check that a __thread variable starts at
 * its initial value and an errno of 0, set both to their own number,
 * park (usleep, read on a pipe), then check both kept their own values;
 * ctype, malloc, snprintf and strerror work in every thread; sched_getcpu
 * gives a real CPU. A thread forks: the child runs and exits with a status
 * the parent sees. Prints one line per check; the output is the same
 * natively and under corun. */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 200
static __thread int tv = 7;
static __thread char tname[32];
static int pipes[THREADS][2];
static int bad;

static void *worker(void *arg) {
    long i = (long)arg;
    if (tv != 7 || tname[0] != 0 || errno != 0) {
        printf("thread %ld: fresh TLS expected, tv=%d errno=%d\n", i, tv, errno);
        __atomic_add_fetch(&bad, 1, __ATOMIC_SEQ_CST);
    }
    tv = (int)i;
    errno = (int)i + 1000;
    snprintf(tname, sizeof tname, "t%ld", i);
    usleep(1000 + (i % 7) * 300);
    char c;
    if (read(pipes[i][0], &c, 1) != 1 || c != (char)i) {
        printf("thread %ld: read\n", i);
        __atomic_add_fetch(&bad, 1, __ATOMIC_SEQ_CST);
    }
    errno = (int)i + 1000; /* read succeeded: errno is unspecified, reset */
    usleep(500);
    char want[32];
    snprintf(want, sizeof want, "t%ld", i);
    if (tv != (int)i || errno != (int)i + 1000 || strcmp(tname, want) != 0) {
        printf("thread %ld: saw tv=%d errno=%d name=%s\n", i, tv, errno, tname);
        __atomic_add_fetch(&bad, 1, __ATOMIC_SEQ_CST);
    }
    char *p = malloc(1000 + (size_t)i);
    memset(p, (int)i, 1000 + (size_t)i);
    int ok = isalpha('a') && !isalpha('1') && toupper('q') == 'Q' && strlen(strerror(ENOENT)) > 5 &&
             sched_getcpu() >= 0;
    free(p);
    if (!ok) {
        printf("thread %ld: libc per-thread state broken\n", i);
        __atomic_add_fetch(&bad, 1, __ATOMIC_SEQ_CST);
    }
    return (void *)(long)tv;
}

static void *forker(void *arg) {
    (void)arg;
    tv = 99;
    fflush(stdout);
    pid_t p = fork();
    if (p == 0)
        _exit(tv == 99 ? 3 : 4);
    int st = 0;
    if (waitpid(p, &st, 0) != p)
        return (void *)1L;
    printf("fork in a thread: child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st));
    return NULL;
}

int main(void) {
    for (int round = 0; round < 3; round++) {
        pthread_t t[THREADS];
        for (long i = 0; i < THREADS; i++) {
            if (pipe(pipes[i]) != 0) {
                perror("pipe");
                return 1;
            }
            if (pthread_create(&t[i], NULL, worker, (void *)i) != 0) {
                perror("pthread_create");
                return 1;
            }
        }
        for (long i = THREADS - 1; i >= 0; i--) {
            char c = (char)i;
            if (write(pipes[i][1], &c, 1) != 1)
                return 1;
        }
        long sum = 0;
        for (int i = 0; i < THREADS; i++) {
            void *r;
            pthread_join(t[i], &r);
            sum += (long)r;
            close(pipes[i][0]);
            close(pipes[i][1]);
        }
        printf("round %d: sum of thread values %ld, main's tv %d, errors %d\n", round, sum, tv, bad);
    }
    pthread_t f;
    pthread_create(&f, NULL, forker, NULL);
    void *r;
    pthread_join(f, &r);
    printf("main after fork: tv %d, forker %s\n", tv, r == NULL ? "ok" : "failed");
    return bad != 0;
}
