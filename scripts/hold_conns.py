#!/usr/bin/env python3
"""hold_conns.py HOST PORT N READY_FILE

Opens N connections to an echo server, sends one byte on each and checks
its echo (so every connection has a live server thread), writes READY_FILE,
then holds them all open, idle, until killed. Used to look at a server
while N threads exist (scripts/tests/threaded_echo_10k.sh,
scripts/idle_memory.sh)."""
import resource
import socket
import sys
import time

host, port, n, ready = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
socks = []
for i in range(n):
    s = socket.create_connection((host, port), timeout=60)
    socks.append(s)
for i, s in enumerate(socks):
    s.sendall(bytes([i % 251]))
for i, s in enumerate(socks):
    b = s.recv(1)
    if b != bytes([i % 251]):
        sys.exit("hold_conns: connection %d echoed %r" % (i, b))
with open(ready, "w") as f:
    f.write("%d\n" % n)
while True:
    time.sleep(3600)
