/*
 * threaded_echo PORT
 *
 * The classic thread-per-connection echo server, a plain pthread program
 * that knows nothing of corun: an accept loop in main, one detached
 * pthread per connection with the default stack size, blocking read and
 * write. Whenever the number of live connection threads reaches a new
 * multiple of 1,000 it says so on stderr ("N connection threads alive"),
 * so a test can look at the process while they all exist. Runs until
 * killed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

static atomic_int live, reported;

static void *serve(void *arg)
{
    int fd = (int)(intptr_t)arg;
    int n = atomic_fetch_add(&live, 1) + 1;
    int r = atomic_load(&reported);
    if (n % 1000 == 0 && n > r && atomic_compare_exchange_strong(&reported, &r, n))
        fprintf(stderr, "threaded_echo: %d connection threads alive\n", n);
    char buf[16384];
    for (;;) {
        ssize_t got = read(fd, buf, sizeof buf);
        if (got <= 0)
            break;
        ssize_t off = 0;
        while (off < got) {
            ssize_t w = write(fd, buf + off, (size_t)(got - off));
            if (w <= 0) {
                fprintf(stderr, "threaded_echo: write: %s\n", strerror(errno));
                goto out;
            }
            off += w;
        }
    }
out:
    close(fd);
    atomic_fetch_sub(&live, 1);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PORT\n", argv[0]);
        return 2;
    }
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
    fprintf(stderr, "threaded_echo: listening on %s\n", argv[1]);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
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
            return 1;
        }
        pthread_t t;
        int e = pthread_create(&t, &attr, serve, (void *)(intptr_t)fd);
        if (e) {
            fprintf(stderr, "threaded_echo: pthread_create: %s\n", strerror(e));
            close(fd);
            usleep(10000);
        }
    }
}
