# Exit handlers that join threads after main returns (c-tests/exit_joins.c:
# an atexit handler and a destructor each wake a thread and join it) print
# the same natively and under corun, and exit with main's value. Before,
# they ran on worker 0's kernel thread with no coroutine and waited for
# ever on a thread whose home is worker 0 (the program's 5 s limit then
# printed "timed out"). Then Node.js, whose libuv thread pool is joined by
# a destructor: a script that read a file, looked up a name and served
# HTTP must print the same and exit (it hung at exit under corun).
source "$(dirname "$0")/../lib.sh"
WANT_RC=3 RUN_TIMEOUT=30 same_everywhere exit_joins "$BIN/exit_joins"
grep -q "atexit handler: joined" "$TMPD/exit_joins.native" || fail "exit_joins: the native run did not join"
grep -q "destructor handler: joined" "$TMPD/exit_joins.native" || fail "exit_joins: the native run did not join"
ok "exit_joins: both handlers joined their threads natively and under corun, exit 3"

command -v node >/dev/null || { echo "SKIP: node is not installed (the C part passed)"; exit 0; }
cat >"$TMPD/exit.js" <<'JS'
const fs = require('fs'), http = require('http'), dns = require('dns');
fs.readFile(__filename, (e, b) => {
  console.log('read', e ? e.code : b.length > 100);
  dns.lookup('localhost', (e) => {
    console.log('lookup', e ? e.code : 'ok');
    const srv = http.createServer((q, s) => s.end('hi ' + q.url)).listen(0, '127.0.0.1', () => {
      http.get({ host: '127.0.0.1', port: srv.address().port, path: '/x' }, (res) => {
        let d = ''; res.on('data', (c) => d += c);
        res.on('end', () => { console.log('http', d); srv.close(); });
      });
    });
  });
});
JS
RUN_TIMEOUT=30 same_everywhere node_exit node "$TMPD/exit.js"
grep -qx "http hi /x" "$TMPD/node_exit.native" || fail "node: no HTTP reply natively: $(cat "$TMPD/node_exit.native")"
ok "node: read, lookup, HTTP, then exit 0 natively and under corun"
