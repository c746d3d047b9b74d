#!/usr/bin/env python3
"""siege.py - slow and idle clients against an HTTP listener while probes
measure whether it still answers (test_listener_limits.sh).

  siege.py attack --target HOST:PORT --phase KIND:COUNT:ADDRS:SECONDS ...
               [--probe PATH ...] [--interval 0.2] [--deadline 1.0]

Each phase holds COUNT connections from the loopback addresses 127.0.0.2 ..
127.0.0.(1+ADDRS), spread evenly, for SECONDS: KIND "trickle" sends a request
line and then one header line a second on each, never ending the head;
"idle" connects and sends nothing.  The attacker is persistent: a
connection the server closes is opened again (at most OPEN_RATE opens a
second after the first fill, so the siege itself does not take the cores).
Meanwhile a probe from 127.0.0.1 every INTERVAL seconds opens a connection
and asks GET PATH (the paths taken in turn); it counts as answered when a
2xx status line arrives within DEADLINE seconds.  One line per phase:
  phase=trickle:64 probes=20 answered=20 slowest_ms=12 held=64 reopened=0

  siege.py smuggle --target HOST:PORT --method M --path P
Sends the request-smuggling shapes (duplicated and conflicting
Content-Length, Content-Length with Transfer-Encoding, a Content-Length
list), each on its own connection; one line per shape:
  shape=cl_conflict status=400 closed=yes

  siege.py crowd --target HOST:PORT --count N --addrs A
Opens N idle connections one after the other from 127.0.0.2 ..
127.0.0.(1+A) (in turn), waits half a second and prints how many the server
closed, and which: closed=8 oldest=yes (the closed ones are the first
opened).

  siege.py head --target HOST:PORT [--body --path P]
Trickles one header line a second on one connection (with --body: sends a
whole head announcing 1,000 bytes, then one byte a second) and prints after
how many seconds the server closed it: closed_after_s=2.1 (or "never" after
30 s).
"""
import argparse
import selectors
import socket
import sys
import threading
import time

OPEN_RATE = 1000.0  # reconnects per second, after the first fill


def parse_target(t):
    host, port = t.rsplit(":", 1)
    return host, int(port)


class Attacker:
    def __init__(self, target, kind, count, addrs):
        self.target = target
        self.kind = kind
        self.sel = selectors.DefaultSelector()
        self.sources = ["127.0.0.%d" % (2 + i % addrs) for i in range(count)]
        self.socks = {}  # sock -> slot
        self.reopen = []  # slots waiting to be opened again
        self.reopened = 0
        self.stop = False

    def open(self, slot):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.bind((self.sources[slot], 0))
            s.connect_ex(self.target)
        except OSError:
            s.close()
            self.reopen.append(slot)
            return
        self.socks[s] = slot
        self.sel.register(s, selectors.EVENT_READ)
        if self.kind == "trickle":
            self._send(s, b"GET /healthz HTTP/1.1\r\nHost: %s:%d\r\n" % (
                self.target[0].encode(), self.target[1]))

    def _send(self, s, data):
        try:
            s.send(data)
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            pass  # not connected yet or closed: the read side finds out

    def drop(self, s):
        slot = self.socks.pop(s)
        self.sel.unregister(s)
        s.close()
        self.reopen.append(slot)

    def held(self):
        return len(self.socks)

    def run(self, seconds):
        for slot in range(len(self.sources)):
            self.open(slot)
        end = time.monotonic() + seconds
        next_line = time.monotonic() + 1.0
        budget, last = 0.0, time.monotonic()
        while time.monotonic() < end:
            for key, _ in self.sel.select(timeout=0.05):
                s = key.fileobj
                try:
                    data = s.recv(4096)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if not data:  # closed by the server (or refused)
                    self.drop(s)
            now = time.monotonic()
            budget = min(OPEN_RATE, budget + (now - last) * OPEN_RATE)
            last = now
            while self.reopen and budget >= 1:
                budget -= 1
                self.reopened += 1
                self.open(self.reopen.pop(0))
            if self.kind == "trickle" and now >= next_line:
                next_line = now + 1.0
                for s in list(self.socks):
                    self._send(s, b"X-Slow: 1\r\n")
        held = self.held()
        for s in list(self.socks):
            self.sel.unregister(s)
            s.close()
        self.socks.clear()
        return held


def probe_once(target, path, deadline, results, lock):
    t0 = time.monotonic()
    ok = False
    try:
        with socket.create_connection(target, timeout=deadline,
                                      source_address=("127.0.0.1", 0)) as s:
            s.settimeout(max(0.01, deadline - (time.monotonic() - t0)))
            s.sendall(b"GET %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n\r\n" % (
                path.encode(), target[0].encode(), target[1]))
            buf = b""
            while b"\r\n" not in buf:
                s.settimeout(max(0.01, deadline - (time.monotonic() - t0)))
                d = s.recv(256)
                if not d:
                    break
                buf += d
            ok = buf.startswith(b"HTTP/1.1 2") and time.monotonic() - t0 <= deadline
    except OSError:
        ok = False
    with lock:
        results.append((ok, time.monotonic() - t0, t0))


def attack(a):
    target = parse_target(a.target)
    paths = a.probe or ["/healthz"]
    worst = 0
    for spec in a.phase:
        kind, count, addrs, secs = spec.split(":")
        att = Attacker(target, kind, int(count), int(addrs))
        results, lock = [], threading.Lock()
        probes = []

        def prober():
            i = 0
            t_next = time.monotonic() + 0.5  # let the first fill land
            t_end = time.monotonic() + float(secs)
            while time.monotonic() < t_end:
                time.sleep(max(0, t_next - time.monotonic()))
                t = threading.Thread(target=probe_once,
                                     args=(target, paths[i % len(paths)], a.deadline,
                                           results, lock))
                t.start()
                probes.append(t)
                i += 1
                t_next += a.interval

        pt = threading.Thread(target=prober)
        pt.start()
        held = att.run(float(secs))
        pt.join()
        for t in probes:
            t.join()
        n = len(results)
        ok = sum(1 for r in results if r[0])
        slowest = max((r[1] for r in results), default=0)
        start = min((r[2] for r in results), default=0)
        missed = ",".join("%.1fs" % (r[2] - start) for r in results if not r[0])
        print("phase=%s:%s probes=%d answered=%d slowest_ms=%d held=%d reopened=%d%s" % (
            kind, count, n, ok, slowest * 1000, held, att.reopened,
            " missed_at=" + missed if missed else ""), flush=True)
        worst = max(worst, n - ok)
    return 0


SHAPES = [
    ("cl_conflict", b"Content-Length: 5\r\nContent-Length: 6\r\n", b"hello!"),
    ("cl_duplicate", b"Content-Length: 5\r\nContent-Length: 5\r\n", b"hello"),
    ("te_and_cl", b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
     b"5\r\nhello\r\n0\r\n\r\n"),
    ("cl_list", b"Content-Length: 5, 5\r\n", b"hello"),
]


def smuggle(a):
    target = parse_target(a.target)
    for name, headers, body in SHAPES:
        status, closed = "none", "no"
        try:
            with socket.create_connection(target, timeout=3) as s:
                s.sendall(b"%s %s HTTP/1.1\r\nHost: %s:%d\r\n%s\r\n%s" % (
                    a.method.encode(), a.path.encode(), target[0].encode(), target[1],
                    headers, body))
                buf = b""
                t_end = time.monotonic() + 3
                try:
                    while time.monotonic() < t_end:
                        d = s.recv(4096)
                        if not d:
                            closed = "yes"
                            break
                        buf += d
                except socket.timeout:
                    pass  # answered (or not) and kept open
                if buf.startswith(b"HTTP/1."):
                    status = buf.split(b" ", 2)[1].decode()
        except OSError as e:
            status = "error:%s" % e.errno
        print("shape=%s status=%s closed=%s" % (name, status, closed), flush=True)
    return 0


def crowd(a):
    target = parse_target(a.target)
    socks = []
    for i in range(a.count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.%d" % (2 + i % a.addrs), 0))
        s.connect(target)
        socks.append(s)
        # accepted in this order (the backlog is first in, first out); no
        # pause, or the first would meet their head deadline before the last
    time.sleep(0.5)
    closed = []
    for i, s in enumerate(socks):
        s.setblocking(False)
        try:
            if s.recv(1) == b"":
                closed.append(i)
        except BlockingIOError:
            pass
        except OSError:
            closed.append(i)
        s.close()
    # the oldest: the first len(closed) connected, give or take --slack
    # places (a listener with a pool of N threads accepts N at once, and
    # which of those its guard sees first is the threads' race)
    oldest = len(set(closed)) == len(closed) and all(i < len(closed) + a.slack for i in closed)
    print("closed=%d oldest=%s" % (len(closed), "yes" if oldest else "no"))
    return 0


def head(a):
    target = parse_target(a.target)
    s = socket.create_connection(target, timeout=1)
    t0 = time.monotonic()
    if a.body:  # a whole head at once, then its body a byte a second
        s.sendall(b"POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Length: 1000\r\n\r\n" % (
            a.path.encode(), target[0].encode(), target[1]))
    else:
        s.sendall(b"GET /healthz HTTP/1.1\r\n")
    while time.monotonic() - t0 < 30:
        try:
            s.sendall(b"x" if a.body else b"X-Slow: 1\r\n")
            s.settimeout(1.0)
            if s.recv(4096) == b"":
                break
        except socket.timeout:
            continue
        except OSError:
            break
    else:
        print("closed_after_s=never")
        return 0
    print("closed_after_s=%.1f" % (time.monotonic() - t0))
    return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["attack", "smuggle", "crowd", "head"])
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--addrs", type=int, default=1)
    p.add_argument("--slack", type=int, default=0)
    p.add_argument("--target", required=True)
    p.add_argument("--phase", action="append", default=[])
    p.add_argument("--probe", action="append")
    p.add_argument("--interval", type=float, default=0.2)
    p.add_argument("--deadline", type=float, default=1.0)
    p.add_argument("--method", default="POST")
    p.add_argument("--path", default="/")
    p.add_argument("--body", action="store_true")
    a = p.parse_args()
    return {"attack": attack, "smuggle": smuggle, "crowd": crowd, "head": head}[a.mode](a)


if __name__ == "__main__":
    sys.exit(main())
