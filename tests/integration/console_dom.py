#!/usr/bin/env python3
"""console_dom.py DOM_FILE ID [TEXT...] - checks a DOM that Chromium rendered.

Prints the visible text of the element with id ID (whitespace squeezed) and
exits 0 when it contains every TEXT, 1 otherwise (2 when there is no such
element).  ID "script" instead counts <script> elements: exit 0 when none.
"""
import sys
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
        "source", "track", "wbr"}


class Grab(HTMLParser):
    def __init__(self, want):
        super().__init__(convert_charrefs=True)
        self.want, self.depth, self.text, self.found, self.scripts = want, 0, [], False, 0

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self.scripts += 1
        if tag in VOID:
            return
        if self.depth:
            self.depth += 1
        elif dict(attrs).get("id") == self.want:
            self.depth, self.found = 1, True
        if self.depth and tag in ("td", "th", "p", "li", "div", "tr"):
            self.text.append(" ")

    def handle_endtag(self, tag):
        if self.depth and tag not in VOID:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            self.text.append(data)


dom, want, texts = sys.argv[1], sys.argv[2], sys.argv[3:]
g = Grab(want)
g.feed(open(dom, encoding="utf-8", errors="replace").read())
if want == "script":
    print(f"{g.scripts} script elements")
    sys.exit(0 if g.scripts == 0 else 1)
text = " ".join("".join(g.text).split())
print(text[:600])
if not g.found:
    sys.exit(2)
missing = [t for t in texts if t not in text]
if missing:
    print("missing: " + ", ".join(repr(m) for m in missing))
sys.exit(1 if missing else 0)
