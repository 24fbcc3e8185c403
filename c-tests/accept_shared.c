/* A child of a preforking server in miniature: it got its listener from
 * its parent (the fd number in argv[1]) and runs two threads, one that
 * accepts on it in a loop (a blocking accept, as Apache's worker MPM makes
 * with one listener; each connection is closed at once) and one that
 * writes a '.' to stdout every 2 ms. Other processes accept on the same
 * listener. A thread waiting in accept, because another process took the
 * connection it saw pending, must not stop the other thread: natively it
 * never does. scripts/tests/accept_shared.sh drives it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void *ticker(void *arg) {
    (void)arg;
    for (;;) {
        if (write(1, ".", 1) != 1)
            exit(0);
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: accept_shared LISTENER_FD\n");
        return 2;
    }
    int lfd = atoi(argv[1]);
    pthread_t t;
    if (pthread_create(&t, NULL, ticker, NULL) != 0)
        return 2;
    for (;;) {
        int c = accept(lfd, NULL, NULL);
        if (c >= 0)
            close(c);
    }
}
