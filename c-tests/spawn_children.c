/*
 * spawn_children: the ways a program starts other programs, each checked.
 * Prints a transcript that must be identical natively and under corun.
 *   - fork + exec of /bin/sh -c with pipes to its stdin and from its stdout
 *     (the child inherits blocking pipes: `cat` must not see EAGAIN);
 *   - fork where the child keeps running C code (writes to a pipe, sleeps)
 *     before exiting with a status;
 *   - system();
 *   - popen() for reading and for writing;
 *   - vfork + exec.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int fails;
#define CHECK(cond, ...) do { if (!(cond)) { fails++; printf("FAILED: " __VA_ARGS__); printf("\n"); } } while (0)

static void fork_exec_sh(void)
{
    int in[2], out[2];
    if (pipe(in) || pipe(out))
        exit(3);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]); close(in[1]); close(out[0]); close(out[1]);
        execl("/bin/sh", "sh", "-c", "tr a-z A-Z | cat; echo flags=$(cat /proc/self/fdinfo/0 | grep flags)", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    const char *msg = "hello from the parent\n";
    /* The parent writes slowly; sh's children block on the pipe. */
    for (const char *p = msg; *p; p += 6) {
        size_t n = strlen(p) < 6 ? strlen(p) : 6;
        if (write(in[1], p, n) != (ssize_t)n)
            exit(4);
        usleep(20000);
    }
    close(in[1]);
    char buf[4096];
    size_t got = 0;
    ssize_t n;
    while ((n = read(out[0], buf + got, sizeof buf - 1 - got)) > 0)
        got += (size_t)n;
    buf[got] = 0;
    close(out[0]);
    int st;
    pid_t w = waitpid(pid, &st, 0);
    CHECK(w == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "sh exit");
    CHECK(strstr(buf, "HELLO FROM THE PARENT\n") != NULL, "sh output: %s", buf);
    /* The inherited pipe was blocking in the child: O_NONBLOCK (04000 octal) absent. */
    char *f = strstr(buf, "flags:");
    long flags = f ? strtol(f + 6, NULL, 8) : -1;
    CHECK(f && !(flags & O_NONBLOCK), "child's stdin flags %s", f ? f : "?");
    printf("fork_exec_sh: ok=%d\n", fails == 0);
}

static void fork_child_runs_c(void)
{
    int p[2];
    if (pipe(p))
        exit(3);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        for (int i = 0; i < 5; i++) {
            char c = (char)('0' + i);
            if (write(p[1], &c, 1) != 1)
                _exit(9);
            usleep(5000);
        }
        _exit(42);
    }
    close(p[1]);
    char buf[16];
    size_t got = 0;
    ssize_t n;
    while ((n = read(p[0], buf + got, sizeof buf - got)) > 0)
        got += (size_t)n;
    close(p[0]);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 42, "child status");
    CHECK(got == 5 && !memcmp(buf, "01234", 5), "child data");
    printf("fork_child_runs_c: got=%.*s\n", (int)got, buf);
}

static void run_system(void)
{
    int r = system("exit 7");
    CHECK(WIFEXITED(r) && WEXITSTATUS(r) == 7, "system status %d", r);
    printf("system: status=%d\n", WEXITSTATUS(r));
}

static void run_popen(void)
{
    FILE *f = popen("echo popen-read; sleep 0.05; echo done", "r");
    char line[128], all[256] = "";
    while (fgets(line, sizeof line, f))
        strncat(all, line, sizeof all - strlen(all) - 1);
    int st = pclose(f);
    CHECK(!strcmp(all, "popen-read\ndone\n") && WEXITSTATUS(st) == 0, "popen r: %s", all);
    f = popen("wc -c", "w");
    for (int i = 0; i < 1000; i++)
        fputs("0123456789", f);
    st = pclose(f);
    CHECK(WEXITSTATUS(st) == 0, "popen w");
    printf("popen: ok\n");
}

static void run_vfork(void)
{
    pid_t pid = vfork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", "exit 3", (char *)NULL);
        _exit(127);
    }
    int st;
    CHECK(waitpid(pid, &st, 0) == pid && WEXITSTATUS(st) == 3, "vfork status");
    printf("vfork: status=%d\n", WEXITSTATUS(st));
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    fork_exec_sh();
    fork_child_runs_c();
    run_system();
    run_popen();
    run_vfork();
    printf("spawn_children: %s\n", fails ? "FAILED" : "all ok");
    return fails ? 1 : 0;
}
