#!/usr/bin/env python3
"""cdp.py - a small Chrome DevTools Protocol client for the console tests.

Headless Chromium is driven over --remote-debugging-pipe (JSON messages
separated by NUL bytes on file descriptors 3 and 4 of the browser), so no
websocket module is needed.  A test imports it:

    from cdp import Browser
    with Browser("/usr/bin/chromium", "/tmp/profile") as b:
        b.goto("http://127.0.0.1:9464/console")
        b.js("document.title")

goto() and submit() wait for the page that results to have loaded;
js() evaluates an expression in the page and returns its value.  Each
Browser is one profile (its own cookie jar): two logins need two Browsers.
"""
import json
import os
import subprocess
import time


class CDPError(Exception):
    pass


class Browser:
    def __init__(self, chrome, profile, timeout=15.0):
        self.timeout = timeout
        cmd_r, cmd_w = os.pipe()  # we write, the browser reads its fd 3
        out_r, out_w = os.pipe()  # the browser writes its fd 4, we read

        def fds():
            # move both ends out of the way first, so that neither is
            # overwritten by the dup2 of the other
            a, b = os.dup(cmd_r), os.dup(out_w)
            hi_a, hi_b = os.dup2(a, 100), os.dup2(b, 101)
            os.dup2(hi_a, 3)
            os.dup2(hi_b, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self.proc = subprocess.Popen(
            [chrome, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-pipe", "--user-data-dir=" + profile,
             "--window-size=1366,900", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=fds, pass_fds=(3, 4))
        os.close(cmd_r)
        os.close(out_w)
        self.w, self.r = cmd_w, out_r
        self.buf = b""
        self.next_id = 0
        self.events = []
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next((t for t in targets if t["type"] == "page"), None)
        tid = page["targetId"] if page else self.call("Target.createTarget",
                                                       {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": tid, "flatten": True})["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Runtime.enable", session=True)

    # ---- transport -------------------------------------------------------------
    def _read_msg(self, deadline):
        while b"\0" not in self.buf:
            if time.monotonic() > deadline:
                raise CDPError("no answer from the browser in time")
            chunk = os.read(self.r, 65536)
            if not chunk:
                raise CDPError("the browser closed its pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=False):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            m = self._read_msg(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise CDPError(f"{method}: {m['error']}")
                return m.get("result", {})
            if "method" in m:
                self.events.append(m)

    def _wait_event(self, name):
        deadline = time.monotonic() + self.timeout
        while True:
            for i, e in enumerate(self.events):
                if e["method"] == name:
                    del self.events[: i + 1]
                    return e
            self.events.append(self._read_msg(deadline))

    # ---- pages ------------------------------------------------------------------
    def goto(self, url):
        self.events.clear()
        self.call("Page.navigate", {"url": url}, session=True)
        self._wait_event("Page.loadEventFired")

    def js(self, expr):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True},
                      session=True)
        if "exceptionDetails" in r:
            raise CDPError(f"{expr[:60]}: {r['exceptionDetails'].get('text')}")
        return r["result"].get("value")

    def submit(self, form_expr, fields=None):
        """Fill FIELDS (name -> value) of the form FORM_EXPR selects and
        submit it as a person would (requestSubmit: required fields count);
        waits for the page that answers."""
        self.events.clear()
        self.js("(() => { const f = %s; if (!f) throw new Error('no such form');"
                " for (const [k, v] of Object.entries(%s)) f.elements[k].value = v;"
                " f.requestSubmit(); return true; })()" % (form_expr, json.dumps(fields or {})))
        self._wait_event("Page.loadEventFired")

    def text(self, selector):
        return self.js("(() => { const e = document.querySelector(%s);"
                       " return e ? e.innerText : null; })()" % json.dumps(selector))

    def count(self, selector):
        return self.js("document.querySelectorAll(%s).length" % json.dumps(selector))

    def close(self):
        try:
            self.call("Browser.close")
        except (CDPError, OSError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.w)
        os.close(self.r)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
