/* Threads that compute on a stack they switched to themselves, as a
 * user-level fiber library does (Boost.Context's fcontext, a runtime's own
 * coroutines): each spinner maps a 256 KiB stack between two guard pages,
 * moves its sp there with a few instructions of its own and spins until
 * main says stop. Main waits for every spinner to be on its stack, sleeps
 * 50 ms and stops them: under corun main runs again only if a spinner on
 * a foreign stack is preempted (on one worker, or when the spinners fill
 * every worker). Boost.Fiber's work_stealing dispatcher spins so, and
 * such a program hung for good.
 *
 * usage: preempt_foreign_stack [SPINNERS]
 * stdout: "N spinners stopped" and, per spinner, whether it spun on its
 * own stack. Exit 0 when all is as natively. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define STACK (256 * 1024)
#define PAGE 4096

static atomic_int stop;
static atomic_int on_stack;

struct spinner {
    char *lo, *hi;
    uint64_t spins;
    int sp_inside;
};

static void spin(void *arg)
{
    struct spinner *s = arg;
    char here;
    s->sp_inside = &here > s->lo && &here < s->hi;
    atomic_fetch_add(&on_stack, 1);
    uint64_t n = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        n++;
    s->spins = n;
}

/* Calls fn(arg) with the sp at top (16-byte aligned), then comes back. */
static void run_on_stack(char *top, void (*fn)(void *), void *arg)
{
#if defined(__x86_64__)
    __asm__ volatile("mov %%rsp, %%rbx\n\t"
                     "mov %0, %%rsp\n\t"
                     "mov %2, %%rdi\n\t"
                     "call *%1\n\t"
                     "mov %%rbx, %%rsp\n\t"
                     :
                     : "r"(top), "r"(fn), "r"(arg)
                     : "rbx", "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11",
                       "memory", "cc");
#else
    (void)top;
    fn(arg);
#endif
}

static void *spinner_main(void *arg)
{
    struct spinner *s = arg;
    run_on_stack(s->hi, spin, s);
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2;
    if (n < 1 || n > 16)
        return 2;
    struct spinner sp[16];
    pthread_t th[16];
    for (int i = 0; i < n; i++) {
        char *m = mmap(NULL, STACK + 2 * PAGE, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (m == MAP_FAILED || mprotect(m, PAGE, PROT_NONE) || mprotect(m + PAGE + STACK, PAGE, PROT_NONE)) {
            perror("mmap");
            return 1;
        }
        sp[i] = (struct spinner){.lo = m + PAGE, .hi = m + PAGE + STACK};
        if (pthread_create(&th[i], NULL, spinner_main, &sp[i])) {
            perror("pthread_create");
            return 1;
        }
    }
    /* Sleeps, so that on one worker the spinners run. */
    while (atomic_load(&on_stack) < n)
        usleep(1000);
    struct timespec t = {0, 50 * 1000 * 1000};
    nanosleep(&t, NULL);
    atomic_store(&stop, 1);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        printf("spinner %d on its own stack: %s\n", i, sp[i].sp_inside ? "yes" : "no");
        bad |= !sp[i].sp_inside || sp[i].spins == 0;
    }
    printf("%d spinners stopped\n", n);
    return bad;
}
