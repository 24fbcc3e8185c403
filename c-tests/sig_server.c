/*
 * sig_server MODE PORT [N]: a blocking server that stops on SIGINT/SIGTERM
 * the classic way: the handler (no SA_RESTART) sets a flag, and the call
 * the server is blocked in fails with EINTR.
 *
 *   accept  main waits in accept.
 *   select  main waits in select on the listener.
 *   read    a thread per connection echoes (blocked in read); main waits
 *           in accept. After N connections, on the signal, main sends
 *           SIGUSR1 (a no-op handler, no SA_RESTART) to every connection
 *           thread, whose read then fails with EINTR, and joins them all.
 *           The connection threads block SIGINT/SIGTERM: those go to main.
 *
 * Prints "listening" once ready, then how it stopped; exits 0.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

static volatile sig_atomic_t stop, stop_sig;
static void on_stop(int s)
{
    stop = 1;
    stop_sig = s;
}
static void on_usr1(int s) { (void)s; }

struct conn {
    pthread_t t;
    int fd;
    int eintr;
};

static void *serve(void *arg)
{
    struct conn *c = arg;
    char buf[256];
    for (;;) {
        ssize_t n = read(c->fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) {
            if (stop) {
                c->eintr = 1;
                break;
            }
            continue;
        }
        if (n <= 0 || write(c->fd, buf, (size_t)n) != n)
            break;
    }
    close(c->fd);
    return NULL;
}

static void on(int sig, void (*h)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h; /* no SA_RESTART */
    sigaction(sig, &sa, NULL);
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    const char *mode = argv[1];
    int port = atoi(argv[2]);
    int n = argc > 3 ? atoi(argv[3]) : 0;
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    on(SIGINT, on_stop);
    on(SIGTERM, on_stop);
    on(SIGUSR1, on_usr1);

    int l = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1024)) {
        perror("bind/listen");
        return 1;
    }
    printf("listening\n");
    fflush(stdout);

    if (strcmp(mode, "select") == 0) {
        fd_set rd;
        FD_ZERO(&rd);
        FD_SET(l, &rd);
        int r = select(l + 1, &rd, NULL, NULL, NULL);
        printf("select -> %d %s; stopped by %s\n", r, r < 0 ? strerrorname_np(errno) : "",
               stop ? sigabbrev_np(stop_sig) : "nothing");
        return 0;
    }

    struct conn *cs = calloc((size_t)(n > 0 ? n : 1), sizeof *cs);
    int have = 0;
    /* The connection threads inherit a mask without SIGINT/SIGTERM. */
    sigset_t st, old;
    sigemptyset(&st);
    sigaddset(&st, SIGINT);
    sigaddset(&st, SIGTERM);
    for (;;) {
        int fd = accept(l, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR && stop)
                break;
            if (errno == EINTR)
                continue;
            perror("accept");
            return 1;
        }
        if (have == n) {
            close(fd);
            continue;
        }
        cs[have].fd = fd;
        pthread_sigmask(SIG_BLOCK, &st, &old);
        pthread_create(&cs[have].t, NULL, serve, &cs[have]);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        have++;
    }
    for (int i = 0; i < have; i++)
        pthread_kill(cs[i].t, SIGUSR1);
    int eintr = 0;
    for (int i = 0; i < have; i++) {
        pthread_join(cs[i].t, NULL);
        eintr += cs[i].eintr;
    }
    printf("accept -> EINTR; stopped by %s; %d connection threads, %d left read with EINTR\n", sigabbrev_np(stop_sig),
           have, eintr);
    return 0;
}
