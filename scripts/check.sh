#!/usr/bin/env bash
# The pre-stop check: prints what is still off, then asks for one more
# read of the change. Exits 1 if something is off.
set -uo pipefail
cd "$(dirname "$0")/.."
off=0
say() { echo "OFF: $*"; off=1; }
cargo fmt --check >/dev/null 2>&1 || say "cargo fmt --check fails (run cargo fmt)"
cargo clippy --release --all-targets -- -D warnings >/dev/null 2>&1 || say "clippy has warnings"
[ -x .ci/run ] || say ".ci/run missing or not executable"
grep -q "make test" .ci/run || say ".ci/run does not run the README's test command (make test)"
grep -q "make test" README.md || say "README does not give 'make test'"
grep -q "make demo" README.md || say "README does not give 'make demo'"
make -s cbins >/dev/null 2>&1 || say "C programs do not build with -Wall -Wextra -Werror"
for t in scripts/tests/*.sh; do
    bash -n "$t" 2>/dev/null || say "syntax error in $t"
done
n_unsafe=$(grep -rn "unsafe {" src | wc -l)
n_safety=$(grep -rn "SAFETY:" src | wc -l)
[ "$n_safety" -ge "$((n_unsafe / 2))" ] || say "few SAFETY comments ($n_safety for $n_unsafe unsafe blocks)"
[ -z "$(git status --porcelain)" ] || say "uncommitted changes: $(git status --porcelain | wc -l) files"
if command -v duplicates >/dev/null; then
    echo "--- duplicates in this change (review each row):"
    duplicates --change --base "$(git rev-list --max-parents=0 HEAD | tail -1)" 2>/dev/null | head -20
fi
[ $off = 0 ] && echo "check: nothing off."
echo "Now read your change once more: git log --stat and git diff of what you are about to leave."
exit $off
