/*
 * file_cached.c - open and the stat family on paths found and missing,
 * from threads (coroutines under corun).
 *
 * usage: file_cached DIR cached|all [main]
 *
 * DIR holds what scripts/tests/file_cached.sh made: file, sub/inner,
 * link -> file, dirlink -> sub, dangling -> nowhere, loop1 <-> loop2, fifo.
 * Each of THREADS threads makes the same calls and writes one line per
 * call (label = result [ERRNO], and for a success what the call returned:
 * file type and permissions, size, link count, the fd's status flags and
 * close-on-exec flag) into its own buffer; the main thread prints the
 * first buffer and checks that every thread saw the same. The test
 * requires the output natively and under corun to be identical.
 *
 * "cached": only calls the kernel can answer from its dentry cache once
 * the paths were looked up before (the test then checks that corun made
 * no blocking-pool hand-off). "all" adds calls that must go to the pool
 * (a FIFO's open, a flag fstatat does not know) and ones that create.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define THREADS 4

static const char *dir;
static int all;

struct out {
    char *buf;
    size_t len;
    FILE *f;
};

/* What the transcript names the path of the next calls, when not the path
 * itself (a bad pointer, a name that differs per thread). */
static __thread const char *shown;

static void line(FILE *f, const char *what, const char *path, long r, int e, const char *extra)
{
    if (shown)
        path = shown;
    if (r < 0)
        fprintf(f, "%s(%.60s) = %ld %s\n", what, path, r, strerrorname_np(e));
    else
        fprintf(f, "%s(%.60s) = ok%s\n", what, path, extra);
}

static void st_desc(char *s, size_t n, const struct stat *st)
{
    snprintf(s, n, " mode %o size %lld nlink %lu", (unsigned)st->st_mode,
             S_ISDIR(st->st_mode) ? 0LL : (long long)st->st_size, (unsigned long)st->st_nlink);
}

static void fd_desc(char *s, size_t n, int fd)
{
    struct stat st;
    int fl = fcntl(fd, F_GETFL), fdf = fcntl(fd, F_GETFD);
    if (fstat(fd, &st) < 0)
        st.st_mode = 0;
    snprintf(s, n, " type %o flags %o cloexec %d", (unsigned)(st.st_mode & S_IFMT),
             (unsigned)(fl & (O_ACCMODE | O_NONBLOCK | O_APPEND | O_PATH | O_DIRECTORY)), fdf & FD_CLOEXEC);
}

static void try_open(FILE *f, int dfd, const char *path, int flags, const char *what)
{
    char extra[128] = "";
    errno = 0;
    int fd = dfd == AT_FDCWD ? open(path, flags, 0644) : openat(dfd, path, flags, 0644);
    int e = errno;
    if (fd >= 0) {
        fd_desc(extra, sizeof extra, fd);
        close(fd);
    }
    line(f, what, path, fd, e, extra);
}

static void try_stats(FILE *f, int dfd, const char *path)
{
    char extra[128] = "";
    struct stat st;
    struct statx sx;
    long r;
    int e;

    errno = 0; r = stat(path, &st); e = errno;
    if (r == 0) st_desc(extra, sizeof extra, &st); else extra[0] = 0;
    line(f, "stat", path, r, e, extra);
    errno = 0; r = lstat(path, &st); e = errno;
    if (r == 0) st_desc(extra, sizeof extra, &st); else extra[0] = 0;
    line(f, "lstat", path, r, e, extra);
    errno = 0; r = fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW); e = errno;
    if (r == 0) st_desc(extra, sizeof extra, &st); else extra[0] = 0;
    line(f, "fstatat_nofollow", path, r, e, extra);
    errno = 0; r = fstatat(dfd, path, &st, AT_EMPTY_PATH); e = errno;
    if (r == 0) st_desc(extra, sizeof extra, &st); else extra[0] = 0;
    line(f, "fstatat_empty_ok", path, r, e, extra);
    errno = 0; r = statx(dfd, path, 0, STATX_BASIC_STATS, &sx); e = errno;
    if (r == 0)
        snprintf(extra, sizeof extra, " mode %o size %lld nlink %u", (unsigned)sx.stx_mode,
                 S_ISDIR(sx.stx_mode) ? 0LL : (long long)sx.stx_size, sx.stx_nlink);
    else
        extra[0] = 0;
    line(f, "statx", path, r, e, extra);
    errno = 0; r = statx(dfd, path, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STATX_TYPE | STATX_SIZE, &sx); e = errno;
    if (r == 0)
        snprintf(extra, sizeof extra, " type %o size %lld", (unsigned)(sx.stx_mode & S_IFMT),
                 S_ISDIR(sx.stx_mode) ? 0LL : (long long)sx.stx_size);
    else
        extra[0] = 0;
    line(f, "statx_nofollow", path, r, e, extra);
}

static const char *paths[] = {
    "file", "sub", "sub/inner", "sub/", "link", "dirlink", "dirlink/", "dirlink/inner",
    "dangling", "loop1", "file/", "file/x", "link/x", "dangling/x", "sub/inner/x/y", "loop1/x", "missing", "missing/x", "sub/missing",
    "sub/../file", "", NULL,
};

static void *run(void *arg)
{
    struct out *o = arg;
    FILE *f = open_memstream(&o->buf, &o->len);
    char p[4096];
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (f == NULL || dfd < 0) {
        perror("setup");
        exit(2);
    }
    for (int i = 0; paths[i]; i++) {
        const char *rel = paths[i];
        snprintf(p, sizeof p, "%s%s%s", dir, *rel ? "/" : "", rel);
        fprintf(f, "-- %s\n", rel);
        try_open(f, AT_FDCWD, p, O_RDONLY, "open_rdonly");
        try_open(f, AT_FDCWD, p, O_RDONLY | O_CLOEXEC, "open_cloexec");
        try_open(f, AT_FDCWD, p, O_RDONLY | O_NONBLOCK, "open_nonblock");
        try_open(f, AT_FDCWD, p, O_RDONLY | O_NOFOLLOW, "open_nofollow");
        try_open(f, AT_FDCWD, p, O_RDONLY | O_DIRECTORY, "open_directory");
        try_open(f, AT_FDCWD, p, O_WRONLY | O_APPEND, "open_wronly_append");
        try_open(f, AT_FDCWD, p, O_PATH, "open_path");
        try_open(f, dfd, rel, O_RDONLY, "openat_rdonly");
        try_stats(f, AT_FDCWD, p);
        try_stats(f, dfd, rel);
    }
    /* A path longer than PATH_MAX: refused before any lookup. */
    {
        char *longp = malloc(8000);
        memset(longp, 'd', 7990);
        for (int i = 200; i < 7990; i += 200)
            longp[i] = '/';
        longp[7990] = 0;
        try_open(f, dfd, longp, O_RDONLY, "openat_path_too_long");
        try_stats(f, dfd, longp);
        free(longp);
    }
    /* Bad path pointers: EFAULT, as natively, never a fault in corun
     * (a page nobody may read, and NULL), also right after a good path. */
    {
        char *none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (none == MAP_FAILED) {
            perror("mmap");
            exit(2);
        }
        snprintf(p, sizeof p, "%s/file", dir);
        try_stats(f, AT_FDCWD, p);
        shown = "(unreadable page)";
        try_open(f, AT_FDCWD, none, O_RDONLY, "open_unreadable_page");
        try_stats(f, AT_FDCWD, none);
        shown = "(null)";
        try_open(f, AT_FDCWD, NULL, O_RDONLY, "open_null");
        try_stats(f, dfd, NULL);
        shown = NULL;
        munmap(none, 4096);
    }
    if (all) {
        /* A path whose file changes kind between calls: each answer is
         * the path's at the time of the call (the memo of paths found
         * cached a moment ago must not answer for the kernel). */
        {
            char name[48];
            struct stat st;
            snprintf(name, sizeof name, "changing-%p", (void *)o);
            int cfd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL, 0644);
            if (cfd >= 0)
                close(cfd);
            shown = "changing";
            try_stats(f, dfd, name);
            try_open(f, dfd, name, O_RDONLY, "openat_changing_file");
            unlinkat(dfd, name, 0);
            try_stats(f, dfd, name);
            try_open(f, dfd, name, O_RDONLY, "openat_changing_gone");
            /* A symlink to a directory, not a directory: a subdirectory
             * would change the nlink other threads see on DIR. */
            symlinkat("sub", dfd, name);
            try_stats(f, dfd, name);
            try_open(f, dfd, name, O_RDONLY, "openat_changing_dir");
            unlinkat(dfd, name, 0);
            mkfifoat(dfd, name, 0644);
            errno = 0;
            long r = fstatat(dfd, name, &st, 0);
            line(f, "fstatat_changing_fifo", "changing", r, errno, r == 0 && S_ISFIFO(st.st_mode) ? " fifo" : "");
            try_open(f, dfd, name, O_RDONLY | O_NONBLOCK, "openat_changing_fifo");
            unlinkat(dfd, name, 0);
            shown = NULL;
        }
        /* These go to the pool: a FIFO's open, creation, unknown flags,
         * a name longer than NAME_MAX (the filesystem's lookup refuses
         * it). */
        memset(p, 'n', 300);
        p[300] = 0;
        try_open(f, dfd, p, O_RDONLY, "openat_long_name");
        try_stats(f, dfd, p);
        snprintf(p, sizeof p, "%s/fifo", dir);
        try_open(f, AT_FDCWD, p, O_RDONLY | O_NONBLOCK, "open_fifo");
        try_stats(f, AT_FDCWD, p);
        /* One file per thread; the transcript names it "created". */
        char name[32];
        snprintf(name, sizeof name, "created-%p", (void *)o);
        int cfd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL, 0644);
        line(f, "openat_creat_excl", "created", cfd, errno, "");
        if (cfd >= 0)
            close(cfd);
        errno = 0;
        cfd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL, 0644);
        line(f, "openat_creat_excl_again", "created", cfd, errno, "");
        errno = 0;
        cfd = openat(dfd, name, O_WRONLY | O_TRUNC);
        line(f, "openat_trunc", "created", cfd, errno, "");
        if (cfd >= 0)
            close(cfd);
        unlinkat(dfd, name, 0);
        struct stat st;
        errno = 0;
        long r = fstatat(dfd, "file", &st, 0x40000000);
        line(f, "fstatat_bad_flag", "file", r, errno, "");
        struct statx sx;
        errno = 0;
        r = statx(dfd, "file", AT_STATX_FORCE_SYNC, STATX_SIZE, &sx);
        line(f, "statx_force_sync", "file", r, errno, r == 0 && sx.stx_size == 600 ? " size 600" : "");
    }
    close(dfd);
    fclose(f);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s DIR cached|all [main]\n", argv[0]);
        return 2;
    }
    dir = argv[1];
    all = strcmp(argv[2], "all") == 0;
    struct out outs[THREADS];
    pthread_t th[THREADS];
    memset(outs, 0, sizeof outs);
    if (argc > 3 && strcmp(argv[3], "main") == 0) {
        run(&outs[0]);
        fwrite(outs[0].buf, 1, outs[0].len, stdout);
        free(outs[0].buf);
        return 0;
    }
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&th[i], NULL, run, &outs[i]) != 0) {
            perror("pthread_create");
            return 2;
        }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    int same = 1;
    for (int i = 1; i < THREADS; i++)
        same &= outs[i].len == outs[0].len && memcmp(outs[i].buf, outs[0].buf, outs[0].len) == 0;
    fwrite(outs[0].buf, 1, outs[0].len, stdout);
    printf("%d threads: %s\n", THREADS, same ? "same results" : "DIFFERENT results");
    for (int i = 0; i < THREADS; i++)
        free(outs[i].buf);
    return same ? 0 : 1;
}
