#!/usr/bin/env python3
"""A TCP proxy to PostgreSQL that loses one answer (tests only).

  pg_cutproxy.py LISTEN_PORT PG_HOST PG_PORT ARM

Forwards every connection both ways.  While the file ARM exists, the first
chunk from the server that contains ARM's text (its first line, as bytes)
is not forwarded: that connection is cut both ways and ARM is removed, so
one answer is lost and the next connection works again.  Cutting on the
answer of a COMMIT ("COMMIT", the command tag) or on a row the transaction
returns only after its implicit COMMIT ("applied", a result of the sink's
group call) loses the confirmation of a COMMIT PostgreSQL has made: the
client cannot know whether it committed.

A number on ARM's second line makes the cut a failover: every connection is
dropped and new ones are refused for that many seconds (a primary that died
right after its COMMIT, its replica not promoted yet).  Used by
tests/integration/test_sink_unknown_commit.sh.  Prints "ready" once
listening, "cut" at each cut and "refused" for each connection refused.
"""
import os, socket, sys, threading, time

lport, host, port, arm = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
lock = threading.Lock()
socks = set()
down_until = [0.0]


def armed_mark():
    """ARM's mark and its seconds down (0: none), or (None, 0)."""
    try:
        with open(arm, "rb") as f:
            mark, down = f.readline().strip(), f.readline().strip()
            return mark, float(down or 0)
    except OSError:
        return None, 0


def close(*socks):
    for s in socks:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()


def pipe(src, dst, from_server):
    try:
        while True:
            d = src.recv(65536)
            if not d:
                break
            if from_server:
                with lock:
                    mark, down = armed_mark()
                    cut = bool(mark) and mark in d
                    if cut:
                        os.unlink(arm)
                        down_until[0] = time.time() + down
                        victims = list(socks) if down > 0 else [src, dst]
                if cut:
                    print("cut", flush=True)
                    close(*victims)
                    return
            dst.sendall(d)
    except OSError:
        pass
    with lock:
        socks.difference_update((src, dst))
    close(src, dst)


srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", lport))
srv.listen(64)
print("ready", flush=True)
while True:
    c, _ = srv.accept()
    if time.time() < down_until[0]:
        print("refused", flush=True)
        close(c)
        continue
    try:
        u = socket.create_connection((host, port))
    except OSError:
        c.close()
        continue
    with lock:
        socks.update((c, u))
    threading.Thread(target=pipe, args=(c, u, False), daemon=True).start()
    threading.Thread(target=pipe, args=(u, c, True), daemon=True).start()
