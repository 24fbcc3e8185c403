/* Busy-wait reads: a thread retries a read that fails with EAGAIN (the
 * program's own O_NONBLOCK, or MSG_DONTWAIT) until a byte another thread
 * writes arrives. Natively the kernel preempts the spinning thread and the
 * writer runs. Under corun, with the writer homed on the spinner's worker,
 * the reads never parked and the writer never ran. Each way (read, readv,
 * recv MSG_DONTWAIT on a blocking socket, recvfrom and recvmsg on a
 * non-blocking one) gives up after 10 s and says so instead of hanging. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static int fds[2];

static void *writer(void *a)
{
    (void)a;
    if (write(fds[1], "x", 1) != 1)
        perror("write");
    return NULL;
}

static ssize_t attempt(const char *how, char *c)
{
    if (!strcmp(how, "read"))
        return read(fds[0], c, 1);
    if (!strcmp(how, "readv")) {
        struct iovec v = {c, 1};
        return readv(fds[0], &v, 1);
    }
    if (!strcmp(how, "recv MSG_DONTWAIT"))
        return recv(fds[0], c, 1, MSG_DONTWAIT);
    if (!strcmp(how, "recvfrom"))
        return recvfrom(fds[0], c, 1, 0, NULL, NULL);
    struct iovec v = {c, 1};
    struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
    return recvmsg(fds[0], &m, 0);
}

int main(void)
{
    const char *hows[] = {"read", "readv", "recv MSG_DONTWAIT", "recvfrom", "recvmsg"};
    for (int i = 0; i < 5; i++) {
        int ok;
        if (i < 2)
            ok = pipe2(fds, O_NONBLOCK) == 0;
        else if (i == 2)
            ok = socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0;
        else
            ok = socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) == 0;
        if (!ok)
            return 2;
        pthread_t t;
        pthread_create(&t, NULL, writer, NULL);
        time_t start = time(NULL);
        char c = 0;
        ssize_t r;
        while ((r = attempt(hows[i], &c)) < 0 && errno == EAGAIN && time(NULL) - start < 10)
            ;
        if (r == 1 && c == 'x') {
            pthread_join(t, NULL);
            printf("%s: the byte came\n", hows[i]);
        } else {
            printf("%s: no byte in 10 s (%zd)\n", hows[i], r);
            fflush(stdout);
            _exit(1);
        }
        close(fds[0]);
        close(fds[1]);
    }
    return 0;
}
