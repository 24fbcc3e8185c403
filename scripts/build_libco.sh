#!/usr/bin/env bash
# build_libco.sh OUT_DIR - builds the libco peer of the benchmark
# (bench/libco: libco_micro and libco_http) into OUT_DIR.
#
# libco (Tencent's C++ stackful-coroutine library) is in no package
# registry, so its source comes from $LIBCO_SRC if set (a checkout), else
# from a clone of github.com/Tencent/libco at the commit below, kept in
# target/libco-src. Its own Makefile builds libcolib.a with its own flags.
# Exits non-zero with one line on stderr when it cannot (no network, a
# compiler error): scripts/bench.sh then leaves libco's rows FAILED.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT=${1:?usage: build_libco.sh OUT_DIR}
COMMIT=dc6aafcc5e643d3b454a58acdc78e223634bbd1e # master, 2020-10-27
SRC=${LIBCO_SRC:-$ROOT/target/libco-src}
mkdir -p "$OUT"
log="$OUT/libco-build.log"
: >"$log"
if [ ! -f "$SRC/co_routine.h" ]; then
    [ -z "${LIBCO_SRC:-}" ] || { echo "libco: LIBCO_SRC=$SRC has no co_routine.h" >&2; exit 1; }
    rm -rf "$SRC"
    if ! timeout 120 git clone -q https://github.com/Tencent/libco "$SRC" >>"$log" 2>&1 ||
        ! git -C "$SRC" checkout -q "$COMMIT" >>"$log" 2>&1; then
        rm -rf "$SRC"
        echo "libco: could not clone github.com/Tencent/libco (set LIBCO_SRC to a checkout)" >&2
        exit 1
    fi
fi
make -C "$SRC" -j2 libcolib.a >>"$log" 2>&1 || true
[ -f "$SRC/lib/libcolib.a" ] || { echo "libco: libcolib.a not built: $(tail -2 "$log" | tr '\n' ' ')" >&2; exit 1; }
for p in libco_micro libco_http; do
    # -O2 as libco's own Makefile builds; its swap routine is assembly
    # without a .note.GNU-stack section, hence noexecstack.
    if ! g++ -O2 -Wall -Wextra -Werror -I"$SRC" -I"$ROOT/c-tests" "$ROOT/bench/libco/$p.cc" \
        "$SRC/lib/libcolib.a" -lpthread -ldl -Wl,-z,noexecstack -o "$OUT/$p" >>"$log" 2>&1; then
        rm -f "$OUT/$p"
        echo "libco: $p not built: $(grep -m1 error "$log" || tail -1 "$log")" >&2
        exit 1
    fi
done
echo "$COMMIT" >"$OUT/libco.commit"
[ ! -d "$SRC/.git" ] || git -C "$SRC" rev-parse HEAD >"$OUT/libco.commit"
