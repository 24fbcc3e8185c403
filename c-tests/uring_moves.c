/* io_uring rings are tied to the kernel task that made or used them:
 * IORING_SETUP_SINGLE_ISSUER (and DEFER_TASKRUN) rings take submissions
 * from their creator only (-EEXIST from another task), and a ring fd
 * registered with io_uring_register_ring_fd is in the registering task's
 * table only (-EBADF from another). Six threads each make a ring, then
 * compute unevenly (so that preempted ones would move to an idle worker,
 * src/sched/shed.rs) and submit a NOP and wait for it, ten times.
 * Argument: the setup flags (0x1000 SINGLE_ISSUER, 0x3000 with
 * DEFER_TASKRUN); "reg" as a second argument registers the ring fd. */
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static atomic_int bad;
static volatile unsigned long sink;
static unsigned setup_flags;
static int reg;

static void burn(long n, unsigned long x)
{
    for (long k = 0; k < n; k++)
        x = x * 6364136223846793005UL + k;
    sink = x;
}

static void *thread(void *p)
{
    long i = (long)p;
    struct io_uring ring;
    struct io_uring_params pr;
    memset(&pr, 0, sizeof pr);
    pr.flags = setup_flags;
    int r = io_uring_queue_init_params(8, &ring, &pr);
    if (r < 0) {
        printf("thread %ld: queue_init: %s\n", i, strerror(-r));
        atomic_fetch_add(&bad, 1);
        return NULL;
    }
    if (reg && (r = io_uring_register_ring_fd(&ring)) != 1) {
        printf("thread %ld: register_ring_fd: %d\n", i, r);
        atomic_fetch_add(&bad, 1);
    }
    for (int rep = 0; rep < 10; rep++) {
        burn((i % 2) ? 40000000L : 4000000L, i);
        struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
        io_uring_prep_nop(sqe);
        sqe->user_data = rep + 1;
        r = io_uring_submit(&ring);
        if (r != 1) {
            printf("thread %ld round %d: submit: %d (%s)\n", i, rep, r, r < 0 ? strerror(-r) : "");
            atomic_fetch_add(&bad, 1);
            break;
        }
        struct io_uring_cqe *cqe;
        r = io_uring_wait_cqe(&ring, &cqe);
        if (r < 0 || cqe->user_data != (unsigned long)rep + 1) {
            printf("thread %ld round %d: wait: %d\n", i, rep, r);
            atomic_fetch_add(&bad, 1);
            break;
        }
        io_uring_cqe_seen(&ring, cqe);
    }
    io_uring_queue_exit(&ring);
    return NULL;
}

int main(int argc, char **argv)
{
    setup_flags = argc > 1 ? strtoul(argv[1], NULL, 0) : 0;
    reg = argc > 2 && !strcmp(argv[2], "reg");
    pthread_t t[6];
    for (long i = 0; i < 6; i++)
        pthread_create(&t[i], NULL, thread, (void *)i);
    for (int i = 0; i < 6; i++)
        pthread_join(t[i], NULL);
    printf("flags %#x%s: %d failed\n", setup_flags, reg ? ", ring fd registered" : "", atomic_load(&bad));
    return bad != 0;
}
