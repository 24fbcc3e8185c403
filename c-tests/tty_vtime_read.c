/* Reads of a pty slave in non-canonical mode with VMIN = 0 (termios(3)):
 * with VTIME > 0 a read with no input returns 0 once VTIME passed, with
 * VTIME = 0 at once; input arriving meanwhile is returned. corun waited for
 * readability first and then read, so such a read waited for ever (Ruby's
 * IO#getch(min: 0, time: 0.1), TestIO_Console#test_raw_timeout). read,
 * readv and stdio's fgetc (EOF, feof set) are tried; a second thread exists
 * throughout (a process with one thread makes its calls as natively), and
 * writes the input of the last case to the master when told to.
 * scripts/tests/tty_vtime_read.sh. */
#include <pthread.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static int master, slave, go[2];

static void die(const char *what) {
    perror(what);
    exit(1);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void set_mode(int vmin, int vtime) {
    struct termios t;
    if (tcgetattr(slave, &t) != 0)
        die("tcgetattr");
    cfmakeraw(&t);
    t.c_cc[VMIN] = (cc_t)vmin;
    t.c_cc[VTIME] = (cc_t)vtime;
    if (tcsetattr(slave, TCSANOW, &t) != 0)
        die("tcsetattr");
}

static void *typist(void *arg) {
    (void)arg;
    char c;
    if (read(go[0], &c, 1) != 1)
        die("read go");
    if (write(master, "ab", 2) != 2)
        die("write master");
    return NULL;
}

/* One read with nothing to read: its result and whether it took at least
 * `min_s` seconds (and less than 20). */
static void empty_read(const char *what, int vtime, double min_s, int use_readv) {
    char buf[16];
    set_mode(0, vtime);
    double t0 = now();
    ssize_t r;
    if (use_readv) {
        struct iovec v = {buf, sizeof buf};
        r = readv(slave, &v, 1);
    } else {
        r = read(slave, buf, sizeof buf);
    }
    double took = now() - t0;
    printf("%s (VMIN 0, VTIME %d): %zd, waited %s\n", what, vtime, r,
           took >= min_s && took < 20 ? "as long as VTIME" : "WRONG");
}

int main(void) {
    if (openpty(&master, &slave, NULL, NULL, NULL) != 0)
        die("openpty");
    if (pipe(go) != 0)
        die("pipe");
    pthread_t th;
    if (pthread_create(&th, NULL, typist, NULL) != 0)
        die("pthread_create");

    empty_read("read", 1, 0.08, 0);
    empty_read("read", 0, 0, 0);
    empty_read("readv", 2, 0.18, 1);

    FILE *f = fdopen(dup(slave), "r");
    if (!f)
        die("fdopen");
    setvbuf(f, NULL, _IONBF, 0);
    set_mode(0, 1);
    double t0 = now();
    int c = fgetc(f);
    double took = now() - t0;
    printf("fgetc (VMIN 0, VTIME 1): %s, feof %d, waited %s\n", c == EOF ? "EOF" : "a byte",
           feof(f) != 0, took >= 0.08 && took < 20 ? "as long as VTIME" : "WRONG");
    fclose(f);

    /* Input that arrives while the read waits (VTIME 10 s) is returned. */
    set_mode(0, 100);
    if (write(go[1], "x", 1) != 1)
        die("write go");
    char got[8] = {0};
    size_t n = 0;
    for (int i = 0; i < 4 && n < 2; i++) {
        ssize_t r = read(slave, got + n, sizeof got - 1 - n);
        if (r < 0)
            die("read slave");
        n += (size_t)r;
    }
    printf("read (VMIN 0, VTIME 100) with input: \"%s\"\n", got);
    pthread_join(th, NULL);
    return 0;
}
