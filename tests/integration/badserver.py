#!/usr/bin/env python3
"""A deliberately bad HTTP target for executor tests (tests only).

Paths:
  /garbage     not HTTP at all after reading the request
  /huge        200 with a 50 MiB body
  /redirect    302 to elsewhere
  /drip        200 headers, then one byte per second, forever
  /hang        reads the request, never answers
  /reset       closes the connection right after reading the request
  /ok          200 {}
  /echo?n=N[&rep=R]  200 with a body of N bytes (at least the first line): the
               request's Authorization value echoed on its first line and in
               X-Echo-Auth, then a known filler with a NUL and a 0xff byte;
               also X-Request-Id: req-42 and X-Dropped: not-kept, then R
               lines X-Rep: with the Authorization value (default 0)
  /third       400 (a permanent failure) when (T // 2 + P) % 3 == 0, T the instant of
               Palisade-Scheduled-At in seconds since the epoch, P the partition
               (the key's last segment, default key template; 0 if not a number):
               a known third of an every-2-seconds job's instants, else 200 {};
               /third?delay_ms=N answers after N ms
  /...?hold=PATH[&hold_part=P]  (/third, /log...) answers once the file PATH
               is gone (at most 5 minutes), only the key's partition P with
               hold_part: a test holds an outcome while it looks
  /log...      200 {}
  /resend      keeps the connection alive: the first request on a connection
               is answered 200 {}, a later one is read and its connection
               closed without an answer (a COMMIT whose fate the service
               lost), and a request for a key seen before is answered 503
               (the service's database still away)
Requests to /third, /log... and /resend print one line each on stdout:
  req PATH SCHEDULED_AT IDEMPOTENCY_KEY STATUS (0: no answer)
Plain TCP on --port, TLS with a self-signed certificate on --tls-port.
Every request is counted per path in /tmp-free memory and printed on exit.
"""
import argparse, calendar, socket, ssl, subprocess, sys, tempfile, threading, time, os

OUT = threading.Lock()

def header(data, name):
    for line in data.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == name.lower():
            return v.strip().decode(errors="replace")
    return "-"

def held(data, hold):
    path, part = hold.get("hold"), hold.get("hold_part")
    if not path:
        return False
    return part is None or header(data, b"Idempotency-Key").rsplit("/", 1)[-1] == part

def answer_logged(conn, path, data, delay_ms=0, hold={}):
    if delay_ms > 0:
        time.sleep(delay_ms / 1000.0)
    if held(data, hold):
        end = time.time() + 300
        while os.path.exists(hold["hold"]) and time.time() < end:
            time.sleep(0.05)
    at = header(data, b"Palisade-Scheduled-At")
    status = 200
    if path.startswith("/third") and at != "-":
        t = calendar.timegm(time.strptime(at, "%Y-%m-%dT%H:%M:%SZ"))
        last = header(data, b"Idempotency-Key").rsplit("/", 1)[-1]
        if (t // 2 + (int(last) if last.isdigit() else 0)) % 3 == 0:
            status = 400
    with OUT:
        print("req", path, at, header(data, b"Idempotency-Key"), status, flush=True)
    if status == 400:
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 2\r\n\r\n{}")
    else:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")

SEEN = set()

def read_body(conn, head, rest):
    n = header(head, b"Content-Length")
    want = int(n) if n.isdigit() else 0
    while len(rest) < want:
        chunk = conn.recv(65536)
        if not chunk:
            break
        rest += chunk

def read_head(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    return data

def resend(conn, data):
    for n in range(1000):
        head, _, rest = data.partition(b"\r\n\r\n")
        read_body(conn, head, rest)
        key = header(head, b"Idempotency-Key")
        with OUT:
            seen = key in SEEN
            SEEN.add(key)
            status = 503 if seen else 200 if n == 0 else 0
            print("req /resend", header(head, b"Palisade-Scheduled-At"), key, status, flush=True)
        if status == 0:
            return
        if status == 503:
            conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 2\r\n\r\n{}")
        else:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
        data = read_head(conn)
        if data is None:
            return

def handle(conn):
    try:
        conn.settimeout(30)
        data = read_head(conn)
        if data is None:
            return
        path = data.split(b" ", 2)[1].decode(errors="replace").split("?")[0]
        if path.startswith("/garbage"):
            conn.sendall(b"\x00\xffNOT HTTP AT ALL\r\n\r\n" * 10)
        elif path.startswith("/huge"):
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 52428800\r\n\r\n")
            block = b"x" * 65536
            for _ in range(800):
                conn.sendall(block)
        elif path.startswith("/redirect"):
            conn.sendall(b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/elsewhere\r\nContent-Length: 0\r\n\r\n")
        elif path.startswith("/drip"):
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")
            for _ in range(120):
                conn.sendall(b"x")
                time.sleep(1)
        elif path.startswith("/echo"):
            q = data.split(b" ", 2)[1].partition(b"?")[2].decode(errors="replace")
            args = {k: int(v) for k, _, v in (x.partition("=") for x in q.split("&")) if v.isdigit()}
            n, rep = args.get("n", 0), args.get("rep", 0)
            auth = b""
            for line in data.split(b"\r\n"):
                if line.lower().startswith(b"authorization:"):
                    auth = line.split(b":", 1)[1].strip()
            body = b"token=" + auth + b"\n"
            filler = b"0123456789abcdef\x00\xff" + auth + b"|"
            while len(body) < n:
                body += filler
            body = body[:max(n, len(b"token=") + len(auth) + 1)]
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n"
                         b"X-Request-Id: req-42\r\nX-Echo-Auth: " + auth + b"\r\n"
                         b"X-Dropped: not-kept\r\n" +
                         b"".join(b"X-Rep: " + auth + b"\r\n" for _ in range(rep)) +
                         b"Content-Length: " + str(len(body)).encode() +
                         b"\r\n\r\n" + body)
        elif path.startswith("/resend"):
            resend(conn, data)
        elif path.startswith("/hang"):
            time.sleep(120)
        elif path.startswith("/third") or path.startswith("/log"):
            # the body, if any, is small: read what Content-Length says
            head, _, rest = data.partition(b"\r\n\r\n")
            read_body(conn, head, rest)
            q = data.split(b" ", 2)[1].decode(errors="replace").partition("?")[2]
            args = dict((k, v) for k, _, v in (x.partition("=") for x in q.split("&")))
            delay = args.get("delay_ms", "")
            hold = {k: args[k] for k in ("hold", "hold_part") if k in args}
            answer_logged(conn, path, head, int(delay) if delay.isdigit() else 0, hold)
        elif path.startswith("/reset"):
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        else:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
    except Exception:
        pass
    finally:
        try:
            conn.close()
        except Exception:
            pass

def serve(sock, wrap=None):
    while True:
        c, _ = sock.accept()
        if wrap:
            try:
                c = wrap.wrap_socket(c, server_side=True)
            except Exception:
                c.close()
                continue
        threading.Thread(target=handle, args=(c,), daemon=True).start()

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--tls-port", type=int, required=True)
    a = ap.parse_args()
    d = tempfile.mkdtemp()
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-keyout", d + "/k.pem", "-out", d + "/c.pem"],
                   check=True, capture_output=True)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(d + "/c.pem", d + "/k.pem")
    for port, wrap in ((a.port, None), (a.tls_port, ctx)):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen(128)
        threading.Thread(target=serve, args=(s, wrap), daemon=True).start()
    print("ready", flush=True)
    while True:
        time.sleep(3600)

if __name__ == "__main__":
    main()
