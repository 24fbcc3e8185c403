/* 64 slow DNS lookups next to a 1 ms ticker (issue 11).
 *
 * 64 threads each resolve a distinct name (host-N.corun.test, N = 1..64)
 * with getaddrinfo; the test's DNS server (scripts/tests/data/slow_dns.py)
 * answers each after 300 ms with 10.11.N/256.N%256. A 65th thread sleeps
 * 1 ms at a time and records the worst gap between two of its ticks while
 * the lookups run. Under corun the lookups run on the blocking pool while
 * their coroutines park: a lookup made on a worker would stop the ticker
 * for its 300 ms.
 *
 * stdout (compared natively and under corun): one line per lookup, its
 * name and address, then a summary. stderr: "worst_gap_ms=N" for the
 * script, which bounds it (timing is not part of the transcript).
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define LOOKUPS 64

static atomic_int finished;
static atomic_int ticking;
static char results[LOOKUPS][128];
static int good[LOOKUPS];

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void *lookup(void *arg)
{
    int n = (int)(intptr_t)arg;
    char name[64], want[32];
    snprintf(name, sizeof name, "host-%d.corun.test", n);
    snprintf(want, sizeof want, "10.11.%d.%d", n / 256, n % 256);
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(name, NULL, &hints, &res);
    char got[INET_ADDRSTRLEN] = "-";
    if (rc == 0 && res && res->ai_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)res->ai_addr)->sin_addr, got, sizeof got);
    good[n - 1] = rc == 0 && strcmp(got, want) == 0 && res->ai_next == NULL;
    snprintf(results[n - 1], sizeof results[n - 1], "%.24s -> %.40s (%s)", name, rc ? gai_strerror(rc) : got,
             good[n - 1] ? "right" : "WRONG");
    if (res)
        freeaddrinfo(res);
    atomic_fetch_add(&finished, 1);
    return NULL;
}

static uint64_t worst_gap_us;

static void *ticker(void *arg)
{
    (void)arg;
    uint64_t last = now_us();
    atomic_store(&ticking, 1);
    /* Bounded: 60 s of ticks at most. */
    for (int i = 0; i < 60000 && atomic_load(&finished) < LOOKUPS; i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
        uint64_t t = now_us();
        if (t - last > worst_gap_us)
            worst_gap_us = t - last;
        last = t;
    }
    return NULL;
}

int main(void)
{
    pthread_t tick, th[LOOKUPS];
    pthread_create(&tick, NULL, ticker, NULL);
    while (!atomic_load(&ticking)) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    uint64_t t0 = now_us();
    for (int i = 0; i < LOOKUPS; i++)
        if (pthread_create(&th[i], NULL, lookup, (void *)(intptr_t)(i + 1)) != 0) {
            printf("pthread_create failed\n");
            return 1;
        }
    for (int i = 0; i < LOOKUPS; i++)
        pthread_join(th[i], NULL);
    uint64_t took = now_us() - t0;
    pthread_join(tick, NULL);
    int right = 0;
    for (int i = 0; i < LOOKUPS; i++) {
        printf("%s\n", results[i]);
        right += good[i];
    }
    printf("%d of %d lookups returned the right address\n", right, LOOKUPS);
    fprintf(stderr, "worst_gap_ms=%llu lookups_ms=%llu\n", (unsigned long long)(worst_gap_us / 1000),
            (unsigned long long)(took / 1000));
    return right == LOOKUPS ? 0 : 1;
}
