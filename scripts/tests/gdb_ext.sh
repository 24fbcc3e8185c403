# scripts/corun-gdb.py: gdb attached to a program under corun whose
# threads wait on a pipe read, a mutex, a sleep and a join
# (c-tests/parked_threads.c dump) lists every coroutine with its state,
# name and wait (`corun list`), and `corun bt ID` shows a coroutine's own
# frames down to the program's function that called read/nanosleep; the
# program then ends as natively (gdb wrote nothing into it). The same on a
# core file the kernel wrote. SKIP when gdb is missing or cannot ptrace.
source "$(dirname "$0")/../lib.sh"
command -v gdb >/dev/null || { echo "SKIP: gdb is not installed"; exit 0; }
EXT="$ROOT/scripts/corun-gdb.py"
printf 'ready\nevery thread finished\n' >"$TMPD/want"

# start_program: parked_threads dump under corun, stdin a fifo held open by
# this shell (fd 7); sets PID once it printed "ready".
start_program() {
    rm -f "$TMPD/fifo"; mkfifo "$TMPD/fifo"
    (ulimit -c unlimited; cd "$TMPD" && CORUN_WORKERS=2 LD_PRELOAD="$LIB" \
        exec "$BIN/parked_threads" dump <"$TMPD/fifo" >"$TMPD/out" 2>"$TMPD/err") &
    PID=$!
    exec 7>"$TMPD/fifo"
    for _ in $(seq 1 200); do grep -q ready "$TMPD/out" && return 0; sleep 0.05; done
    fail "the program never got ready: $(cat "$TMPD/err")"
}

# check_gdb_output FILE WHAT: the list and the two backtraces in FILE.
check_gdb_output() {
    local f=$1 what=$2
    has() { grep -q -- "$1" "$f" || fail "$what: gdb's output has no line matching '$1'"; }
    has "^5 coroutines$"
    has "^ *1  parked    main  waits on fd 0 (read)$"
    has "^ *[0-9]*  parked    \"reader\" (reader)  waits on fd [0-9]* (read)$"
    has "^ *[0-9]*  parked    \"locker\" (locker)  waits on mutex 0x[0-9a-f]*$"
    has "^ *[0-9]*  parked    \"sleeper\" (sleeper)  waits on timer$"
    has "^ *[0-9]*  parked    \"joiner\" (joiner)  waits on join of coroutine [0-9]*$"
    # corun bt of the reader: the hook, then the program's reader, its
    # source line, in that order.
    awk '/^coroutine [0-9]* \(reader\), parked:$/ {on=1; next} /^coroutine / {on=0} on' "$f" >"$f.reader"
    grep -q " in corun::hooks::rw::read\(_hooked\)\? at src/hooks/rw.rs:" "$f.reader" ||
        fail "$what: the reader's backtrace has no frame of the read hook: $(cat "$f.reader")"
    grep -q " in reader at c-tests/parked_threads.c:[0-9]*$" "$f.reader" ||
        fail "$what: the reader's backtrace has no frame of reader(): $(cat "$f.reader")"
    [ "$(grep -n ' in corun::hooks::rw::read\(_hooked\)\? at' "$f.reader" | tail -1 | cut -d: -f1)" -lt \
      "$(grep -n ' in reader at' "$f.reader" | cut -d: -f1)" ] || fail "$what: reader() is not below the hook"
    awk '/^coroutine [0-9]* \(sleeper\), parked:$/ {on=1; next} /^coroutine / {on=0} on' "$f" >"$f.sleeper"
    grep -q " in sleeper at c-tests/parked_threads.c:[0-9]*$" "$f.sleeper" ||
        fail "$what: the sleeper's backtrace has no frame of sleeper(): $(cat "$f.sleeper")"
}

start_program
gdb -batch -nx -p "$PID" -ex 'info threads' >"$TMPD/probe" 2>&1 || true
if grep -qiE "ptrace: Operation not permitted|could not attach|not permitted" "$TMPD/probe"; then
    echo x >&7; exec 7>&-; wait "$PID" || true
    echo "SKIP: gdb cannot ptrace here: $(grep -m1 -i 'ptrace\|attach' "$TMPD/probe")"
    exit 0
fi
gdb -batch -nx -p "$PID" -x "$EXT" -ex 'corun list' >"$TMPD/list" 2>&1 || true
reader=$(sed -n 's/^ *\([0-9]*\)  parked    "reader".*/\1/p' "$TMPD/list")
sleeper=$(sed -n 's/^ *\([0-9]*\)  parked    "sleeper".*/\1/p' "$TMPD/list")
[ -n "$reader" ] && [ -n "$sleeper" ] || fail "corun list names no reader or sleeper: $(cat "$TMPD/list")"
gdb -batch -nx -p "$PID" -x "$EXT" -ex 'corun list' -ex "corun bt $reader" -ex "corun bt $sleeper" \
    >"$TMPD/live" 2>&1 || fail "gdb -p failed: $(tail -5 "$TMPD/live")"
check_gdb_output "$TMPD/live" "live"
ok "live: corun list names every coroutine and its wait; corun bt reaches reader() and sleeper()"

# A core: the kernel's (SIGABRT with ulimit -c unlimited, core_pattern
# "core" writing in the program's directory). Not when cores go to a pipe
# (systemd-coredump, apport): then there is no file to read.
pattern=$(cat /proc/sys/kernel/core_pattern)
if [[ "$pattern" == \|* ]]; then
    echo x >&7; exec 7>&-
    wait "$PID" || fail "the program failed after gdb: $(cat "$TMPD/err")"
    diff -u "$TMPD/want" "$TMPD/out" || fail "not the native output after gdb"
    ok "the program ended as natively after gdb (no core test: core_pattern is a pipe: $pattern)"
    exit 0
fi
# First the live program goes on as natively after gdb left: let it end.
echo x >&7; exec 7>&-
wait "$PID" || fail "the program failed after gdb: $(cat "$TMPD/err")"
diff -u "$TMPD/want" "$TMPD/out" || fail "not the native output after gdb detached"
ok "the program ended as natively after gdb detached"

start_program
kill -ABRT "$PID"
exec 7>&-
wait "$PID" 2>/dev/null && fail "the program survived SIGABRT"
# (No match is no core: core_pattern may send it elsewhere, an absolute path.)
core=$(ls "$TMPD"/core* 2>/dev/null | head -1 || true)
[ -n "$core" ] || { ok "no core written (core_pattern: $pattern): core part not run"; exit 0; }
gdb -batch -nx "$BIN/parked_threads" "$core" -x "$EXT" -ex 'corun list' >"$TMPD/list" 2>&1 || true
reader=$(sed -n 's/^ *\([0-9]*\)  parked    "reader".*/\1/p' "$TMPD/list")
sleeper=$(sed -n 's/^ *\([0-9]*\)  parked    "sleeper".*/\1/p' "$TMPD/list")
[ -n "$reader" ] && [ -n "$sleeper" ] || fail "core: corun list names no reader or sleeper: $(cat "$TMPD/list")"
gdb -batch -nx "$BIN/parked_threads" "$core" -x "$EXT" -ex 'corun list' \
    -ex "corun bt $reader" -ex "corun bt $sleeper" >"$TMPD/core.out" 2>&1 || fail "gdb on the core failed: $(tail -5 "$TMPD/core.out")"
check_gdb_output "$TMPD/core.out" "core"
ok "core: the same list and backtraces"
