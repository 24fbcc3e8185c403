/* The program's lowest fds are its own under CORUN_DUMP_SIGNAL too: the
 * first open gets fd 3, and dup2 onto 3 and close of 3 work. corun's dump
 * eventfd stayed at the lowest free number (3), which dup2 and close
 * refuse as corun's own: a Ruby spawn redirecting fd 3 failed with EBADF.
 * scripts/tests/dump_fd_low.sh. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void) {
    int fd = open("/dev/null", O_RDONLY);
    printf("first open: fd %d\n", fd);
    if (fd >= 0)
        close(fd);
    int p[2];
    if (pipe(p) != 0) {
        perror("pipe");
        return 1;
    }
    /* Out of the way of fd 3. */
    int rd = fcntl(p[0], F_DUPFD, 20), wr = fcntl(p[1], F_DUPFD, 20);
    close(p[0]);
    close(p[1]);
    p[0] = rd;
    p[1] = wr;
    int r = dup2(p[1], 3);
    printf("dup2 onto 3: %s\n", r == 3 ? "3" : strerror(errno));
    if (r == 3 && write(3, "x", 1) == 1) {
        char c = 0;
        ssize_t n = read(p[0], &c, 1);
        printf("read through it: %zd '%c'\n", n, c);
    }
    printf("close 3: %d\n", close(3));
    return 0;
}
