/* 300 forks while other threads keep a mutex, a condition variable, thread
 * creation and joining busy (and so corun's own tables and locks). Each
 * child signals the condition variable a parent thread waits on (that
 * thread does not exist in the child: nothing may run), makes a thread and
 * joins it, and exits 7. It does not lock the program's mutex, which a
 * parent thread may have held at the fork (natively too that would hang).
 * A child that hangs is killed by its alarm and counted. The output is the
 * same natively and under corun. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static volatile int stop, events;

static void *nothing(void *a) { return a; }

static void *signaller(void *arg)
{
    (void)arg;
    while (!stop) {
        pthread_mutex_lock(&m);
        events++;
        pthread_cond_broadcast(&c);
        pthread_mutex_unlock(&m);
        pthread_t t;
        pthread_create(&t, NULL, nothing, NULL);
        pthread_join(t, NULL);
    }
    return NULL;
}

static void *waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&m);
    while (!stop)
        pthread_cond_wait(&c, &m);
    pthread_mutex_unlock(&m);
    return NULL;
}

int main(void)
{
    pthread_t s1, s2, w;
    pthread_create(&s1, NULL, signaller, NULL);
    pthread_create(&s2, NULL, signaller, NULL);
    pthread_create(&w, NULL, waiter, NULL);
    int good = 0, hung = 0, other = 0;
    for (int i = 0; i < 300; i++) {
        fflush(stdout);
        pid_t p = fork();
        if (p == 0) {
            alarm(5);
            pthread_cond_signal(&c);
            pthread_t t;
            if (pthread_create(&t, NULL, nothing, NULL) != 0 || pthread_join(t, NULL) != 0)
                _exit(3);
            _exit(7);
        }
        int st;
        if (waitpid(p, &st, 0) != p)
            other++;
        else if (WIFEXITED(st) && WEXITSTATUS(st) == 7)
            good++;
        else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
            hung++;
        else
            other++;
        if (i % 10 == 0)
            usleep(1000); /* let the threads run between forks */
    }
    pthread_mutex_lock(&m);
    stop = 1;
    pthread_cond_broadcast(&c);
    pthread_mutex_unlock(&m);
    pthread_join(s1, NULL);
    pthread_join(s2, NULL);
    pthread_join(w, NULL);
    printf("300 forks: %d children exited 7, %d hung, %d other; the parent's threads saw events: %s\n", good, hung,
           other, events > 0 ? "yes" : "no");
    return good == 300 ? 0 : 1;
}
