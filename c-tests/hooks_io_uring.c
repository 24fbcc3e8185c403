/*
 * hooks_io_uring - liburing's waits (transcript, see transcript.h).
 *
 * Waits for io_uring completions made the ways a liburing program makes
 * them: the inline io_uring_wait_cqe / io_uring_wait_cqe_nr /
 * io_uring_peek_cqe (all __io_uring_get_cqe), io_uring_wait_cqe_timeout
 * (io_uring_wait_cqes), io_uring_submit_and_wait and
 * io_uring_submit_and_wait_timeout; completions that are there already,
 * that come later (a read on a pipe written DELAY ms later), that never
 * come (the timeouts); a thread waiting on a ring while main submits to it
 * (MariaDB's InnoDB does that); and a ring exited and made again (its fd
 * number reused). Every result is printed; under corun each wait that must
 * wait must also park (WAITS). Run natively, and under corun with one
 * worker, where a wait that blocked its worker would never see main's
 * submission.
 */
#include <liburing.h>

#include "transcript.h"

/* liburing returns -errno and leaves errno alone: print that. */
static void lu_print(const char *label, int r)
{
    if (r < 0)
        printf("%s = -%s\n", label, strerrorname_np(-r));
    else
        printf("%s = %d\n", label, r);
    fflush(stdout);
}

#define LU(label, expr)           \
    ({                            \
        int lu_r_ = (expr);       \
        lu_print(label, lu_r_);   \
        lu_r_;                    \
    })

/* As LU, for a call that must wait (park under corun). */
#define LU_WAITS(label, expr)                                  \
    ({                                                         \
        long lu_t0_ = tr_ticks;                                \
        int lu_rr_ = LU(label, expr);                          \
        if (tr_under_corun && tr_ticks == lu_t0_) {            \
            fprintf(stderr, "NOT PARKED: %s\n", label);        \
            tr_not_parked++;                                   \
        }                                                      \
        lu_rr_;                                                \
    })

static struct io_uring ring;
static char bufs[4][16];

static void prep_nop(struct io_uring *r, __u64 tag)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(r);
    io_uring_prep_nop(sqe);
    sqe->user_data = tag;
}

static void prep_read(int fd, int slot, __u64 tag)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
    memset(bufs[slot], 0, sizeof bufs[slot]);
    io_uring_prep_read(sqe, fd, bufs[slot], sizeof bufs[slot] - 1, (__u64)-1);
    sqe->user_data = tag;
}

/* Prints and consumes the completion at the head. */
static void reap(const char *label, struct io_uring_cqe *c)
{
    printf("%s: data=%llu res=%d", label, (unsigned long long)c->user_data, c->res);
    if (c->user_data >= 10 && c->user_data < 14 && c->res > 0)
        printf(" \"%s\"", bufs[c->user_data - 10]);
    printf("\n");
    io_uring_cqe_seen(&ring, c);
}

static struct __kernel_timespec ms_ts(long ms)
{
    struct __kernel_timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    return ts;
}

struct waiter {
    struct io_uring *r;
    int rc;
    unsigned long long data;
    int res;
};

static void *waiter_body(void *p)
{
    struct waiter *w = p;
    struct io_uring_cqe *c;
    w->rc = io_uring_wait_cqe(w->r, &c);
    if (w->rc == 0) {
        w->data = c->user_data;
        w->res = c->res;
        io_uring_cqe_seen(w->r, c);
    }
    return NULL;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int main(void)
{
    tr_start();
    struct io_uring_cqe *cqe;
    int p[2], q[2];
    if (pipe(p) || pipe(q))
        abort();

    if (LU("queue_init", io_uring_queue_init(8, &ring, 0)) != 0)
        return tr_end(); /* no io_uring here: the same transcript both ways */

    /* A completion that is there at once. */
    prep_nop(&ring, 1);
    LU("submit nop", io_uring_submit(&ring));
    if (LU("wait_cqe nop", io_uring_wait_cqe(&ring, &cqe)) == 0)
        reap("  cqe", cqe);
    LU("peek_cqe empty", io_uring_peek_cqe(&ring, &cqe));

    /* One that comes later. */
    prep_read(p[0], 0, 10);
    LU("submit read", io_uring_submit(&ring));
    later_write(DELAY, p[1], "hello", 5);
    if (LU_WAITS("wait_cqe read", io_uring_wait_cqe(&ring, &cqe)) == 0)
        reap("  cqe", cqe);

    /* Timeouts: nothing comes, then something comes in time. */
    struct __kernel_timespec ts = ms_ts(DELAY);
    LU_WAITS("wait_cqe_timeout nothing", io_uring_wait_cqe_timeout(&ring, &cqe, &ts));
    CHECK("  cqe left NULL", cqe == NULL);
    prep_read(p[0], 1, 11);
    LU("submit read", io_uring_submit(&ring));
    later_write(DELAY, p[1], "in time", 7);
    ts = ms_ts(10000);
    if (LU_WAITS("wait_cqe_timeout read", io_uring_wait_cqe_timeout(&ring, &cqe, &ts)) == 0)
        reap("  cqe", cqe);

    /* Two completions, DELAY ms apart, waited for together. */
    prep_read(p[0], 2, 12);
    prep_read(q[0], 3, 13);
    LU("submit 2 reads", io_uring_submit(&ring));
    later_write(DELAY, p[1], "first", 5);
    later_write(3 * DELAY, q[1], "second", 6);
    if (LU_WAITS("wait_cqe_nr 2", io_uring_wait_cqe_nr(&ring, &cqe, 2)) == 0) {
        CHECK("  2 ready", io_uring_cq_ready(&ring) == 2);
        /* In tag order (the helpers' order is the machine's). */
        struct io_uring_cqe *c[2] = {NULL, NULL};
        unsigned head, n = 0;
        io_uring_for_each_cqe(&ring, head, cqe) {
            if (n < 2)
                c[n++] = cqe;
        }
        if (n == 2 && c[0]->user_data > c[1]->user_data) {
            struct io_uring_cqe *x = c[0];
            c[0] = c[1];
            c[1] = x;
        }
        for (unsigned i = 0; i < n; i++)
            printf("  cqe: data=%llu res=%d \"%s\"\n", (unsigned long long)c[i]->user_data,
                   c[i]->res, bufs[c[i]->user_data - 10]);
        io_uring_cq_advance(&ring, n);
    }

    /* Submit and wait in one call. */
    prep_read(p[0], 0, 10);
    later_write(DELAY, p[1], "sw", 2);
    LU_WAITS("submit_and_wait 1", io_uring_submit_and_wait(&ring, 1));
    if (LU("wait_cqe (there)", io_uring_wait_cqe(&ring, &cqe)) == 0)
        reap("  cqe", cqe);

    prep_read(p[0], 1, 11);
    ts = ms_ts(DELAY);
    LU_WAITS("submit_and_wait_timeout nothing",
             io_uring_submit_and_wait_timeout(&ring, &cqe, 1, &ts, NULL));
    LU("write now", (int)write(p[1], "late", 4));
    if (LU("wait_cqe late read", io_uring_wait_cqe(&ring, &cqe)) == 0)
        reap("  cqe", cqe);
    prep_read(p[0], 2, 12);
    later_write(DELAY, p[1], "swt", 3);
    ts = ms_ts(10000);
    if (LU_WAITS("submit_and_wait_timeout read",
                 io_uring_submit_and_wait_timeout(&ring, &cqe, 1, &ts, NULL)) >= 0)
        reap("  cqe", cqe);

    /* A thread waits on the ring; main submits to it later. */
    struct io_uring ring2;
    LU("queue_init ring2", io_uring_queue_init(8, &ring2, 0));
    struct waiter w = {&ring2, -1, 0, 0};
    pthread_t t;
    if (pthread_create(&t, NULL, waiter_body, &w))
        abort();
    sleep_ms(DELAY);
    prep_nop(&ring2, 77);
    LU("submit nop to ring2", io_uring_submit(&ring2));
    T("join waiter", pthread_join(t, NULL));
    printf("  waiter: rc=%d data=%llu res=%d\n", w.rc, w.data, w.res);
    io_uring_queue_exit(&ring2);

    /* A ring made again (the fd number is reused): waits still park. */
    io_uring_queue_exit(&ring);
    LU("queue_init again", io_uring_queue_init(8, &ring, 0));
    prep_read(p[0], 3, 13);
    LU("submit read", io_uring_submit(&ring));
    later_write(DELAY, p[1], "again", 5);
    if (LU_WAITS("wait_cqe read (new ring)", io_uring_wait_cqe(&ring, &cqe)) == 0)
        reap("  cqe", cqe);
    io_uring_queue_exit(&ring);
    return tr_end();
}
