# ripgrep (Debian's rg, a Rust program: std threads, channels, a parallel
# directory walker) searches a copy of /usr/include plus 3,000 generated
# files with 4 threads natively and under corun (one worker and the
# default), with identical results: the parallel search (sorted after),
# --sort path, --files and per-file counts. Installs ripgrep if missing.
source "$(dirname "$0")/../lib.sh"
if ! command -v rg >/dev/null; then
    echo "installing ripgrep"
    apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq ripgrep >/dev/null 2>&1 || fail "cannot install ripgrep"
fi
tree="$TMPD/tree"
mkdir -p "$tree/gen"
cp -r /usr/include "$tree/include"
# 3,000 files in 30 directories; every third holds "needle <i>" on line 2.
for d in $(seq 0 29); do mkdir -p "$tree/gen/d$d"; done
for i in $(seq 0 2999); do
    if ((i % 3 == 0)); then printf 'hay\nneedle %d\nhay\n' "$i"; else printf 'hay %d\n' "$i"; fi >"$tree/gen/d$((i % 30))/f$i.txt"
done
cd "$TMPD"
rgo=(--no-config --no-ignore --hidden --color never)
same_everywhere rg_parallel bash -o pipefail -c "rg -j4 ${rgo[*]} -n -e '^\s*#\s*include|needle' tree | LC_ALL=C sort"
same_everywhere rg_sorted rg -j4 "${rgo[@]}" --sort path -n -e '^\s*#\s*include|needle' tree
same_everywhere rg_files bash -o pipefail -c "rg -j4 ${rgo[*]} --files tree | LC_ALL=C sort"
same_everywhere rg_count bash -o pipefail -c "rg -j4 ${rgo[*]} -c needle tree/gen | LC_ALL=C sort"
# Exact values where the tree is ours, and the same lines both ways.
[ "$(grep -c ':needle ' "$TMPD/rg_parallel.native")" = 1000 ] || fail "rg: $(grep -c ':needle ' "$TMPD/rg_parallel.native") needle lines, expected 1000"
grep -qx "tree/gen/d0/f0.txt:2:needle 0" "$TMPD/rg_sorted.native" || fail "rg: needle 0 not found at line 2"
[ "$(wc -l <"$TMPD/rg_count.native")" = 1000 ] || fail "rg -c: $(wc -l <"$TMPD/rg_count.native") files, expected 1000"
grep -qvx '.*:1' "$TMPD/rg_count.native" && fail "rg -c: a file with a count other than 1"
[ "$(grep -c '^tree/gen/' "$TMPD/rg_files.native")" = 3000 ] || fail "rg --files: not the 3000 generated files"
[ "$(wc -l <"$TMPD/rg_files.native")" = "$(find tree -type f | wc -l)" ] || fail "rg --files: not every file of the tree"
LC_ALL=C sort "$TMPD/rg_sorted.native" | cmp -s - "$TMPD/rg_parallel.native" || fail "rg: --sort path and the parallel search found different lines"
n=$(wc -l <"$TMPD/rg_parallel.native")
[ "$n" -gt 10000 ] || fail "rg: only $n matching lines"
ok "ripgrep -j4: $n matching lines in $(wc -l <"$TMPD/rg_files.native") files, identical natively and under corun (1 and default workers)"
