/*
 * forking_echo PORT MAXCONN
 *
 * The classic fork-per-connection echo server: the parent accepts, forks,
 * closes its copy and reaps children with waitpid(WNOHANG); each child
 * echoes one connection with blocking read/write and exits. The parent
 * exits after MAXCONN connections have been served and reaped.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static void echo(int fd)
{
    char buf[8192];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0)
            break;
        if (write(fd, buf, (size_t)n) != n)
            break;
    }
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    int maxconn = atoi(argv[2]);
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 1024)) {
        perror("bind/listen");
        return 1;
    }
    int served = 0, reaped = 0, bad = 0;
    while (served < maxconn) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR)
                continue;
            perror("accept");
            return 1;
        }
        pid_t pid = fork();
        if (pid == 0) {
            close(ls);
            echo(fd);
            _exit(0);
        }
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        close(fd);
        served++;
        int st;
        pid_t r;
        while ((r = waitpid(-1, &st, WNOHANG)) > 0) {
            reaped++;
            bad += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        }
    }
    int st;
    while (reaped < served && waitpid(-1, &st, 0) > 0) {
        reaped++;
        bad += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    printf("forking_echo: served %d, reaped %d, bad exits %d\n", served, reaped, bad);
    return bad ? 1 : 0;
}
