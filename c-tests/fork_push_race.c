/* Forks while another thread keeps pushing to the forking thread's
 * worker's queue. 100 threads wait on one condition variable; a
 * broadcaster wakes them all, then spins a varying while before the next
 * broadcast, so the wake-ups land at any point of main's forks (waking a
 * thread homed on another worker is a push to that worker's queue). Main
 * forks 1,000 times; each child exits 7 at once. A push cut in half by
 * the fork (its slot reserved, not yet written) made the child spin for
 * ever inside fork, before it could run anything: fork_storm hung about
 * one run in 100. The parent waits for each child at most 10 s, then
 * kills it and counts it as hung if the kill is what ended it. The output
 * is the same natively and under corun. */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FORKS 1000
#define WAITERS 100

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static unsigned long gen;
static volatile int stop;

static void *waiter(void *arg)
{
    (void)arg;
    unsigned long seen = 0;
    pthread_mutex_lock(&m);
    while (!stop) {
        while (gen == seen && !stop)
            pthread_cond_wait(&c, &m);
        seen = gen;
    }
    pthread_mutex_unlock(&m);
    return NULL;
}

static long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

static void *broadcaster(void *arg)
{
    (void)arg;
    unsigned r = 1;
    while (!stop) {
        pthread_mutex_lock(&m);
        gen++;
        pthread_cond_broadcast(&c);
        pthread_mutex_unlock(&m);
        r = r * 1103515245u + 12345u;
        long until = now_us() + (r >> 16) % 300;
        while (now_us() < until && !stop)
            ;
        usleep(1); /* let this worker's other threads run */
    }
    return NULL;
}

/* Waits for child p at most 10 s (a pidfd's readiness): 1 if it exited 7;
 * a child still there is killed and counted in *hung. */
static int reaped_ok(pid_t p, int *hung)
{
    int fd = (int)syscall(SYS_pidfd_open, p, 0);
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    if (fd >= 0 && poll(&pf, 1, 10000) != 1)
        kill(p, SIGKILL);
    if (fd >= 0)
        close(fd);
    int st;
    if (waitpid(p, &st, 0) != p)
        return 0;
    if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
        ++*hung;
    return WIFEXITED(st) && WEXITSTATUS(st) == 7;
}

int main(void)
{
    pthread_t b, w[WAITERS];
    pthread_create(&b, NULL, broadcaster, NULL);
    for (int i = 0; i < WAITERS; i++)
        pthread_create(&w[i], NULL, waiter, NULL);
    int good = 0, hung = 0;
    for (int i = 0; i < FORKS; i++) {
        pid_t p = fork();
        if (p == 0)
            _exit(7);
        if (p < 0) {
            perror("fork");
            break;
        }
        good += reaped_ok(p, &hung);
    }
    pthread_mutex_lock(&m);
    stop = 1;
    pthread_cond_broadcast(&c);
    pthread_mutex_unlock(&m);
    pthread_join(b, NULL);
    for (int i = 0; i < WAITERS; i++)
        pthread_join(w[i], NULL);
    printf("%d forks: %d children exited 7, %d hung\n", FORKS, good, hung);
    return good == FORKS ? 0 : 1;
}
