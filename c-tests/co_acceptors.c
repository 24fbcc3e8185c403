/*
 * co_acceptors PORT N: N coroutines block in accept() on one listening
 * socket (the pre-threaded server shape), each echoing the connection it
 * got before accepting again. With two workers, two acceptors woken for
 * one connection must not both reach the blocking accept: the loser would
 * hold its worker, and the echoes of its worker's coroutines, until the
 * next connection. Runs until killed.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <corun.h>

static int ls;

static void *acceptor(void *arg)
{
    (void)arg;
    char buf[16384];
    for (;;) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0)
            continue;
        ssize_t n;
        while ((n = read(fd, buf, sizeof buf)) > 0)
            if (write(fd, buf, (size_t)n) != n)
                break;
        close(fd);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    ls = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 4096)) {
        perror("bind/listen");
        return 1;
    }
    int n = atoi(argv[2]);
    for (int i = 0; i < n; i++)
        corun_detach(corun_spawn(acceptor, NULL));
    for (;;)
        pause();
}
