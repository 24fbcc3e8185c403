/*
 * pool_echo PORT [WORKERS]
 *
 * The other classic shape of a threaded server, a plain pthread program
 * that knows nothing of corun: a listener thread accepts connections and
 * hands them to WORKERS (default 64) pre-started worker threads through a
 * queue guarded by a mutex and a condition variable. A worker serves one
 * connection at a time until EOF: it makes the socket non-blocking itself
 * and waits for it with poll and a one-second timeout, echoing every byte.
 * Runs until killed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define QCAP 65536

static pthread_mutex_t q_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cv = PTHREAD_COND_INITIALIZER;
static int q_fds[QCAP];
static int q_head, q_len;

static void push(int fd)
{
    pthread_mutex_lock(&q_mu);
    if (q_len == QCAP) {
        pthread_mutex_unlock(&q_mu);
        close(fd);
        return;
    }
    q_fds[(q_head + q_len) % QCAP] = fd;
    q_len++;
    pthread_cond_signal(&q_cv);
    pthread_mutex_unlock(&q_mu);
}

static int pop(void)
{
    pthread_mutex_lock(&q_mu);
    while (q_len == 0)
        pthread_cond_wait(&q_cv, &q_mu);
    int fd = q_fds[q_head];
    q_head = (q_head + 1) % QCAP;
    q_len--;
    pthread_mutex_unlock(&q_mu);
    return fd;
}

/* Waits until fd is ready for ev; 0 on readiness, -1 on error. */
static int wait_for(int fd, short ev)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = ev};
        int n = poll(&p, 1, 1000);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR) {
            perror("poll");
            return -1;
        }
        /* timeout: keep waiting (an idle client) */
    }
}

static void serve(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    char buf[16384];
    for (;;) {
        ssize_t got = read(fd, buf, sizeof buf);
        if (got == 0)
            break;
        if (got < 0) {
            if (errno == EAGAIN || errno == EINTR) {
                if (wait_for(fd, POLLIN))
                    break;
                continue;
            }
            break;
        }
        ssize_t off = 0;
        while (off < got) {
            ssize_t w = write(fd, buf + off, (size_t)(got - off));
            if (w < 0) {
                if (errno == EAGAIN || errno == EINTR) {
                    if (wait_for(fd, POLLOUT))
                        goto out;
                    continue;
                }
                fprintf(stderr, "pool_echo: write: %s\n", strerror(errno));
                goto out;
            }
            off += w;
        }
    }
out:
    close(fd);
}

static void *worker(void *arg)
{
    (void)arg;
    for (;;)
        serve(pop());
    return NULL;
}

static void *listener(void *arg)
{
    int ls = (int)(intptr_t)arg;
    for (;;) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE) {
                usleep(10000);
                continue;
            }
            perror("accept");
            exit(1);
        }
        push(fd);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PORT [WORKERS]\n", argv[0]);
        return 2;
    }
    int nworkers = argc > 2 ? atoi(argv[2]) : 64;
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);

    int ls = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 4096)) {
        perror("bind/listen");
        return 1;
    }
    for (int i = 0; i < nworkers; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, NULL)) {
            perror("pthread_create");
            return 1;
        }
    }
    pthread_t l;
    pthread_create(&l, NULL, listener, (void *)(intptr_t)ls);
    fprintf(stderr, "pool_echo: listening on %s with %d workers\n", argv[1], nworkers);
    pthread_join(l, NULL);
    return 0;
}
