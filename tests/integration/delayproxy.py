#!/usr/bin/env python3
"""A TCP proxy that delays every connection's bytes (tests and drills only).

  delayproxy.py --listen PORT --to HOST:PORT [--host ADDR]
                [--response-delay S] [--request-delay S --request-every N]

Unlike slowlane.py (which holds only the FIRST connection), this one delays
every connection, for load:

--response-delay S   every byte from the upstream reaches the client S
                     seconds after it arrived (order kept): responses
                     delayed in the network, e.g. past the caller's lease.
--request-delay S    bytes from the client reach the upstream S seconds
                     late, on one connection in N (--request-every, default
                     3; the 1st, N+1st, ...): requests overtaken by a later
                     attempt's.

Delayed bytes are delivered even when the other side has gone (a request
the client gave up on still reaches the upstream, as in a real network).
Prints "ready" once listening, then, at exit (SIGTERM/SIGINT) and every
second while anything changed, one line
"stats connections=C delayed_requests=R responses=P late_writes_failed=F":
P counts responses (upstream chunks) delivered after the delay, F the
delayed writes that found the client gone.
"""
import argparse, asyncio, os, signal, sys

stats = {"connections": 0, "delayed_requests": 0, "responses": 0, "late_writes_failed": 0}


def log(*a):
    print(*a, flush=True)


async def pipe(reader, writer, delay, on_chunk=None):
    """Copy reader to writer, each chunk delayed by `delay` seconds after
    it was read (a reader task and a writer task joined by a queue, so a
    delay never slows the reading).  EOF is passed on after the delay."""
    loop = asyncio.get_running_loop()
    q = asyncio.Queue()

    async def rd():
        while True:
            try:
                data = await reader.read(65536)
            except (ConnectionError, OSError):
                data = b""
            await q.put((loop.time() + delay, data))
            if not data:
                return

    async def wr():
        alive = True
        while True:
            at, data = await q.get()
            d = at - loop.time()
            if d > 0:
                await asyncio.sleep(d)
            if not data:
                break
            if not alive:
                if delay > 0:
                    stats["late_writes_failed"] += 1
                continue
            try:
                writer.write(data)
                await writer.drain()
                if on_chunk:
                    on_chunk()
            except (ConnectionError, OSError):
                alive = False
                if delay > 0:
                    stats["late_writes_failed"] += 1
        try:
            if writer.can_write_eof():
                writer.write_eof()
        except (ConnectionError, OSError, RuntimeError):
            pass

    await asyncio.gather(rd(), wr())


async def handle(args, creader, cwriter):
    n = stats["connections"]
    stats["connections"] += 1
    req_delay = 0.0
    if args.request_delay > 0 and n % args.request_every == 0:
        req_delay = args.request_delay
        stats["delayed_requests"] += 1
    host, port = args.to.rsplit(":", 1)
    try:
        ureader, uwriter = await asyncio.open_connection(host, int(port))
    except OSError:
        cwriter.close()
        return

    def resp():
        stats["responses"] += 1

    try:
        await asyncio.gather(pipe(creader, uwriter, req_delay),
                             pipe(ureader, cwriter, args.response_delay, resp))
    finally:
        for w in (uwriter, cwriter):
            try:
                w.close()
            except Exception:
                pass


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--listen", type=int, required=True)
    ap.add_argument("--to", required=True)
    ap.add_argument("--response-delay", type=float, default=0.0)
    ap.add_argument("--request-delay", type=float, default=0.0)
    ap.add_argument("--request-every", type=int, default=3)
    args = ap.parse_args()
    if args.request_every < 1:
        ap.error("--request-every must be at least 1")
    server = await asyncio.start_server(lambda r, w: handle(args, r, w), args.host, args.listen)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, stop.set)
    log("ready")
    last = None
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), 1.0)
        except asyncio.TimeoutError:
            pass
        cur = dict(stats)
        if cur != last:
            log("stats " + " ".join(f"{k}={v}" for k, v in cur.items()))
            last = cur
    server.close()
    # Connections still holding delayed bytes are dropped with the process
    # (no cancellation noise from their tasks).
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
