/* A process forked from code running on a stack the program switched to
 * itself (swapcontext onto an mmap'ed stack, as Ruby's fibers do) forks
 * again from such a stack and waits for that child the way Ruby does: a
 * SIGCHLD handler writes to a pipe the waiter polls (Ruby's self-pipe),
 * then waitpid. Ruby 3.1's TestFiber#test_fork_from_fiber waited for ever
 * under corun: in the child (its only thread, on a fiber stack), the
 * SIGCHLD was made pending and its handler never ran.
 *
 * The child polls with a 10 s bound, the parent 30 s, so a lost signal
 * prints "timeout" instead of hanging. Output: one line per level, the same natively and
 * under corun. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#define STACK_SIZE (256 * 1024)

static int pipefd[2];
static ucontext_t main_ctx, fiber_ctx;
static pid_t forked;

static void on_sigchld(int sig) {
    int saved = errno;
    char c = (char)sig;
    if (write(pipefd[1], &c, 1) < 0) {
        /* Full pipe: a byte is there already. */
    }
    errno = saved;
}

/* A fresh pipe and handler (a forked child makes its own, as Ruby
 * does after fork). */
static void setup(void) {
    if (pipe(pipefd) != 0) {
        perror("pipe");
        exit(2);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigchld;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGCHLD, &sa, NULL) != 0) {
        perror("sigaction");
        exit(2);
    }
}

/* Polls the pipe until the handler wrote (`ms` at most), then reaps
 * `pid`: 0 when it exited 0. */
static int wait_child(const char *who, pid_t pid, int ms) {
    struct pollfd p = {.fd = pipefd[0], .events = POLLIN};
    int r;
    do {
        r = poll(&p, 1, ms);
    } while (r < 0 && errno == EINTR);
    if (r == 0) {
        printf("%s: timeout: the SIGCHLD handler did not run\n", who);
        fflush(stdout);
        return 1;
    }
    char c;
    if (read(pipefd[0], &c, 1) != 1 || c != SIGCHLD) {
        printf("%s: bad byte from the handler\n", who);
        return 1;
    }
    int st;
    if (waitpid(pid, &st, 0) != pid) {
        perror("waitpid");
        return 1;
    }
    int good = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    printf("%s: handler ran, child exited %s\n", who, good ? "0" : "badly");
    fflush(stdout);
    return good ? 0 : 1;
}

/* Runs on the fiber's stack: forks, and goes back to the caller (in the
 * parent and in the child alike, both still on a fiber stack). */
static void fiber_body(void) {
    fflush(stdout);
    forked = fork();
    if (forked < 0) {
        perror("fork");
        exit(2);
    }
    swapcontext(&fiber_ctx, &main_ctx);
    /* Never resumed. */
    abort();
}

/* Switches to a new fiber that forks; returns the fork's result, on the
 * stack that called (in the child: the caller's stack as it was). */
static pid_t fork_on_fiber(void) {
    void *stack = mmap(NULL, STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (stack == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    getcontext(&fiber_ctx);
    fiber_ctx.uc_stack.ss_sp = stack;
    fiber_ctx.uc_stack.ss_size = STACK_SIZE;
    fiber_ctx.uc_link = NULL;
    makecontext(&fiber_ctx, fiber_body, 0);
    swapcontext(&main_ctx, &fiber_ctx);
    return forked;
}

static ucontext_t outer_main, outer_ctx;
static int outer_status;

/* The child's whole life, on the outer fiber's stack: it forks again
 * from a fiber of its own, then waits for that grandchild from here. */
static void child_body(void) {
    setup();
    pid_t g = fork_on_fiber();
    if (g == 0)
        _exit(0);
    _exit(wait_child("child", g, 10000));
}

static void outer_body(void) {
    fflush(stdout);
    pid_t c = fork();
    if (c < 0) {
        perror("fork");
        exit(2);
    }
    if (c == 0)
        child_body();
    outer_status = c;
    swapcontext(&outer_ctx, &outer_main);
    abort();
}

int main(void) {
    setup();
    void *stack = mmap(NULL, STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (stack == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    getcontext(&outer_ctx);
    outer_ctx.uc_stack.ss_sp = stack;
    outer_ctx.uc_stack.ss_size = STACK_SIZE;
    outer_ctx.uc_link = NULL;
    makecontext(&outer_ctx, outer_body, 0);
    swapcontext(&outer_main, &outer_ctx);
    /* Back on main's stack: the parent waits for the child. */
    /* (Longer than the child's bound, which ends the child.) */
    return wait_child("parent", outer_status, 30000);
}
