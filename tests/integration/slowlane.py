#!/usr/bin/env python3
"""A TCP forwarder that delays the FIRST connection it accepts (tests only).

  slowlane.py [--host ADDR] --listen PORT --to HOST:PORT [--hold-request S | --hold-response S]

Without a hold it is a plain forwarder (the partition drill uses it to give a
node in a network namespace a path to the loopback PostgreSQL and ZooKeeper).

--hold-request S   the first connection's request bytes reach the upstream
                   only S seconds after they arrived: a request delayed in
                   the network, overtaken by a later attempt.
--hold-response S  the first connection's request goes through at once, its
                   response reaches the client S seconds later: a call that
                   was applied while its caller lost its lease.

Every later connection is forwarded at once.  Prints "ready", then "held"
when the first connection's delayed bytes arrive and "released" when they are
passed on.  The delayed bytes are delivered even if the client has gone.
"""
import argparse, socket, sys, threading, time

def log(*a):
    print(*a, flush=True)

def pump(src, dst, hold_until=None, on_hold=None, on_release=None, half_close=True):
    held = b""
    try:
        while True:
            if hold_until is not None:
                src.settimeout(max(0.05, min(0.5, hold_until - time.time())))
            try:
                data = src.recv(65536)
            except socket.timeout:
                data = None
            except OSError:
                data = b""
            if hold_until is not None:
                if data:
                    if not held and on_hold:
                        on_hold()
                    held += data
                if time.time() >= hold_until or data == b"":
                    if held:
                        # Wait out the hold even if the source closed early.
                        delay = hold_until - time.time()
                        if delay > 0:
                            time.sleep(delay)
                        try:
                            dst.sendall(held)
                        except OSError:
                            pass
                        if on_release:
                            on_release()
                        held = b""
                    hold_until = None
                    src.settimeout(None)
                if data == b"":
                    break
                continue
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        # Toward the client, pass the close on.  Toward the upstream, keep
        # the socket open: a half-close could make the server drop a request
        # it has read but not yet answered.
        if half_close:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--listen", type=int, required=True)
    ap.add_argument("--to", required=True)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--hold-request", type=float)
    g.add_argument("--hold-response", type=float)
    a = ap.parse_args()
    host, port = a.to.rsplit(":", 1)
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((a.host, a.listen))
    ls.listen(64)
    log("ready")
    first = True
    while True:
        c, _ = ls.accept()
        try:
            u = socket.create_connection((host, int(port)))
        except OSError:
            c.close()
            continue
        req_hold = resp_hold = None
        if first:
            first = False
            req_hold, resp_hold = a.hold_request, a.hold_response
        held = lambda: log("held")
        released = lambda: log("released")
        up = threading.Thread(target=pump, daemon=True, args=(c, u),
                              kwargs=dict(hold_until=time.time() + req_hold if req_hold else None,
                                          on_hold=held, on_release=released,
                                          half_close=False))
        down = threading.Thread(target=pump, daemon=True, args=(u, c))
        if resp_hold:
            # The response hold starts when the response starts to arrive.
            def down_run(u=u, c=c, s=resp_hold):
                u.settimeout(None)
                try:
                    first_bytes = u.recv(65536)
                except OSError:
                    first_bytes = b""
                if first_bytes:
                    log("held")
                    time.sleep(s)
                    try:
                        c.sendall(first_bytes)
                    except OSError:
                        pass
                    log("released")
                pump(u, c)
            down = threading.Thread(target=down_run, daemon=True)
        up.start()
        down.start()

if __name__ == "__main__":
    main()
