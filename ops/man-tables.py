#!/usr/bin/env python3
# ops/man-tables.py config|jobs FILE.md [HEADING...] - the key tables of
# docs/config.md or docs/jobs.md as scdoc text, so that palisade.yaml(5) and
# palisade-jobs(5) say what the docs say (make man fills @TABLES@ with it).
import re, sys
def esc(t):
    t = t.replace('\\|', '|')
    out = []
    # split on backtick spans
    parts = re.split(r'(`[^`]*`)', t)
    for p in parts:
        if p.startswith('`') and p.endswith('`') and len(p) > 1:
            inner = p[1:-1].replace('\\', '\\\\').replace('_', '\\_').replace('*', '\\*')
            out.append('*' + inner + '*' if inner.strip() else '')
        else:
            p = re.sub(r'\*\*([^*]+)\*\*', lambda m: '\x01' + m.group(1) + '\x01', p)
            p = re.sub(r'(?<![\w])\*([^*]+)\*(?![\w])', lambda m: '\x02' + m.group(1) + '\x02', p)
            p = p.replace('\\', '\\\\').replace('_', '\\_').replace('*', '\\*')
            p = p.replace('\x01', '*').replace('\x02', '_')
            p = re.sub(r'\[([^\]]+)\]\([^)]+\)', r'\1', p)
            out.append(p)
    return ''.join(out)

def table_rows(md, start_heading, stop=None):
    """yield (cells) of table rows after heading START until a heading at same or higher level"""
    lines = md.split('\n')
    on = False
    for l in lines:
        if l.startswith('#'):
            on = l.strip() == start_heading or (on and not l.startswith('# ') and l.count('#') > start_heading.count('#'))
            continue
        if on and l.startswith('| ') and not l.startswith('|---'):
            cells = [c.strip() for c in re.split(r'(?<!\\)\|', l)[1:-1]]
            yield cells

kind, path = sys.argv[1], sys.argv[2]
md = open(path).read()
if kind == 'config':
    for c in table_rows(md, '## Keys'):
        if c[0] == 'key':
            continue
        key, typ, default, bounds, applies, meaning = c
        extra = '; '.join(x for x in [esc(typ), 'default ' + esc(default), esc(bounds), applies] if x.strip() and x != 'default ')
        print('%s (%s)\n\t%s\n' % (esc(key), extra, esc(meaning)))
else:
    for heading in sys.argv[3:]:
        print('## ' + re.sub(r'`', '', heading.lstrip('#').strip()).replace('_', '\\_') + '\n')
        for c in table_rows(md, heading):
            if c[0] in ('key', 'placeholder'):
                continue
            if len(c) >= 5:
                key, typ, default, bounds, meaning = c[:5]
                d = 'required' if 'required' in default else 'default ' + esc(default)
                extra = '; '.join(x for x in [esc(typ), d, esc(bounds)] if x.strip() and x != 'default ')
                print('%s (%s)\n\t%s\n' % (esc(key), extra, esc(meaning)))
            else:
                print('%s\n\t%s\n' % (esc(c[0]), esc(' '.join(c[1:]))))
