/*
 * thread_limits: pthread_create when memory runs out. RLIMIT_AS is set to
 * what the process uses plus 256 MiB, then threads (each waiting on a pipe)
 * are created until pthread_create fails. It must fail with EAGAIN, not
 * crash; then every thread created is released and joined, and the
 * process exits 0. Prints "limit: created N threads, then EAGAIN".
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static int release[2];

static void *waiter(void *arg)
{
    (void)arg;
    char c;
    if (read(release[0], &c, 1) != 1)
        return (void *)1;
    return NULL;
}

static long vm_size_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmSize:", 7))
            kib = atol(line + 7);
    if (f)
        fclose(f);
    return kib;
}

static void *warm(void *arg)
{
    free(malloc(64));
    return arg;
}

int main(void)
{
    if (pipe(release))
        return 1;
    /* Threads first made and joined without a limit, so that whatever a
     * first thread costs the process once (glibc's arenas; under corun, its
     * worker threads and their arenas, started on first use) is not taken
     * from the budget below: the budget is for the threads counted. */
    pthread_t w[8];
    for (int i = 0; i < 8; i++)
        if (pthread_create(&w[i], NULL, warm, NULL))
            return 1;
    for (int i = 0; i < 8; i++)
        pthread_join(w[i], NULL);
    struct rlimit rl = {.rlim_cur = (rlim_t)(vm_size_kib() + 256 * 1024) * 1024};
    rl.rlim_max = rl.rlim_cur;
    if (setrlimit(RLIMIT_AS, &rl))
        return 1;
    enum { MAX = 100000 };
    static pthread_t t[MAX];
    int n = 0, err = 0;
    while (n < MAX) {
        err = pthread_create(&t[n], NULL, waiter, NULL);
        if (err)
            break;
        n++;
    }
    /* Release and join everything that was created. */
    for (int i = 0; i < n; i++)
        if (write(release[1], "x", 1) != 1)
            return 1;
    int bad = 0;
    for (int i = 0; i < n; i++) {
        void *r;
        if (pthread_join(t[i], &r) || r)
            bad++;
    }
    printf("limit: created %s threads, then %s; %d joins failed\n", n > 10 ? "many" : "few",
           err == EAGAIN ? "EAGAIN" : strerror(err), bad);
    return err == EAGAIN && n > 10 && !bad ? 0 : 1;
}
