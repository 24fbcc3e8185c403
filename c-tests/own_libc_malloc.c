/* A program that brings its own malloc and also defines glibc's internal
 * names of it, __libc_malloc, __libc_free..., as mimalloc (statically
 * linked into mold), tcmalloc and jemalloc built to replace malloc do.
 * Like mimalloc, its allocator reads a file (open, read, close) while it
 * sets itself up at the first call, and cannot be entered again until
 * that is done: a re-entry prints "re-entered" and exits 2. Natively
 * glibc never calls the __libc_* names (they count 0 here); corun's own
 * heap called them by name, so they bound to the program's: mold aborted
 * at its first malloc under corun (its allocator's open went through
 * corun's hook, which allocated). Then threads allocate, wait on pipes and
 * free, and the program prints what they computed.
 *
 * Built with -DOWN_MALLOC_LIBRARY -shared -fPIC it is only the allocator, a
 * library to load after libcorun.so (LD_PRELOAD="libcorun.so lib.so": the
 * order of a program that links tcmalloc), whose __libc_* names end the
 * process if called: dlsym(RTLD_NEXT) would have found them there. */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define ARENA (256u << 20)
#define HDR 16

static char *arena;
static atomic_size_t used;
static atomic_int state; /* 0 not set up, 1 setting up, 2 ready */
#ifndef OWN_MALLOC_LIBRARY
static atomic_long libc_named_calls;
#endif

static void say(const char *s)
{
    ssize_t r = write(2, s, strlen(s));
    (void)r;
}

static void set_up(void)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong(&state, &expected, 1)) {
        if (expected == 1) {
            say("own_libc_malloc: allocator re-entered during its own set-up\n");
            _exit(2);
        }
        return;
    }
    arena = mmap(NULL, ARENA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (arena == MAP_FAILED)
        _exit(3);
    /* What mimalloc reads at its set-up. */
    int fd = open("/proc/sys/vm/overcommit_memory", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        char b[16];
        ssize_t r = read(fd, b, sizeof b);
        (void)r;
        close(fd);
    }
    atomic_store(&state, 2);
}

static void *take(size_t size, size_t align)
{
    if (atomic_load(&state) != 2)
        set_up();
    if (align < HDR)
        align = HDR;
    size_t need = (size + HDR + align + 15) & ~(size_t)15;
    size_t off = atomic_fetch_add(&used, need);
    if (off + need > ARENA)
        return NULL;
    uintptr_t p = ((uintptr_t)arena + off + HDR + align - 1) & ~(uintptr_t)(align - 1);
    ((size_t *)p)[-1] = size;
    return (void *)p;
}

void *malloc(size_t n) { return take(n, HDR); }
void free(void *p) { (void)p; }
void *calloc(size_t n, size_t s) { return take(n * s, HDR); } /* mmap'd: zero */
void *realloc(void *p, size_t n)
{
    void *q = take(n, HDR);
    if (p && q) {
        size_t old = ((size_t *)p)[-1];
        memcpy(q, p, old < n ? old : n);
    }
    return q;
}
void *memalign(size_t a, size_t n) { return take(n, a); }
void *aligned_alloc(size_t a, size_t n) { return take(n, a); }
int posix_memalign(void **r, size_t a, size_t n)
{
    *r = take(n, a);
    return *r ? 0 : 12;
}
void *valloc(size_t n) { return take(n, 4096); }
void *pvalloc(size_t n) { return take((n + 4095) & ~(size_t)4095, 4096); }
size_t malloc_usable_size(void *p) { return p ? ((size_t *)p)[-1] : 0; }

#ifdef OWN_MALLOC_LIBRARY
#define NOTE_LIBC_NAMED_CALL()                                                  \
    do {                                                                        \
        say("own_libc_malloc: the allocator's __libc_* name was called\n"); \
        _exit(4);                                                               \
    } while (0)
#else
#define NOTE_LIBC_NAMED_CALL() atomic_fetch_add(&libc_named_calls, 1)
#endif

void *__libc_malloc(size_t n) { NOTE_LIBC_NAMED_CALL(); return malloc(n); }
void __libc_free(void *p) { NOTE_LIBC_NAMED_CALL(); free(p); }
void *__libc_calloc(size_t n, size_t s) { NOTE_LIBC_NAMED_CALL(); return calloc(n, s); }
void *__libc_realloc(void *p, size_t n) { NOTE_LIBC_NAMED_CALL(); return realloc(p, n); }
void *__libc_memalign(size_t a, size_t n) { NOTE_LIBC_NAMED_CALL(); return memalign(a, n); }

#ifndef OWN_MALLOC_LIBRARY
/* The first call comes before main, as libstdc++'s start-up makes it in mold. */
__attribute__((constructor)) static void early(void)
{
    free(malloc(1));
}

#define THREADS 8

struct job {
    int fds[2];
    long sum;
};

static void *worker(void *arg)
{
    struct job *j = arg;
    long v;
    for (int i = 0; i < 100; i++) {
        if (read(j->fds[0], &v, sizeof v) != sizeof v)
            return NULL;
        char *s = malloc(64 + i);
        snprintf(s, 64, "%ld", v * 3);
        j->sum += strtol(s, NULL, 10);
        free(s);
    }
    return NULL;
}

int main(void)
{
    struct job jobs[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        jobs[i].sum = 0;
        if (pipe(jobs[i].fds) || pthread_create(&t[i], NULL, worker, &jobs[i]))
            return 1;
    }
    for (long k = 0; k < 100; k++)
        for (int i = 0; i < THREADS; i++) {
            long v = k * (i + 1);
            if (write(jobs[i].fds[1], &v, sizeof v) != sizeof v)
                return 1;
        }
    long total = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        printf("thread %d: %ld\n", i, jobs[i].sum);
        total += jobs[i].sum;
    }
    printf("total %ld\n", total);
    printf("calls to the program's __libc_* names: %ld\n", atomic_load(&libc_named_calls));
    return 0;
}
#endif
