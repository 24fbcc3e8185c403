/* freopen of stdin replaces fd 0 behind the program's back (glibc closes
 * and reopens it internally, through no hooked call). A thread then reads
 * fd 0 and must wake when the new pipe gets data. Before, corun kept fd 0's
 * old epoll registration and the read never woke (the test's timeout
 * catches it). */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int writer_fd;

static void *late_writer(void *arg)
{
    usleep(50000);
    const char *msg = arg;
    if (write(writer_fd, msg, strlen(msg)) < 0)
        perror("write");
    return NULL;
}

static void read_stdin(const char *want)
{
    char buf[64] = {0};
    ssize_t n = read(0, buf, sizeof buf - 1);
    printf("read %zd bytes: %s (%s)\n", n, buf, n > 0 && strcmp(buf, want) == 0 ? "ok" : "WRONG");
}

int main(void)
{
    int a[2], b[2];
    if (pipe(a) || pipe(b))
        return 1;
    if (dup2(a[0], 0) != 0)
        return 1;
    writer_fd = a[1];
    pthread_t t;
    /* A first read parks on fd 0 (pipe a), so corun registers it. */
    pthread_create(&t, NULL, late_writer, "first");
    read_stdin("first");
    pthread_join(t, NULL);
    /* stdin now reads pipe b, reopened at fd 0 by glibc itself. */
    char path[64];
    snprintf(path, sizeof path, "/dev/fd/%d", b[0]);
    if (!freopen(path, "r", stdin)) {
        perror("freopen");
        return 1;
    }
    printf("stdin is fd %d again\n", fileno(stdin));
    writer_fd = b[1];
    pthread_create(&t, NULL, late_writer, "second");
    read_stdin("second");
    pthread_join(t, NULL);
    return 0;
}
