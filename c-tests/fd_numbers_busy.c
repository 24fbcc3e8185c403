/* A program's fd numbers stay its own while threads compute beside it.
 *
 * Two threads compute; main closes every fd from 3 up and makes a pipe,
 * again and again, and expects fds 3 and 4 each time, as natively (the
 * kernel hands out the lowest free numbers, and nothing else in the
 * process makes fds). Under corun the preemption monitor looked at the
 * computing workers through /proc/self/task/TID/stat every few ms with
 * an open/read/close of its own: when that open took fd 3 just as main
 * made its pipe, main got 4 and 5.
 *
 * Output: "pipes N, wrong 0" (N: pipes made in the time). Exit 1 and the
 * first wrong pair on a difference.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;

static void *compute(void *arg) {
    volatile unsigned long x = (unsigned long)arg;
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        for (int i = 0; i < 10000; i++)
            x = x * 6364136223846793005UL + 1442695040888963407UL;
    return NULL;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 1.5;
    pthread_t th[2];
    for (long i = 0; i < 2; i++)
        if (pthread_create(&th[i], NULL, compute, (void *)(i + 1)) != 0) {
            perror("pthread_create");
            return 2;
        }
    long pipes = 0, wrong = 0;
    int first[2] = {-1, -1};
    double end = now() + seconds;
    while (now() < end) {
        for (int k = 0; k < 64; k++) {
            int p[2];
            close_range(3, ~0U, 0);
            if (pipe(p) != 0) {
                perror("pipe");
                return 2;
            }
            pipes++;
            if (p[0] != 3 || p[1] != 4) {
                if (wrong++ == 0) {
                    first[0] = p[0];
                    first[1] = p[1];
                }
            }
            close(p[0]);
            close(p[1]);
        }
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    printf("pipes %ld, wrong %ld\n", pipes, wrong);
    if (wrong) {
        printf("first wrong pipe: %d %d, expected 3 4\n", first[0], first[1]);
        return 1;
    }
    return 0;
}
