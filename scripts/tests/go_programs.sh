# A Go program (c-tests/go/net_echo.go: goroutines, a TCP echo server and
# 50 clients, sleeps, a mutex, a ticker), built with cgo (Go's default: a
# dynamic binary whose threads come from pthread_create) prints the same
# natively and under corun (one worker and the default), with libcorun.so
# loaded; built without cgo it is static and LD_PRELOAD has no effect: it
# runs as natively, without corun. Skipped when go is not installed.
source "$(dirname "$0")/../lib.sh"
command -v go >/dev/null || { echo "SKIP: go missing"; exit 0; }
export GOCACHE="$ROOT/target/go-cache" GOFLAGS=-mod=mod GO111MODULE=off
CGO_ENABLED=1 go build -o "$TMPD/net_echo_cgo" "$ROOT/c-tests/go/net_echo.go" || fail "go build (cgo)"
CGO_ENABLED=0 go build -o "$TMPD/net_echo_static" "$ROOT/c-tests/go/net_echo.go" || fail "go build (static)"
same_everywhere cgo "$TMPD/net_echo_cgo"
grep -qx "echoes answered exactly: 50 of 50" "$TMPD/cgo.native" || fail "natively: $(cat "$TMPD/cgo.native")"
for m in w1 wdef; do
    grep -qx "libcorun mapped: true" "$TMPD/cgo.$m.err" || fail "cgo ($m): libcorun.so not loaded: $(cat "$TMPD/cgo.$m.err")"
done
ok "Go with cgo: same output natively and under corun, corun loaded"
LD_PRELOAD="$LIB" timeout 60 "$TMPD/net_echo_static" >"$TMPD/static.out" 2>"$TMPD/static.err" || fail "static under LD_PRELOAD"
cmp -s "$TMPD/cgo.native" "$TMPD/static.out" || fail "static: $(cat "$TMPD/static.out")"
grep -qx "libcorun mapped: false" "$TMPD/static.err" || fail "static: $(cat "$TMPD/static.err")"
ok "Go without cgo: static, LD_PRELOAD ignored, runs as natively"
