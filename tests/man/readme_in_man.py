#!/usr/bin/env python3
"""readme_in_man.py README PAGE... - is each section of README in the man pages?

For the opening of README (below its title, before its first section) and
every "## " section before "## License" (its "###" and "####"
subsections with it), three kinds of token must each appear
somewhere in the text of the PAGEs as mandoc renders them (-T ascii,
lines 1000 wide, bold and underline taken off, runs of white space made
one space, and µ written u on both sides, as -T ascii writes it):

  numbers     every number that has a decimal point or a thousands comma,
              or three digits or more, or a unit after it (43.99 ms,
              1.026, 20,000, 65,536, 8080, 5 s, 16 KiB, 3%, 2.8x), not
              inside another number (1.0 is not found in 1.018);
  code spans  the text of every `...` outside code blocks, as written;
  code lines  every line of every indented code block, as written.

A section with no token at all cannot be checked and fails. Prints one
line a section: "ok<TAB>SECTION<TAB>counts" or "missing<TAB>SECTION<TAB>
the first missing tokens"; exits 0 iff every section is ok, 2 on a usage
error or if mandoc fails.
"""
import re
import subprocess
import sys

UNIT = r'(?:\s?(?:ms|µs|us|ns|s|KiB|MiB|GiB|bytes|%|x)(?![\w]))'
NUM = re.compile(r'(?<![\w.,])(\d+(?:[.,]\d+)*)(' + UNIT + r')?')


def norm(s):
    return ' '.join(s.replace('µ', 'u').split())


def render(page):
    out = subprocess.run(['mandoc', '-T', 'ascii', '-O', 'width=1000', page],
                         capture_output=True)
    if out.returncode > 1 or not out.stdout:  # 1: only warnings; run.sh lints
        sys.exit('readme_in_man: mandoc failed on %s: %s' % (page, out.stderr.decode(errors='replace')))
    text = out.stdout.decode('utf-8', errors='replace')
    text = re.sub(r'.\x08', '', text)
    return norm(text)


def sections(readme):
    cur, body, res = '(the opening, before the first section)', [], []
    for line in open(readme, encoding='utf-8'):
        line = line.rstrip('\n')
        if line.startswith('## '):
            if body or cur[0] != '(':
                res.append((cur, body))
            cur, body = line[3:].strip(), []
            if cur == 'License':
                return res
            continue
        if not line.startswith('# '):
            body.append(line)
    res.append((cur, body))
    return res


def tokens(body):
    code, prose = [], []
    prev_blank = True
    in_block = False
    for line in body:
        if line.startswith('    ') and (prev_blank or in_block) and line.strip():
            in_block = True
            code.append(norm(line))
        else:
            if line.strip():
                in_block = False
            prose.append(line)
        prev_blank = not line.strip()
    text = ' '.join(prose)
    spans = [norm(s) for s in re.findall(r'`([^`]+)`', text)]
    nums = []
    for m in NUM.finditer('\n'.join(body)):
        n, unit = m.group(1), m.group(2)
        if '.' in n or ',' in n or len(n) >= 3 or unit:
            nums.append(n)
    return nums, spans, code


def found_num(n, text):
    return re.search(r'(?<![\d.,])' + re.escape(n) + r'(?!\d|[.,]\d)', text) is not None


def main():
    if len(sys.argv) < 3:
        sys.exit('usage: readme_in_man.py README PAGE...')
    text = ' '.join(render(p) for p in sys.argv[2:])
    ok = True
    for name, body in sections(sys.argv[1]):
        nums, spans, code = tokens(body)
        miss = [n for n in nums if not found_num(n, text)]
        miss += ['`%s`' % s for s in spans if s not in text]
        miss += ['code: %s' % c for c in code if c not in text]
        total = len(nums) + len(spans) + len(code)
        if total == 0:
            print('missing\t%s\tno token to check' % name)
            ok = False
        elif miss:
            seen = []
            for m in miss:
                if m not in seen:
                    seen.append(m)
            print('missing\t%s\t%d of %d: %s' % (name, len(miss), total, ' | '.join(seen[:8])))
            ok = False
        else:
            print('ok\t%s\t%d numbers, %d code spans, %d code lines' % (name, len(nums), len(spans), len(code)))
    sys.exit(0 if ok else 1)


main()
