/*
 * co_kv_server PORT - a key-value server speaking the Redis protocol
 * (RESP, and inline commands) for GET, SET, DEL, PING, INCR (and QUIT),
 * written for corun's C API: one coroutine per connection (corun_spawn),
 * plain blocking read/write, the store in 64 shards each under a
 * corun_mutex_t. Answers, errors included, are those of Redis 7 for these
 * commands (scripts/tests/co_kv_redis.sh compares them with redis-server).
 * Pipelined requests are answered in one write. Runs until killed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <corun.h>

/* ------------------------------------------------------------- store */

struct entry {
    struct entry *next;
    uint64_t hash;
    size_t klen, vlen;
    char *val;
    char key[];
};

enum { SHARDS = 64 };
static struct shard {
    corun_mutex_t mu;
    struct entry **tab;
    size_t cap, len;
} shards[SHARDS];

static uint64_t hash(const char *k, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)k[i]) * 1099511628211ull;
    return h;
}

static struct shard *shard_of(uint64_t h)
{
    return &shards[h % SHARDS];
}

/* The entry's link in its shard (locked), or where it would go. */
static struct entry **find(struct shard *s, uint64_t h, const char *k, size_t n)
{
    if (!s->cap) {
        s->cap = 64;
        s->tab = calloc(s->cap, sizeof *s->tab);
    }
    struct entry **p = &s->tab[(h >> 8) % s->cap];
    while (*p && !((*p)->hash == h && (*p)->klen == n && !memcmp((*p)->key, k, n)))
        p = &(*p)->next;
    return p;
}

static void grow(struct shard *s)
{
    size_t cap = s->cap * 2;
    struct entry **tab = calloc(cap, sizeof *tab);
    for (size_t i = 0; i < s->cap; i++)
        for (struct entry *e = s->tab[i], *nx; e; e = nx) {
            nx = e->next;
            struct entry **slot = &tab[(e->hash >> 8) % cap];
            e->next = *slot;
            *slot = e;
        }
    free(s->tab);
    s->tab = tab;
    s->cap = cap;
}

static void set_locked(struct shard *s, uint64_t h, const char *k, size_t kn, const char *v, size_t vn)
{
    struct entry **p = find(s, h, k, kn);
    char *val = malloc(vn + 1);
    memcpy(val, v, vn);
    if (*p) {
        free((*p)->val);
    } else {
        struct entry *e = malloc(sizeof *e + kn);
        e->next = NULL;
        e->hash = h;
        e->klen = kn;
        memcpy(e->key, k, kn);
        *p = e;
        if (++s->len > s->cap)
            grow(s), p = find(s, h, k, kn);
    }
    (*p)->val = val;
    (*p)->vlen = vn;
}

/* ------------------------------------------------------------ replies */

struct conn {
    int fd;
    char *in;
    size_t in_len, in_cap;
    char *out;
    size_t out_len, out_cap;
};

static void put(struct conn *c, const void *p, size_t n)
{
    if (c->out_len + n > c->out_cap) {
        while (c->out_len + n > c->out_cap)
            c->out_cap = c->out_cap ? c->out_cap * 2 : 16384;
        c->out = realloc(c->out, c->out_cap);
    }
    memcpy(c->out + c->out_len, p, n);
    c->out_len += n;
}

static void puts_(struct conn *c, const char *s)
{
    put(c, s, strlen(s));
}

static void bulk(struct conn *c, const char *p, size_t n)
{
    char h[32];
    put(c, h, (size_t)snprintf(h, sizeof h, "$%zu\r\n", n));
    put(c, p, n);
    put(c, "\r\n", 2);
}

static void integer(struct conn *c, long long v)
{
    char h[32];
    put(c, h, (size_t)snprintf(h, sizeof h, ":%lld\r\n", v));
}

/* Redis's string2ll: an optional '-', no leading zero (but "0"), no
 * spaces or '+', within long long. */
static int parse_ll(const char *p, size_t n, long long *out)
{
    if (n == 0 || n > 20)
        return 0;
    size_t i = 0;
    int neg = 0;
    if (p[0] == '-') {
        neg = 1;
        if (++i == n)
            return 0;
    }
    if (p[i] == '0')
        return n == 1 ? (*out = 0, 1) : 0;
    unsigned long long v = 0;
    for (; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return 0;
        if (v > (ULLONG_MAX - 9) / 10)
            return 0;
        v = v * 10 + (unsigned long long)(p[i] - '0');
    }
    if (neg) {
        if (v > (unsigned long long)LLONG_MAX + 1)
            return 0;
        *out = (long long)(0 - v);
    } else {
        if (v > LLONG_MAX)
            return 0;
        *out = (long long)v;
    }
    return 1;
}

/* ------------------------------------------------------------ commands */

enum { MAXARGS = 1024 };
struct args {
    int n;
    const char *p[MAXARGS];
    size_t len[MAXARGS];
};

static int is(const struct args *a, const char *name)
{
    return a->len[0] == strlen(name) && !strncasecmp(a->p[0], name, a->len[0]);
}

static void arity(struct conn *c, const char *name)
{
    char m[96];
    snprintf(m, sizeof m, "-ERR wrong number of arguments for '%s' command\r\n", name);
    puts_(c, m);
}

/* Runs one command; returns 0 to close the connection. */
static int command(struct conn *c, const struct args *a)
{
    if (is(a, "GET")) {
        if (a->n != 2)
            return arity(c, "get"), 1;
        uint64_t h = hash(a->p[1], a->len[1]);
        struct shard *s = shard_of(h);
        corun_mutex_lock(&s->mu);
        struct entry *e = *find(s, h, a->p[1], a->len[1]);
        if (e)
            bulk(c, e->val, e->vlen);
        else
            puts_(c, "$-1\r\n");
        corun_mutex_unlock(&s->mu);
    } else if (is(a, "SET")) {
        if (a->n < 3)
            return arity(c, "set"), 1;
        if (a->n > 3)
            return puts_(c, "-ERR syntax error\r\n"), 1;
        uint64_t h = hash(a->p[1], a->len[1]);
        struct shard *s = shard_of(h);
        corun_mutex_lock(&s->mu);
        set_locked(s, h, a->p[1], a->len[1], a->p[2], a->len[2]);
        corun_mutex_unlock(&s->mu);
        puts_(c, "+OK\r\n");
    } else if (is(a, "DEL")) {
        if (a->n < 2)
            return arity(c, "del"), 1;
        long long n = 0;
        for (int i = 1; i < a->n; i++) {
            uint64_t h = hash(a->p[i], a->len[i]);
            struct shard *s = shard_of(h);
            corun_mutex_lock(&s->mu);
            struct entry **p = find(s, h, a->p[i], a->len[i]), *e = *p;
            if (e) {
                *p = e->next;
                s->len--;
                free(e->val);
                free(e);
                n++;
            }
            corun_mutex_unlock(&s->mu);
        }
        integer(c, n);
    } else if (is(a, "INCR")) {
        if (a->n != 2)
            return arity(c, "incr"), 1;
        uint64_t h = hash(a->p[1], a->len[1]);
        struct shard *s = shard_of(h);
        corun_mutex_lock(&s->mu);
        struct entry *e = *find(s, h, a->p[1], a->len[1]);
        long long v = 0;
        if (e && !parse_ll(e->val, e->vlen, &v)) {
            puts_(c, "-ERR value is not an integer or out of range\r\n");
        } else if (v == LLONG_MAX) {
            puts_(c, "-ERR increment or decrement would overflow\r\n");
        } else {
            char num[32];
            int k = snprintf(num, sizeof num, "%lld", v + 1);
            set_locked(s, h, a->p[1], a->len[1], num, (size_t)k);
            integer(c, v + 1);
        }
        corun_mutex_unlock(&s->mu);
    } else if (is(a, "PING")) {
        if (a->n > 2)
            return arity(c, "ping"), 1;
        if (a->n == 2)
            bulk(c, a->p[1], a->len[1]);
        else
            puts_(c, "+PONG\r\n");
    } else if (is(a, "QUIT")) {
        puts_(c, "+OK\r\n");
        return 0;
    } else {
        /* Redis 7: the name as sent, then up to 128 bytes of arguments. */
        char m[512];
        int k = snprintf(m, sizeof m, "-ERR unknown command '%.*s', with args beginning with: ",
                         (int)(a->len[0] > 128 ? 128 : a->len[0]), a->p[0]);
        size_t args = 0;
        for (int i = 1; i < a->n && args < 128; i++) {
            int w = snprintf(m + k, sizeof m - (size_t)k, "'%.*s' ", (int)(a->len[i] < 128 - args ? a->len[i] : 128 - args),
                             a->p[i]);
            args += (size_t)w;
            k += w;
        }
        put(c, m, (size_t)k);
        put(c, "\r\n", 2);
    }
    return 1;
}

/* Parses one command at `p` (n bytes): its length, 0 if incomplete, -1
 * on a protocol error. */
static long parse(const char *p, size_t n, struct args *a)
{
    a->n = 0;
    if (n == 0)
        return 0;
    if (p[0] != '*') { /* inline: words up to \n */
        const char *nl = memchr(p, '\n', n);
        if (!nl)
            return n > 65536 ? -1 : 0;
        const char *q = p, *end = nl > p && nl[-1] == '\r' ? nl - 1 : nl;
        while (q < end && a->n < MAXARGS) {
            while (q < end && (*q == ' ' || *q == '\t'))
                q++;
            if (q == end)
                break;
            const char *w = q;
            while (q < end && *q != ' ' && *q != '\t')
                q++;
            a->p[a->n] = w;
            a->len[a->n++] = (size_t)(q - w);
        }
        return nl - p + 1;
    }
    const char *q = p + 1, *end = p + n;
    const char *nl = memchr(q, '\r', (size_t)(end - q));
    if (!nl || nl + 1 >= end)
        return 0;
    long cnt = strtol(q, NULL, 10);
    if (cnt < 0 || cnt > MAXARGS)
        return -1;
    q = nl + 2;
    for (long i = 0; i < cnt; i++) {
        if (q >= end)
            return 0;
        if (*q != '$')
            return -1;
        nl = memchr(q, '\r', (size_t)(end - q));
        if (!nl || nl + 1 >= end)
            return 0;
        long len = strtol(q + 1, NULL, 10);
        if (len < 0 || len > 512L * 1024 * 1024)
            return -1;
        q = nl + 2;
        if (end - q < len + 2)
            return 0;
        a->p[a->n] = q;
        a->len[a->n++] = (size_t)len;
        q += len + 2;
    }
    return q - p;
}

static int flush(struct conn *c)
{
    size_t off = 0;
    while (off < c->out_len) {
        ssize_t w = write(c->fd, c->out + off, c->out_len - off);
        if (w <= 0)
            return -1;
        off += (size_t)w;
    }
    c->out_len = 0;
    return 0;
}

static void *serve(void *arg)
{
    struct conn c = {.fd = (int)(intptr_t)arg};
    struct args *ap = malloc(sizeof *ap);
    int open = 1;
    while (open) {
        if (c.in_cap - c.in_len < 16384) {
            c.in_cap = c.in_cap ? c.in_cap * 2 : 65536;
            c.in = realloc(c.in, c.in_cap);
        }
        ssize_t n = read(c.fd, c.in + c.in_len, c.in_cap - c.in_len);
        if (n <= 0)
            break;
        c.in_len += (size_t)n;
        size_t off = 0;
        for (;;) {
            long used = parse(c.in + off, c.in_len - off, ap);
            if (used < 0) {
                puts_(&c, "-ERR Protocol error\r\n");
                open = 0;
                break;
            }
            if (used == 0)
                break;
            off += (size_t)used;
            if (ap->n > 0 && !command(&c, ap)) {
                open = 0;
                break;
            }
        }
        memmove(c.in, c.in + off, c.in_len - off);
        c.in_len -= off;
        if (flush(&c) < 0)
            break;
    }
    close(c.fd);
    free(ap);
    free(c.in);
    free(c.out);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PORT\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    for (int i = 0; i < SHARDS; i++)
        corun_mutex_init(&shards[i].mu);
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(ls, (struct sockaddr *)&sa, sizeof sa) || listen(ls, 4096)) {
        perror("bind/listen");
        return 1;
    }
    for (;;) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE)
                corun_sleep_ns(10 * 1000000ull);
            continue;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        corun_co_t *co = corun_spawn(serve, (void *)(intptr_t)fd);
        if (co)
            corun_detach(co);
        else
            close(fd);
    }
}
