# A Go program built with cgo runs unchanged under corun
# (src/hooks/pthread/foreign.rs): Go's runtime makes its threads with
# pthread_create and waits in them with its own inline futex and
# epoll_wait system calls, so those threads stay kernel threads (as
# coroutines they held their workers: the program hung). 200 goroutines
# make cgo calls (some blocking in usleep), 100,000 values pass over a
# channel, and 200 HTTP replies over 127.0.0.1 are checked by hash: the
# same output natively and under corun (1 worker, default), with no
# stall reported.
source "$(dirname "$0")/../lib.sh"
command -v go >/dev/null 2>&1 || fail "go is missing (scripts/deps.sh installs golang-go)"
mkdir -p "$ROOT/target/go-cache"
(cd "$ROOT/c-tests/go/cgo_threads" && CGO_ENABLED=1 GOCACHE="$ROOT/target/go-cache" GOFLAGS=-mod=mod \
    go build -o "$TMPD/cgo_threads" .) || fail "go build failed"
nm -D "$TMPD/cgo_threads" | grep -q ' x_cgo_init$' || fail "the program is not a cgo one"
same_output_native_and_corun "$TMPD/cgo_threads"
grep -q "stalled" "$TMPD/corun.err" && fail "corun reported a stall: $(cat "$TMPD/corun.err")"
ok "a cgo Go program: same output natively and under corun"
