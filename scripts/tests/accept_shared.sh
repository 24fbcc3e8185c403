# accept on a listener another process shares (src/hooks/listener.rs).
# c-tests/accept_shared.c gets a listener from this script's Python and
# runs an accepting thread and a thread that writes a '.' every 2 ms. The
# race a preforking server's children run for every connection (Apache's
# worker MPM: all see it pending, one gets it, the others wait in accept)
# is made certain: strace holds corun's readiness check (poll) 200 ms on
# its way back, and meanwhile Python accepts the connection itself. The
# program's accept then waits for the next connection, which never comes:
# its other thread must keep writing (natively it does). With the accept
# made on the worker, the whole process stopped in inet_csk_accept.
source "$(dirname "$0")/../lib.sh"
command -v strace >/dev/null || { echo "SKIP: no strace"; exit 0; }

run() { # LD_PRELOAD value (empty: natively)
    python3 - "$BIN/accept_shared" "$1" <<'PY'
import os, select, socket, subprocess, sys, threading, time
prog, lib = sys.argv[1], sys.argv[2]
ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(16)
env = dict(os.environ, LD_PRELOAD=lib, CORUN_WORKERS="1")
cmd = ["strace", "-f", "-qq", "--seccomp-bpf", "-o", "/dev/null", "-e", "trace=poll",
       "-e", "inject=poll:delay_exit=200000", prog, str(ls.fileno())]
p = subprocess.Popen(cmd, pass_fds=[ls.fileno()], stdout=subprocess.PIPE, env=env)
last = [0.0]
def reader():
    while p.stdout.read1(64):
        last[0] = time.monotonic()
threading.Thread(target=reader, daemon=True).start()
t0 = time.monotonic()
while last[0] == 0.0 and time.monotonic() - t0 < 10:
    time.sleep(0.01)
if last[0] == 0.0:
    print("the program never ticked"); p.kill(); sys.exit(1)
time.sleep(0.3)
c = socket.create_connection(ls.getsockname())
# The program saw it pending (its check is held on its way back): take it.
time.sleep(0.05)
# (Never O_NONBLOCK: that flag is on the description the program shares.)
if select.select([ls], [], [], 0)[0]:
    a, _ = ls.accept()
    a.close()
    taken = "taken by the test"
else:
    taken = "taken by the program"
c.close()
# The held check returns 200 ms after it was made (the whole worker waits
# for it: strace holds the thread); from then on the ticks must go on.
time.sleep(0.3)
worst = 0.0
for _ in range(40):
    time.sleep(0.02)
    worst = max(worst, time.monotonic() - last[0])
p.kill()
p.wait()
print("%s; longest gap between ticks over 0.8 s after that: %.0f ms" % (taken, worst * 1000))
sys.exit(0 if worst < 0.4 else 1)
PY
}
out=$(run "") || fail "natively: $out"
ok "natively: $out"
out=$(run "$LIB") || fail "under corun, the program stopped while its accept waited: $out"
ok "under corun: $out"
