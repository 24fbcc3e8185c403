/*
 * co_echo_server PORT [WORKERS_HINT]
 *
 * An echo server written for corun's C API: one coroutine per connection
 * (corun_spawn), plain blocking accept/read/write. Runs until killed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <corun.h>

static void *serve(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[16384];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0)
            break;
        ssize_t w = write(fd, buf, (size_t)n);
        if (w != n) {
            fprintf(stderr, "echo: short write %zd of %zd (%s)\n", w, n, strerror(errno));
            break;
        }
    }
    close(fd);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PORT\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 4096)) {
        perror("bind/listen");
        return 1;
    }
    fprintf(stderr, "co_echo_server: listening (main coroutine id %llu)\n",
            (unsigned long long)corun_self_id());
    int short_of_fds = 0;
    for (;;) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE) {
                /* Out of fds: say so once per shortage, wait for some to free up. */
                if (!short_of_fds)
                    fprintf(stderr, "co_echo_server: accept: %s; waiting for fds\n", strerror(errno));
                short_of_fds = 1;
                usleep(10000);
                continue;
            }
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            perror("accept");
            return 1;
        }
        if (short_of_fds)
            fprintf(stderr, "co_echo_server: accepting again\n");
        short_of_fds = 0;
        corun_co_t *co = corun_spawn(serve, (void *)(intptr_t)fd);
        if (!co) {
            perror("corun_spawn");
            close(fd);
            continue;
        }
        corun_detach(co);
    }
}
