/*
 * http_common.h - the request handling shared by threaded_http.c and
 * epoll_http.c, so that the two servers differ only in how they wait.
 *
 * A minimal HTTP/1.1 origin server for one static body:
 * - keep-alive by default for HTTP/1.1; HTTP/1.0 only with
 *   "Connection: keep-alive"; "Connection: close" is honoured;
 * - pipelined requests and requests split across reads at any byte;
 * - GET and HEAD get 200 and the body; any other method 405 (its
 *   Content-Length body is skipped, the connection stays usable);
 * - a malformed request gets 400, headers larger than HTTP_IN_CAP get 431,
 *   Transfer-Encoding gets 501, and the connection closes after the reply.
 *
 * The response bytes are fixed (no Date header) so that a client can check
 * every byte. The body is BODY_BYTES bytes of http_body_byte(i).
 *
 * It compiles as C++ too (the casts from void *), for bench/libco's server.
 */
#ifndef HTTP_COMMON_H
#define HTTP_COMMON_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define HTTP_IN_CAP 8192     /* request buffer: a request's headers must fit */
#define HTTP_OUT_CAP 16384   /* response buffer: pipelined replies batch here */
#define HTTP_MAX_BODY 8192   /* largest static body (one reply fits OUT_CAP) */

/* Byte i of the static body: printable, position-dependent. */
static inline char http_body_byte(size_t i)
{
    static const char alphabet[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    return alphabet[i % (sizeof alphabet - 1)];
}

/* The prebuilt 200 replies: [head][connection mode]. */
enum { HTTP_CONN_DEFAULT, HTTP_CONN_CLOSE, HTTP_CONN_KEEPALIVE, HTTP_CONN_MODES };
static struct {
    char *data;
    size_t len;
} http_ok[2][HTTP_CONN_MODES];

static const char *const http_conn_hdr[HTTP_CONN_MODES] = {"", "Connection: close\r\n",
                                                           "Connection: keep-alive\r\n"};

/* Builds the replies for a body of body_len bytes; exits on a bad size. */
static void http_init(size_t body_len)
{
    if (body_len > HTTP_MAX_BODY) {
        fprintf(stderr, "body size %zu exceeds %d\n", body_len, HTTP_MAX_BODY);
        exit(2);
    }
    for (int head = 0; head < 2; head++)
        for (int m = 0; m < HTTP_CONN_MODES; m++) {
            char hdr[256];
            int n = snprintf(hdr, sizeof hdr,
                             "HTTP/1.1 200 OK\r\nServer: corun-bench\r\nContent-Type: text/plain\r\n"
                             "Content-Length: %zu\r\n%s\r\n",
                             body_len, http_conn_hdr[m]);
            size_t len = (size_t)n + (head ? 0 : body_len);
            char *p = (char *)malloc(len);
            if (!p) {
                perror("malloc");
                exit(1);
            }
            memcpy(p, hdr, (size_t)n);
            if (!head)
                for (size_t i = 0; i < body_len; i++)
                    p[(size_t)n + i] = http_body_byte(i);
            http_ok[head][m].data = p;
            http_ok[head][m].len = len;
        }
}

/* Per-connection parser state. */
struct http_conn {
    size_t skip;   /* request body bytes still to discard */
    int close;     /* close once the output is written */
};

struct http_out {
    char *buf;
    size_t len, cap;
};

static int http_put(struct http_out *o, const char *s, size_t n)
{
    if (o->cap - o->len < n)
        return -1;
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    return 0;
}

/* A reply with an empty body; room checked by the caller (< 256 bytes). */
static void http_error(struct http_out *o, const char *status, const char *extra, int mode)
{
    char r[256];
    int n = snprintf(r, sizeof r, "HTTP/1.1 %s\r\nServer: corun-bench\r\n%sContent-Length: 0\r\n%s\r\n", status,
                     extra, http_conn_hdr[mode]);
    http_put(o, r, (size_t)n);
}

static int http_tchar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Whether the comma-separated header value v[0..n) holds token tok. */
static int http_has_token(const char *v, size_t n, const char *tok)
{
    size_t tl = strlen(tok), i = 0;
    while (i < n) {
        while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        size_t s = i;
        while (i < n && v[i] != ',')
            i++;
        size_t e = i;
        while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
            e--;
        if (e - s == tl && strncasecmp(v + s, tok, tl) == 0)
            return 1;
    }
    return 0;
}

/*
 * Consumes requests from in[0..n) and appends their replies to o. Returns
 * the bytes consumed; stops early (returning less than n) when a request is
 * incomplete or o has no room for one more reply. Sets c->close when the
 * connection must close after o is written; nothing is consumed after that.
 */
static size_t http_consume(struct http_conn *c, const char *in, size_t n, struct http_out *o)
{
    size_t used = 0;
    while (used < n && !c->close) {
        if (c->skip) {
            size_t k = n - used < c->skip ? n - used : c->skip;
            c->skip -= k;
            used += k;
            continue;
        }
        const char *p = in + used;
        size_t avail = n - used;
        const char *end = (const char *)memmem(p, avail, "\r\n\r\n", 4);
        if (!end) {
            /* Incomplete. If the whole buffer is one unfinished header
             * block, it can never complete: 431. */
            if (used == 0 && n >= HTTP_IN_CAP) {
                if (o->cap - o->len < 256)
                    break;
                http_error(o, "431 Request Header Fields Too Large", "", HTTP_CONN_CLOSE);
                c->close = 1;
                used = n;
            }
            break;
        }
        size_t hlen = (size_t)(end - p) + 4;
        if (o->cap - o->len < 256 + http_ok[0][0].len)
            break; /* flush first */

        /* Request line: METHOD SP TARGET SP HTTP/1.x CRLF */
        const char *eol = (const char *)memchr(p, '\r', hlen);
        const char *q = p;
        while (q < eol && http_tchar(*q))
            q++;
        size_t mlen = (size_t)(q - p);
        int bad = mlen == 0 || q >= eol || *q != ' ';
        const char *t = q + 1, *te = t;
        while (!bad && te < eol && *te != ' ' && (unsigned char)*te > ' ')
            te++;
        bad = bad || te == t || te >= eol || *te != ' ';
        int minor = -1;
        if (!bad && eol - (te + 1) == 8 && memcmp(te + 1, "HTTP/1.", 7) == 0 && (te[8] == '0' || te[8] == '1'))
            minor = te[8] - '0';
        bad = bad || minor < 0;

        /* Header fields. */
        int conn_close = 0, conn_keep = 0, te_seen = 0;
        size_t clen = 0;
        const char *line = eol + 2;
        while (!bad && line < p + hlen - 2) {
            const char *le = (const char *)memmem(line, (size_t)(p + hlen - line), "\r\n", 2);
            const char *colon = line;
            while (colon < le && http_tchar(*colon))
                colon++;
            if (colon == line || colon >= le || *colon != ':') {
                bad = 1;
                break;
            }
            size_t nlen = (size_t)(colon - line);
            const char *v = colon + 1;
            while (v < le && (*v == ' ' || *v == '\t'))
                v++;
            size_t vlen = (size_t)(le - v);
            if (nlen == 10 && strncasecmp(line, "Connection", 10) == 0) {
                conn_close |= http_has_token(v, vlen, "close");
                conn_keep |= http_has_token(v, vlen, "keep-alive");
            } else if (nlen == 14 && strncasecmp(line, "Content-Length", 14) == 0) {
                size_t x = 0;
                const char *d = v;
                while (d < le && *d >= '0' && *d <= '9' && x < ((size_t)1 << 40))
                    x = x * 10 + (size_t)(*d++ - '0');
                while (d < le && (*d == ' ' || *d == '\t'))
                    d++;
                if (d == v || d != le)
                    bad = 1;
                clen = x;
            } else if (nlen == 17 && strncasecmp(line, "Transfer-Encoding", 17) == 0) {
                te_seen = 1;
            }
            line = le + 2;
        }
        used += hlen;
        if (bad) {
            http_error(o, "400 Bad Request", "", HTTP_CONN_CLOSE);
            c->close = 1;
            break;
        }
        if (te_seen) {
            http_error(o, "501 Not Implemented", "", HTTP_CONN_CLOSE);
            c->close = 1;
            break;
        }
        int mode = HTTP_CONN_DEFAULT;
        if (conn_close || (minor == 0 && !conn_keep))
            mode = HTTP_CONN_CLOSE;
        else if (minor == 0)
            mode = HTTP_CONN_KEEPALIVE;
        c->skip = clen;
        int head = mlen == 4 && memcmp(p, "HEAD", 4) == 0;
        if (head || (mlen == 3 && memcmp(p, "GET", 3) == 0))
            http_put(o, http_ok[head][mode].data, http_ok[head][mode].len);
        else
            http_error(o, "405 Method Not Allowed", "Allow: GET, HEAD\r\n", mode);
        if (mode == HTTP_CONN_CLOSE)
            c->close = 1;
    }
    return used;
}

/*
 * Ends a connection: stop sending, discard what already arrived (so that
 * close does not answer unread data with a reset that could destroy the
 * reply in flight), close.
 */
static void http_finish(int fd)
{
    char sink[4096];
    shutdown(fd, SHUT_WR);
    for (int i = 0; i < 16; i++)
        if (recv(fd, sink, sizeof sink, MSG_DONTWAIT) <= 0)
            break;
    close(fd);
}

#endif /* HTTP_COMMON_H */
