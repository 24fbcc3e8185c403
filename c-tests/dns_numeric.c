/* getaddrinfo and getnameinfo from threads, with numeric and named hosts
 * and services (scripts/tests/dns_numeric.sh).
 *
 *   dns_numeric numeric   only calls glibc answers from their arguments:
 *                         numeric hosts and ports, getnameinfo of numeric
 *                         parts only
 *   dns_numeric all       those, then names ("localhost", "http", a
 *                         reverse lookup, an IPv6 scope)
 *
 * Four threads make the same calls; each call's result (error code,
 * families, addresses, ports, names) is printed once, by the first
 * thread, and every thread checks that it got the same. */
#include <arpa/inet.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct query {
    const char *node, *service;
    int flags, family;
};

static const struct query numeric[] = {
    {"127.0.0.1", "80", 0, AF_UNSPEC},
    {"::1", "443", 0, AF_INET6},
    {NULL, "8080", AI_PASSIVE, AF_INET},
    {"10.1.2.3", NULL, AI_ADDRCONFIG, AF_UNSPEC},
    {"192.168.7.9", "65535", AI_NUMERICSERV, AF_INET},
    {"not-an-address", "80", AI_NUMERICHOST, AF_UNSPEC},
    {"127.0.0.1", "99999999", 0, AF_UNSPEC},
};
static const struct query named[] = {
    {"localhost", "80", 0, AF_INET},
    {"127.0.0.1", "http", 0, AF_INET},
    {"127.0.0.1", "80", AI_CANONNAME, AF_INET},
    {"::1%lo", "80", 0, AF_INET6},
};

static int all;

static void describe(char *out, size_t len, const struct query *q)
{
    struct addrinfo hints = {.ai_flags = q->flags, .ai_family = q->family, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(q->node, q->service, &hints, &res);
    size_t used = (size_t)snprintf(out, len, "getaddrinfo(%s, %s): %d", q->node ? q->node : "NULL",
                                   q->service ? q->service : "NULL", rc);
    for (struct addrinfo *a = res; a && used < len; a = a->ai_next) {
        char host[64], serv[16];
        int n = getnameinfo(a->ai_addr, a->ai_addrlen, host, sizeof host, serv, sizeof serv,
                            NI_NUMERICHOST | NI_NUMERICSERV);
        used += (size_t)snprintf(out + used, len - used, " [%d %s %s %s]%s", a->ai_family,
                                 n ? "?" : host, n ? "?" : serv,
                                 a->ai_canonname ? a->ai_canonname : "-", "");
    }
    if (res)
        freeaddrinfo(res);
}

static void reverse(char *out, size_t len)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(22)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    char host[256], serv[32];
    int rc = getnameinfo((struct sockaddr *)&sa, sizeof sa, host, sizeof host, serv, sizeof serv, 0);
    snprintf(out, len, "getnameinfo(127.0.0.1:22): %d %s %s", rc, rc ? "" : host, rc ? "" : serv);
}

/* getnameinfo asked for one part only, numeric (privoxy's call: the host,
 * NI_NUMERICHOST, no service buffer). */
static void one_part(char *out, size_t len)
{
    struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_port = htons(8443)};
    inet_pton(AF_INET6, "2001:db8::7", &sa.sin6_addr);
    char host[64], serv[16];
    int h = getnameinfo((struct sockaddr *)&sa, sizeof sa, host, sizeof host, NULL, 0, NI_NUMERICHOST);
    int s = getnameinfo((struct sockaddr *)&sa, sizeof sa, NULL, 0, serv, sizeof serv, NI_NUMERICSERV);
    snprintf(out, len, "getnameinfo host only: %d %s; service only: %d %s", h, h ? "" : host, s,
             s ? "" : serv);
}

#define MAXQ 16
static char results[4][MAXQ][1024];

static void *run(void *arg)
{
    long t = (long)arg;
    int k = 0;
    for (size_t i = 0; i < sizeof numeric / sizeof *numeric; i++)
        describe(results[t][k++], sizeof results[t][0], &numeric[i]);
    one_part(results[t][k++], sizeof results[t][0]);
    if (all) {
        for (size_t i = 0; i < sizeof named / sizeof *named; i++)
            describe(results[t][k++], sizeof results[t][0], &named[i]);
        reverse(results[t][k++], sizeof results[t][0]);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "numeric") && strcmp(argv[1], "all"))) {
        fprintf(stderr, "usage: %s numeric|all\n", argv[0]);
        return 2;
    }
    all = !strcmp(argv[1], "all");
    pthread_t th[4];
    for (long t = 0; t < 4; t++)
        if (pthread_create(&th[t], NULL, run, (void *)t))
            return 1;
    for (int t = 0; t < 4; t++)
        pthread_join(th[t], NULL);
    int bad = 0;
    for (int k = 0; k < MAXQ && results[0][k][0]; k++) {
        printf("%s\n", results[0][k]);
        for (int t = 1; t < 4; t++)
            bad += strcmp(results[0][k], results[t][k]) != 0;
    }
    printf("%s\n", bad ? "threads disagree" : "every thread got the same");
    return bad != 0;
}
