/* Compute threads that spend most of their time in glibc (malloc, free,
 * snprintf, printf to a shared stdout) while more of them than workers
 * run: a coroutine preempted while it held malloc's arena lock or
 * stdout's lock would deadlock the next one of its worker that takes it.
 * Every 8th round a thread also computes its line holding stdout's lock
 * itself (flockfile, then putc_unlocked), in its own code.
 *
 * usage: preempt_libc [THREADS [ROUNDS]]
 * stdout: every thread's lines ("t T r R sum S"), in any order between
 * threads; sorted, the same natively and under corun. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long rounds = 3000;

static void *work(void *arg)
{
    long id = (long)arg;
    uint64_t h = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
    char buf[128];
    for (long r = 0; r < rounds; r++) {
        uint64_t sum = 0;
        for (int k = 0; k < 200; k++) {
            h ^= h << 13;
            h ^= h >> 7;
            h ^= h << 17;
            size_t sz = 16 + (h & 4095);
            unsigned char *p = malloc(sz);
            if (!p)
                abort();
            memset(p, (int)(h & 0xff), sz);
            int len = snprintf(buf, sizeof buf, "%llx %.6f %zu", (unsigned long long)h,
                               (double)(h & 0xffffff) / 7.0, sz);
            for (int i = 0; i < len; i++)
                sum = sum * 31 + (unsigned char)buf[i];
            sum += p[sz - 1];
            free(p);
        }
        if (r % 8 == 7) {
            /* Computing with stdout locked: the others' printf waits. */
            flockfile(stdout);
            char line[96];
            int len = snprintf(line, sizeof line, "t %ld r %ld sum %016llx\n", id, r,
                               (unsigned long long)sum);
            for (int i = 0; i < len; i++) {
                for (int k = 0; k < 2000; k++) {
                    h ^= h << 13;
                    h ^= h >> 7;
                    h ^= h << 17;
                }
                putc_unlocked(line[i], stdout);
            }
            funlockfile(stdout);
        } else {
            printf("t %ld r %ld sum %016llx\n", id, r, (unsigned long long)sum);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 4;
    if (argc > 2)
        rounds = atol(argv[2]);
    if (n < 1 || n > 64)
        return 2;
    pthread_t th[64];
    for (long i = 0; i < n; i++)
        if (pthread_create(&th[i], NULL, work, (void *)i) != 0)
            return 1;
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    return 0;
}
