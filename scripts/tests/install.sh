# make install / make uninstall: the library, corun.h, the launcher, corun.pc
# both man pages and the gdb extension land under the prefix; a C API program builds with
# what pkg-config says and runs; the installed launcher preloads the
# installed library (not the build tree's) and runs a blocking program as
# natively; a staged install (DESTDIR) names the final prefix; uninstall
# leaves nothing behind.
source "$(dirname "$0")/../lib.sh"
prefix="$TMPD/prefix"
files=(lib/libcorun.so include/corun.h bin/corun lib/pkgconfig/corun.pc
       share/man/man1/corun.1 share/man/man3/corun.3 share/corun/corun-gdb.py)
make -s -C "$ROOT" install PREFIX="$prefix" >"$TMPD/make.out" 2>&1 || fail "make install: $(tail -5 "$TMPD/make.out")"
for f in "${files[@]}"; do [ -f "$prefix/$f" ] || fail "make install did not write $f"; done
[ -x "$prefix/bin/corun" ] || fail "the launcher is not executable"
n=$(find "$prefix" -type f | wc -l)
[ "$n" = ${#files[@]} ] || fail "make install wrote $n files, expected ${#files[@]}: $(find "$prefix" -type f)"
ok "make install wrote ${#files[@]} files under the prefix"

# The man pages render without a warning.
for m in man1/corun.1 man3/corun.3; do
    groff -ww -z -man "$prefix/share/man/$m" >"$TMPD/groff" 2>&1 || fail "$m: groff failed"
    [ ! -s "$TMPD/groff" ] || fail "$m: groff warns: $(cat "$TMPD/groff")"
done
ok "corun(1) and corun(3) render without warnings"

# A C API program, built with what pkg-config finds for the install.
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
flags=$(pkg-config --cflags --libs corun) || fail "pkg-config does not find corun"
case "$flags" in *"-I$prefix/include"*"-L$prefix/lib"*"-lcorun"*) ;; *) fail "pkg-config flags: $flags" ;; esac
# shellcheck disable=SC2086 # the flags are words
cc -Wall -Wextra -Werror -o "$TMPD/api" "$ROOT/scripts/tests/data/install_api.c" $flags \
    || fail "the C API program does not build with: $flags"
printf 'sum of squares 0..9 = 285\n10 coroutines, distinct ids: yes\n' >"$TMPD/api.want"
for w in 1 default; do
    envs=(-u CORUN_WORKERS); [ $w = default ] || envs=(CORUN_WORKERS="$w")
    env "${envs[@]}" LD_PRELOAD="$prefix/lib/libcorun.so" "$TMPD/api" >"$TMPD/api.out" 2>&1 || fail "api (preload, workers=$w): $(cat "$TMPD/api.out")"
    diff -u "$TMPD/api.want" "$TMPD/api.out" || fail "api (preload, workers=$w): not the expected output"
    opts=(); [ $w = default ] || opts=(-w "$w")
    "$prefix/bin/corun" "${opts[@]}" -- "$TMPD/api" >"$TMPD/api.out" 2>&1 || fail "api (launcher, workers=$w): $(cat "$TMPD/api.out")"
    diff -u "$TMPD/api.want" "$TMPD/api.out" || fail "api (launcher, workers=$w): not the expected output"
done
ok "a C API program found through pkg-config builds and runs (preloaded and via the launcher)"

# The installed launcher preloads the installed library.
maps=$(cd / && "$prefix/bin/corun" -- cat /proc/self/maps)
echo "$maps" | grep -q "$prefix/lib/libcorun.so" || fail "the installed launcher did not preload $prefix/lib/libcorun.so"
echo "$maps" | grep -q "$ROOT/target" && fail "the installed launcher preloaded the build tree's library"
# A plain blocking program under the installed launcher: the native transcript.
"$BIN/hooks_rw" >"$TMPD/rw.native" 2>/dev/null || fail "hooks_rw natively"
for w in 1 default; do
    opts=(); [ $w = default ] || opts=(-w "$w")
    # A wait reported "NOT PARKED" may be a loaded machine (see
    # same_transcript in lib.sh): up to three runs.
    for try in 1 2 3; do
        "$prefix/bin/corun" "${opts[@]}" -- "$BIN/hooks_rw" >"$TMPD/rw.$w" 2>"$TMPD/rw.$w.err" && break
        grep -q "NOT PARKED" "$TMPD/rw.$w.err" && [ $try -lt 3 ] && continue
        fail "hooks_rw under the installed launcher (workers=$w): $(tail -3 "$TMPD/rw.$w.err")"
    done
    # The program's own report that it ran under corun with every wait parked.
    grep -q "under corun: .* 0 waits not parked" "$TMPD/rw.$w.err" || fail "hooks_rw (workers=$w) did not run under corun, or a wait blocked: $(cat "$TMPD/rw.$w.err")"
    diff -u "$TMPD/rw.native" "$TMPD/rw.$w" || fail "hooks_rw (workers=$w): transcript differs from the native one"
done
ok "the installed launcher preloads the installed library; hooks_rw's transcript is the native one"

# A staged install names the final prefix, not the staging directory, and
# its launcher looks for the library there only.
stage="$TMPD/stage"
make -s -C "$ROOT" install DESTDIR="$stage" PREFIX=/opt/corun-test >"$TMPD/make.out" 2>&1 || fail "make install DESTDIR: $(tail -5 "$TMPD/make.out")"
for f in "${files[@]}"; do [ -f "$stage/opt/corun-test/$f" ] || fail "staged install did not write $f"; done
grep -qx 'prefix=/opt/corun-test' "$stage/opt/corun-test/lib/pkgconfig/corun.pc" || fail "staged corun.pc: $(cat "$stage/opt/corun-test/lib/pkgconfig/corun.pc")"
grep -qx 'libdir=/opt/corun-test/lib' "$stage/opt/corun-test/lib/pkgconfig/corun.pc" || fail "staged corun.pc has the wrong libdir"
grep -q "$stage" "$stage/opt/corun-test/lib/pkgconfig/corun.pc" "$stage/opt/corun-test/bin/corun" && fail "the staging directory leaked into an installed file"
if [ ! -e /opt/corun-test ]; then
    set +e
    "$stage/opt/corun-test/bin/corun" -- /bin/true 2>"$TMPD/staged.err"
    rc=$?
    set -e
    [ $rc = 2 ] && grep -q "/opt/corun-test/lib/libcorun.so" "$TMPD/staged.err" \
        || fail "the staged launcher, before its library is in place, should say where it looked (exit $rc: $(cat "$TMPD/staged.err"))"
fi
ok "a DESTDIR install names /opt/corun-test and the launcher looks there"

# Uninstall leaves nothing.
make -s -C "$ROOT" uninstall PREFIX="$prefix" >"$TMPD/make.out" 2>&1 || fail "make uninstall: $(cat "$TMPD/make.out")"
left=$(find "$prefix" -mindepth 1)
[ -z "$left" ] || fail "make uninstall left: $left"
make -s -C "$ROOT" uninstall DESTDIR="$stage" PREFIX=/opt/corun-test >"$TMPD/make.out" 2>&1 || fail "make uninstall DESTDIR: $(cat "$TMPD/make.out")"
left=$(find "$stage/opt/corun-test" -mindepth 1)
[ -z "$left" ] || fail "make uninstall (DESTDIR) left: $left"
ok "make uninstall removed every file and directory it made"
