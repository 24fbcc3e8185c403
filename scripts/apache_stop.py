#!/usr/bin/env python3
"""How long Apache's worker MPM takes to stop at SIGTERM after a run with
hostile clients (README, Known limits and Compatibility), natively or under
a given libcorun.so.

    scripts/apache_stop.py PORT RUNS [LIB ...]   (LIB "" or "native": natively)

For each run and each mode in turn: starts `apache2 -DFOREGROUND` (4
children x 64 threads, as scripts/bench_servers.sh), runs the mix for
DURATION seconds (16 good keep-alive clients whose every reply is checked;
connections reset with SO_LINGER 0 mid-request and after 3 pipelined
requests; requests sent then the socket half-closed; slowloris, one byte
per 100 ms; 20 clients that pipeline requests and never read; 1 MiB POST
bodies), closes every client, makes BURSTS rounds of 8 connections at
once (each wakes every child's listener: the losers wait in accept),
sends SIGTERM to the parent and times its
exit. Prints one line per run and the median per mode. Apache must be
installed; runs as root (User www-data)."""
import os
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

DURATION = float(os.environ.get("DURATION", "6"))
BURSTS = int(os.environ.get("BURSTS", "10"))
BURST_SIZE = 8
BODY = b"x" * 600
REQ = b"GET /index.html HTTP/1.1\r\nHost: localhost\r\n\r\n"
REQ_CLOSE = b"GET /index.html HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"


def conf(d, port):
    return f"""ServerRoot "/etc/apache2"
LoadModule mpm_worker_module /usr/lib/apache2/modules/mod_mpm_worker.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
LoadModule dir_module /usr/lib/apache2/modules/mod_dir.so
LoadModule mime_module /usr/lib/apache2/modules/mod_mime.so
TypesConfig /etc/mime.types
PidFile {d}/httpd.pid
Listen 127.0.0.1:{port}
ServerName localhost
User www-data
Group www-data
ErrorLog {d}/error.log
DocumentRoot {d}/htdocs
<Directory {d}/htdocs>
  Require all granted
</Directory>
StartServers 4
ServerLimit 4
ThreadsPerChild 64
ThreadLimit 64
MinSpareThreads 64
MaxSpareThreads 256
MaxRequestWorkers 256
MaxConnectionsPerChild 0
MaxKeepAliveRequests 0
Mutex file:{d} default
"""


def read_reply(f):
    """One HTTP reply from file `f`: (status, body)."""
    status = f.readline()
    if not status:
        return None, None
    length = 0
    while True:
        h = f.readline()
        if h in (b"\r\n", b""):
            break
        if h.lower().startswith(b"content-length:"):
            length = int(h.split(b":")[1])
    return status.split()[1], f.read(length)


class Mix:
    def __init__(self, port):
        self.port = port
        self.stop = threading.Event()
        self.bad = 0
        self.good = 0
        self.lock = threading.Lock()
        self.held = []

    def conn(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        return s

    def count(self, ok):
        with self.lock:
            if ok:
                self.good += 1
            else:
                self.bad += 1

    def keepalive(self):
        while not self.stop.is_set():
            try:
                s = self.conn()
                f = s.makefile("rb")
                while not self.stop.is_set():
                    s.sendall(REQ)
                    st, body = read_reply(f)
                    self.count(st == b"200" and body == BODY)
                s.close()
            except OSError:
                self.count(False)

    def resets(self):
        lin = struct.pack("ii", 1, 0)
        while not self.stop.is_set():
            try:
                s = self.conn()
                s.sendall(REQ[:20])
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, lin)
                s.close()
                s = self.conn()
                s.sendall(REQ * 3)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, lin)
                s.close()
            except OSError:
                pass
            time.sleep(0.01)

    def halfclose(self):
        while not self.stop.is_set():
            try:
                s = self.conn()
                s.sendall(REQ_CLOSE)
                s.shutdown(socket.SHUT_WR)
                st, body = read_reply(s.makefile("rb"))
                self.count(st == b"200" and body == BODY)
                s.close()
            except OSError:
                self.count(False)

    def slowloris(self):
        while not self.stop.is_set():
            try:
                s = self.conn()
                for b in REQ_CLOSE:
                    s.send(bytes([b]))
                    time.sleep(0.1)
                    if self.stop.is_set():
                        break
                else:
                    st, body = read_reply(s.makefile("rb"))
                    self.count(st == b"200" and body == BODY)
                s.close()
            except OSError:
                self.count(False)

    def never_read(self):
        try:
            s = self.conn()
            s.setblocking(False)
            self.held.append(s)
            while not self.stop.is_set():
                try:
                    s.send(REQ * 50)
                except BlockingIOError:
                    pass
                time.sleep(0.05)
        except OSError:
            pass

    def posts(self):
        big = b"y" * (1 << 20)
        while not self.stop.is_set():
            try:
                s = self.conn()
                s.sendall(b"POST /index.html HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                          b"Content-Length: %d\r\n\r\n" % len(big) + big)
                st, _ = read_reply(s.makefile("rb"))
                self.count(st is not None)
                s.close()
            except OSError:
                pass

    def run(self, secs):
        jobs = [self.keepalive] * 16 + [self.resets] * 2 + [self.halfclose] * 2 + \
               [self.slowloris] * 2 + [self.never_read] * 20 + [self.posts] * 2
        ts = [threading.Thread(target=j, daemon=True) for j in jobs]
        for t in ts:
            t.start()
        time.sleep(secs)
        self.stop.set()
        for t in ts:
            t.join(15)
        for s in self.held:
            s.close()
        self.bursts()

    def bursts(self):
        """Rounds of connections made at once: each wakes every child's
        listener, and all but one lose the race for it."""
        for _ in range(BURSTS):
            go = threading.Barrier(BURST_SIZE)

            def hit():
                try:
                    go.wait(5)
                    s = self.conn()
                    s.sendall(REQ_CLOSE)
                    st, body = read_reply(s.makefile("rb"))
                    self.count(st == b"200" and body == BODY)
                    s.close()
                except (OSError, threading.BrokenBarrierError):
                    self.count(False)
            ts = [threading.Thread(target=hit, daemon=True) for _ in range(BURST_SIZE)]
            for t in ts:
                t.start()
            for t in ts:
                t.join(15)
            time.sleep(0.05)


def one(port, lib):
    d = tempfile.mkdtemp(prefix="apache_stop.")
    os.chmod(d, 0o777)
    os.mkdir(d + "/htdocs")
    with open(d + "/htdocs/index.html", "wb") as f:
        f.write(BODY)
    with open(d + "/httpd.conf", "w") as f:
        f.write(conf(d, port))
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if lib:
        env["LD_PRELOAD"] = lib
    p = subprocess.Popen(["apache2", "-f", d + "/httpd.conf", "-DFOREGROUND"], env=env)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 15:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    time.sleep(0.5)
    m = Mix(port)
    m.run(DURATION)
    time.sleep(0.2)
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    stop = time.monotonic() - t0
    with open(d + "/error.log", errors="replace") as f:
        log = f.readlines()
    stuck = sum("still did not exit" in ln for ln in log)
    if os.environ.get("CORUN_STATS"):
        # corun's counters of each process (their stderr is the log).
        for ln in log:
            if "cut short" in ln or "hand-offs" in ln:
                print("   ", ln.strip())
    subprocess.run(["rm", "-rf", d])
    return stop, stuck, m.good, m.bad


def main():
    port, runs = int(sys.argv[1]), int(sys.argv[2])
    libs = [("" if a in ("", "native") else a) for a in sys.argv[3:]] or [""]
    times = {lib: [] for lib in libs}
    for r in range(runs):
        for lib in libs:
            stop, stuck, good, bad = one(port, lib)
            times[lib].append(stop)
            print(f"run {r + 1} {lib or 'native'}: stop {stop:.2f} s, 'still did not exit' "
                  f"lines {stuck}, good replies {good}, bad {bad}", flush=True)
    for lib in libs:
        t = times[lib]
        print(f"{lib or 'native'}: median {statistics.median(t):.2f} s, "
              f"min {min(t):.2f}, max {max(t):.2f} over {len(t)} runs")


if __name__ == "__main__":
    main()
