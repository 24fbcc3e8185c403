/* Threads that compute in JIT-compiled code, as a JavaScript engine's
 * threads do (Node's `while (true);` in a worker), beside a main thread
 * that sleeps and then tells them to stop.
 *
 * The machine code is written into an anonymous executable mapping: no
 * object holds it and it has no unwind table, like V8's. It keeps frame
 * pointers (V8's frames do: its own stack walker follows rbp). An outer
 * "JIT" function calls an inner one that spins on a flag. The C frame that
 * calls into it has a large buffer left uninitialised over the spot where
 * snprintf's and qsort's frames just were: stale return addresses into
 * glibc sit in it, as they do in V8's C++ frames under its JIT frames.
 *
 * Natively the kernel time-slices the threads. Under corun with one
 * worker, main's sleep ends only if the spinning coroutines are
 * preempted; they stop only once main ran. It prints the same lines
 * either way. With the argument `term`, the spinners never stop: main
 * waits in pause() with a SIGTERM handler that prints and exits, and the
 * test sends SIGTERM (Node's SignalExit: test.py's timeout could not end
 * the hung test). Both hung before corun's safe-point test followed the frame
 * pointers of code without unwind tables (it scanned the whole stack from
 * the JIT frame up, found the stale glibc words, and never preempted). */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define SPINNERS 3

typedef void (*jit_fn)(volatile long *flag);

static jit_fn jit;
static volatile long stop[SPINNERS];
static volatile long started[SPINNERS];

/* outer: push rbp; mov rbp,rsp; call inner; pop rbp; ret
 * inner: push rbp; mov rbp,rsp; sub rsp,64;
 *        loop: mov rax,[rdi]; test rax,rax; je loop;
 *        mov rsp,rbp; pop rbp; ret */
static const unsigned char code[] = {
    0x55, 0x48, 0x89, 0xe5, 0xe8, 0x07, 0x00, 0x00, 0x00, 0x5d, 0xc3,
    0x90, 0x90, 0x90, 0x90, 0x90,
    0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x40,
    0x48, 0x8b, 0x07, 0x48, 0x85, 0xc0, 0x74, 0xf8,
    0x48, 0x89, 0xec, 0x5d, 0xc3,
};

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Calls into glibc that leave return addresses into it on the stack. */
__attribute__((noinline)) static int dirty(int i)
{
    char buf[256];
    char *words[] = {"delta", "alpha", "charlie", "bravo", buf};
    snprintf(buf, sizeof buf, "%d %s %f %p", i, "x", i * 1.5, (void *)buf);
    qsort(words, 5, sizeof words[0], cmp);
    return words[1][0]; /* words[0] is buf, a digit first */
}

/* A frame whose unused buffer covers where dirty's callees ran. */
__attribute__((noinline)) static void run_jit(volatile long *flag)
{
    char pad[4096];
    __asm__ volatile("" : : "r"(pad) : "memory");
    jit(flag);
    __asm__ volatile("" : : "r"(pad) : "memory");
}

static void *spinner(void *arg)
{
    long i = (long)arg;
    if (dirty((int)i) != 'a')
        abort();
    started[i] = 1;
    run_jit(&stop[i]);
    return NULL;
}

static void on_term(int sig)
{
    (void)sig;
    static const char msg[] = "terminated\n";
    if (write(1, msg, sizeof msg - 1) < 0)
        _exit(2);
    _exit(0);
}

int main(int argc, char **argv)
{
    int term = argc > 1 && strcmp(argv[1], "term") == 0;
    if (term)
        signal(SIGTERM, on_term);
    void *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    memcpy(mem, code, sizeof code);
    jit = (jit_fn)(uintptr_t)mem;

    pthread_t t[SPINNERS];
    for (long i = 0; i < SPINNERS; i++)
        if (pthread_create(&t[i], NULL, spinner, (void *)i) != 0)
            return 1;
    /* Let every spinner reach its loop, then stop them one by one. */
    for (int i = 0; i < SPINNERS; i++) {
        while (!started[i]) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        struct timespec ts = {0, 30000000};
        nanosleep(&ts, NULL);
    }
    if (term) {
        printf("spinning\n");
        fflush(stdout);
        for (;;)
            pause();
    }
    for (int i = 0; i < SPINNERS; i++) {
        stop[i] = 1;
        pthread_join(t[i], NULL);
        printf("spinner %d stopped\n", i);
    }
    printf("done\n");
    return 0;
}
