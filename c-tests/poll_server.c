/*
 * poll_server PORT NCONN TICK_MS
 *
 * A single-threaded echo server built on poll(), as older servers are:
 * one poll() over the listening socket, a periodic timerfd and every
 * client, blocking accept/read/write on whatever poll reports. It serves
 * until NCONN clients have come and gone, then prints
 * "poll_server: served N clients, T timer ticks, B bytes" and exits 0.
 * Nothing here knows about corun: under corun, main is a coroutine and its
 * poll() parks on all the fds at once. (Under corun, transcript.h's ticker
 * coroutine also runs, and the count it reached is printed: with one
 * worker, it only moves while main is parked.)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "transcript.h"

#define MAXFDS 4096

static struct pollfd fds[MAXFDS];
static char buf[65536];

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s PORT NCONN TICK_MS\n", argv[0]);
        return 2;
    }
    tr_start();
    int port = atoi(argv[1]), want = atoi(argv[2]), tick_ms = atoi(argv[3]);
    int l = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1024)) {
        perror("listen");
        return 2;
    }
    int t = timerfd_create(CLOCK_MONOTONIC, 0);
    struct itimerspec its = {{0, tick_ms * 1000000L}, {0, tick_ms * 1000000L}};
    timerfd_settime(t, 0, &its, NULL);
    int n = 2, served = 0;
    uint64_t ticks = 0, bytes = 0;
    fds[0] = (struct pollfd){l, POLLIN, 0};
    fds[1] = (struct pollfd){t, POLLIN, 0};
    while (served < want) {
        int r = poll(fds, (nfds_t)n, -1);
        if (r < 0) {
            perror("poll");
            return 1;
        }
        if (fds[1].revents & POLLIN) {
            uint64_t v;
            if (read(t, &v, 8) != 8) {
                perror("timerfd read");
                return 1;
            }
            ticks += v;
        }
        for (int i = 2; i < n; i++) {
            if (!fds[i].revents)
                continue;
            ssize_t got = read(fds[i].fd, buf, sizeof buf);
            if (got > 0 && write_all(fds[i].fd, buf, (size_t)got) == 0) {
                bytes += (uint64_t)got;
                continue;
            }
            if (got < 0)
                fprintf(stderr, "poll_server: read: %s\n", strerror(errno));
            close(fds[i].fd);
            served++;
            fds[i] = fds[--n];
            i--;
        }
        if (fds[0].revents & POLLIN) {
            int c = accept(l, NULL, NULL);
            if (c < 0) {
                perror("accept");
                return 1;
            }
            if (n == MAXFDS) {
                fprintf(stderr, "poll_server: too many clients\n");
                return 1;
            }
            fds[n++] = (struct pollfd){c, POLLIN, 0};
        }
    }
    printf("poll_server: served %d clients, %llu timer ticks, %llu bytes, ticker %ld\n", served,
           (unsigned long long)ticks, (unsigned long long)bytes, tr_ticks);
    return 0;
}
