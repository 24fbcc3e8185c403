/* A thread writes 64 KiB to a pty's slave in 8 KiB blocking writes while
 * main reads the master (blocking reads; on 1 worker both share it). A
 * tty takes a blocking write whole, waiting in the kernel while it has
 * less room than asked (a pty slave takes about 10 KiB with no reader), so
 * corun's "poll writable, then write" held the worker in the kernel and
 * the reader never ran: a hang (libuv's tty_pty_partial, same pattern).
 * Also: writes to /dev/null of 64 KiB and a tty write shared by two
 * threads (each 4 KiB write arrives whole, never cut by the other's).
 * Every byte read is checked. scripts/tests/pty_big_write.sh. */
#include <fcntl.h>
#include <pthread.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#define CHUNK 8192
#define ROUNDS 8
#define SMALL 4096

static int slave;

static void *feeder(void *arg) {
    (void)arg;
    static char buf[CHUNK];
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < CHUNK; i++)
            buf[i] = (char)('a' + (r * CHUNK + i) % 26);
        ssize_t n = write(slave, buf, CHUNK); /* blocking: all or an error */
        if (n != CHUNK) {
            fprintf(stderr, "write %d: %zd\n", r, n);
            exit(1);
        }
    }
    return NULL;
}

static void *block_writer(void *arg) {
    char c = *(char *)arg;
    static char bufs[2][SMALL];
    char *b = bufs[c == 'B'];
    memset(b, c, SMALL);
    for (int r = 0; r < 4; r++)
        if (write(slave, b, SMALL) != SMALL)
            exit(2);
    return NULL;
}

static void raw(int fd) {
    struct termios t;
    tcgetattr(fd, &t);
    cfmakeraw(&t);
    tcsetattr(fd, TCSANOW, &t);
}

int main(void) {
    int master;
    if (openpty(&master, &slave, NULL, NULL, NULL) != 0) {
        printf("no pty\n");
        return 0;
    }
    raw(slave);
    pthread_t t;
    pthread_create(&t, NULL, feeder, NULL);
    static char in[CHUNK * ROUNDS];
    size_t got = 0;
    while (got < sizeof in) {
        ssize_t n = read(master, in + got, sizeof in - got);
        if (n <= 0) {
            printf("read: %zd after %zu bytes\n", n, got);
            return 1;
        }
        got += (size_t)n;
    }
    pthread_join(t, NULL);
    size_t bad = 0;
    for (size_t i = 0; i < got; i++)
        bad += in[i] != (char)('a' + i % 26);
    printf("pty: %zu bytes read, %zu wrong\n", got, bad);

    /* Two writers of 4 KiB blocks: each block arrives whole. */
    char a = 'A', b = 'B';
    pthread_t ta, tb;
    pthread_create(&ta, NULL, block_writer, &a);
    pthread_create(&tb, NULL, block_writer, &b);
    static char in2[8 * SMALL];
    got = 0;
    while (got < sizeof in2) {
        ssize_t n = read(master, in2 + got, sizeof in2 - got);
        if (n <= 0) {
            printf("read: %zd after %zu bytes\n", n, got);
            return 1;
        }
        got += (size_t)n;
    }
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    int cut = 0, as = 0;
    for (size_t blk = 0; blk < 8; blk++) {
        char c = in2[blk * SMALL];
        as += c == 'A';
        for (size_t i = 1; i < SMALL; i++)
            if (in2[blk * SMALL + i] != c)
                cut = 1;
    }
    printf("two writers: %zu bytes, %d blocks of A, %s\n", got, as, cut ? "blocks cut" : "every block whole");

    int null = open("/dev/null", O_WRONLY);
    static char big[65536];
    printf("/dev/null: %zd\n", write(null, big, sizeof big));
    close(null);
    close(slave);
    close(master);
    return 0;
}
