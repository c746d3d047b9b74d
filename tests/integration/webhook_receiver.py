#!/usr/bin/env python3
"""A webhook receiver for tests/integration/test_notify.sh (tests only).

webhook_receiver.py --port P --log FILE [--fail-for S] [--fail-first N]
Answers every POST 500 for the first S seconds after it started, and the
first N POSTs (a count, which no slow start moves), then 200.
Each request is appended to FILE as one JSON line: webhook-id, the
Idempotency-Key, the event of the body, the status answered, and whether
the Standard Webhooks signature verified against the secret in the
environment variable HOOK_SECRET (verified as docs/protocol.md shows,
with hmac, hashlib and base64 only).
"""
import argparse, base64, hashlib, hmac, json, os, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def verify(secret, msg_id, timestamp, body, header):
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = msg_id.encode() + b"." + timestamp.encode() + b"." + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    return any(
        hmac.compare_digest(expected, s.split(",", 1)[1])
        for s in header.split() if s.startswith("v1,")
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--fail-for", type=float, default=0)
    ap.add_argument("--fail-first", type=int, default=0)
    a = ap.parse_args()
    seen = [0]
    secret = os.environ["HOOK_SECRET"]
    t0 = time.monotonic()
    lock = threading.Lock()

    class H(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            mid = self.headers.get("webhook-id", "")
            ts = self.headers.get("webhook-timestamp", "")
            ok = verify(secret, mid, ts, body, self.headers.get("webhook-signature", ""))
            fresh = abs(time.time() - int(ts or 0)) < 300
            with lock:
                seen[0] += 1
                nth = seen[0]
            status = 500 if time.monotonic() - t0 < a.fail_for or nth <= a.fail_first else 200
            try:
                event = json.loads(body)["data"]["event"]
            except Exception:
                event = None
            rec = {"id": mid, "key": self.headers.get("Idempotency-Key"), "event": event,
                   "status": status, "sig_ok": ok and fresh, "body": json.loads(body or b"null")}
            with lock:
                with open(a.log, "a") as f:
                    f.write(json.dumps(rec) + "\n")
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    ThreadingHTTPServer(("127.0.0.1", a.port), H).serve_forever()


if __name__ == "__main__":
    main()
