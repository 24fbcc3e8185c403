# make -j4 under corun: make blocks SIGCHLD and waits for its children in
# pselect with a mask that lets SIGCHLD in (before corun delivered signals
# to parked coroutines, it hung there). Compiles SIG_MAKE_FILES (default
# 200) small C files into an archive natively and under corun (make, gcc,
# cc1, as, ar all run under corun), with one worker and the default; the
# output, the exit status and every object file must be the same.
source "$(dirname "$0")/../lib.sh"
N="${SIG_MAKE_FILES:-200}"
command -v make >/dev/null && command -v gcc >/dev/null || { echo "SKIP: make or gcc missing"; exit 0; }
mkproject() {
    mkdir -p "$1"
    for i in $(seq 1 "$N"); do
        printf 'int f%d(int x) { return x * %d + 1; }\n' "$i" "$i" >"$1/f$i.c"
    done
    cat >"$1/Makefile" <<'MK'
SRCS := $(sort $(wildcard f*.c))
OBJS := $(SRCS:.c=.o)
all: lib.a
lib.a: $(OBJS)
	@ar rcsD $@ $(OBJS) && echo "archive: $(words $(OBJS)) objects"
%.o: %.c
	@gcc -O1 -c $< -o $@
MK
}
# build DIR [env...]: make -j4 in DIR; prints its output, then the status.
build() {
    local d="$1"; shift
    # (Not the jobserver or flags of a make that runs this test.)
    (cd "$d" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "$@" timeout 120 make --no-print-directory -j4 2>&1
     echo "make exit status $?")
}
mkproject "$TMPD/native"
build "$TMPD/native" >"$TMPD/native.out"
grep -q "exit status 0" "$TMPD/native.out" || fail "natively: $(cat "$TMPD/native.out")"
for w in 1 default; do
    d="$TMPD/corun$w"
    mkproject "$d"
    t0=$(date +%s%N)
    if [ "$w" = default ]; then
        build "$d" LD_PRELOAD="$LIB" >"$d.out"
    else
        build "$d" LD_PRELOAD="$LIB" CORUN_WORKERS="$w" >"$d.out"
    fi
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    diff -u "$TMPD/native.out" "$d.out" || fail "workers=$w: make's output differs"
    for i in $(seq 1 "$N"); do
        cmp -s "$TMPD/native/f$i.o" "$d/f$i.o" || fail "workers=$w: f$i.o differs"
    done
    cmp -s "$TMPD/native/lib.a" "$d/lib.a" || fail "workers=$w: lib.a differs"
    ok "workers=$w: make -j4 built $N objects in $ms ms, identical to the native build"
done
