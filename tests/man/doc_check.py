#!/usr/bin/env python3
"""doc_check.py - what the documents claim about the tree, checked against it.

  doc_check.py tree README SRC   README's source tree (the indented block
        under its "## The source tree") against the directory SRC: every
        file of SRC has its line, every line names what exists, and every
        folder of SRC has a README.md. A line is a name (a file,
        a folder ending in "/", or a glob such as "*.h": a rule for the
        folder's files it matches, if any), then its description; its
        indentation, two spaces a level, says which folder it is in.
  doc_check.py paths TOP DOC...  every path of the tree that each DOC
        names (a word beginning src/, tests/, conf/ or include/) exists
        under TOP, as a file, a folder or a glob's match; a man page is read
        as mandoc renders it. Words with a placeholder (NAME, <module>) are
        not paths.
  doc_check.py maps TOP DOC...   what each README (a map of the tree) names
        in backquotes exists: a path (a word with a "/" or a file's
        extension) as a file, a folder or a glob's match, looked for from
        TOP, from DOC's folder and from each folder between (a bare name:
        anywhere in the tree), and a make target (`make NAME...` in
        backquotes, `make NAME` in a code block, a `test-NAME` anywhere)
        as a target of TOP's Makefile or what it includes. Not looked
        for: placeholders (NAME, <module>), what the build makes (build/,
        lib*.a, lib*.so), absolute paths.
  doc_check.py dates PAGE   a man page's text holds no date (YYYY-MM-DD)
        but its title line's: a reference is not a diary.
  doc_check.py arrows README LAYERS   README's table of arrows (the
        indented lines "FROM, FROM -> TO, TO", where "F (each)" is F and
        its subfolders) says exactly what the ARROWS table of LAYERS
        (tests/check-layers.sh) allows.

Prints one line per check, "ok<TAB>NAME<TAB>detail" or
"fail<TAB>NAME<TAB>what is wrong"; exits 0 iff every check is ok, 2 on a
usage error.
"""
import fnmatch
import glob
import os
import re
import subprocess
import sys

PATH = re.compile(r'(?<![\w/.-])((?:src|tests|conf|include)/[A-Za-z0-9_.*+/-]*[A-Za-z0-9_*/])')
PLACEHOLDER = re.compile(r'^[A-Z][A-Z_]+$')
DATE = re.compile(r'\b(?:19|20)\d\d-[01]\d-[0-3]\d\b')


def say(ok, name, detail):
    print('%s\t%s\t%s' % ('ok' if ok else 'fail', name, detail))
    return ok


def tree_lines(readme):
    """The (depth, name) of each line of README's source tree block."""
    out, inside, block = [], False, False
    for line in open(readme, encoding='utf-8'):
        line = line.rstrip('\n')
        if line.startswith('## '):
            if block:
                break
            inside = line[3:].strip().lower() == 'the source tree'
            continue
        if not inside:
            continue
        if line.startswith('    ') and line.strip():
            block = True
            body = line[4:]
            depth = (len(body) - len(body.lstrip(' '))) // 2
            out.append((depth, body.split()[0]))
        elif block and line.strip():
            break
    return out


def tree_paths(lines):
    """Each line's path relative to the tree's root folder, and the root."""
    if not lines or lines[0][0] != 0 or not lines[0][1].endswith('/'):
        return None, []
    root, stack, paths = lines[0][1].rstrip('/'), [], []
    for depth, name in lines[1:]:
        if depth < 1 or depth > len(stack) + 1:
            paths.append((None, name))
            continue
        stack = stack[:depth - 1]
        paths.append(('/'.join(stack + [name.rstrip('/')]), name))
        if name.endswith('/'):
            stack.append(name.rstrip('/'))
    return root, paths


def files_under(top):
    out = []
    for d, dirs, files in os.walk(top):
        dirs.sort()
        rel = os.path.relpath(d, top)
        for f in sorted(files):
            out.append(f if rel == '.' else rel + '/' + f)
    return out


def check_tree(readme, src):
    lines = tree_lines(readme)
    root, paths = tree_paths(lines)
    if root is None:
        return say(False, 'src-tree', '%s: no "## The source tree" block starting with a folder' % readme)
    files = files_under(src)
    named, globs, dangling = set(), [], []
    for rel, name in paths:
        if rel is None:
            dangling.append('%s (indented under nothing)' % name)
        elif '*' in rel:
            hits = [f for f in files if os.path.dirname(f) == os.path.dirname(rel)
                    and fnmatch.fnmatch(os.path.basename(f), os.path.basename(rel))]
            if not os.path.isdir(os.path.join(src, os.path.dirname(rel))):
                dangling.append('%s/%s' % (root, rel))
            globs.extend(hits)
        elif name.endswith('/'):
            if not os.path.isdir(os.path.join(src, rel)):
                dangling.append('%s/%s' % (root, rel + '/'))
        elif not os.path.isfile(os.path.join(src, rel)):
            dangling.append('%s/%s' % (root, rel))
        else:
            named.add(rel)
    missing = [f for f in files if f not in named and f not in globs]
    ok = say(not missing, 'src-tree lists every file',
             '%d files of %s/, each with its line' % (len(files), root) if not missing else
             '%d without a line in %s: %s' % (len(missing), readme, ' '.join(root + '/' + m for m in missing[:8])))
    ok &= say(not dangling, 'src-tree names only what exists',
              '%d lines' % len(paths) if not dangling else 'no such file: ' + ' '.join(dangling[:8]))
    folders = sorted({os.path.dirname(f) for f in files if '/' in f})
    bare = [d for d in folders if not os.path.isfile(os.path.join(src, d, 'README.md'))]
    ok &= say(not bare, 'src folders have a README.md',
              '%d folders' % len(folders) if not bare else 'no README.md in ' + ' '.join(root + '/' + d for d in bare))
    return ok


def text_of(doc):
    if re.search(r'\.[1-9]$', doc):
        out = subprocess.run(['mandoc', '-T', 'ascii', '-O', 'width=1000', doc], capture_output=True)
        if out.returncode > 1:
            sys.exit('doc_check: mandoc failed on %s' % doc)
        return re.sub(r'.\x08', '', out.stdout.decode('utf-8', errors='replace'))
    return open(doc, encoding='utf-8').read()


def is_placeholder(path, after):
    if after in '<{':
        return True
    parts = re.split(r'[/._-]', path)
    return any(PLACEHOLDER.match(p) and p not in ('README', 'LICENSE') for p in parts)


def check_paths(top, docs):
    ok = True
    for doc in docs:
        if not os.path.isfile(doc):
            ok &= say(False, 'paths %s' % os.path.relpath(doc, top), 'no such document')
            continue
        text = text_of(doc)
        seen, bad = [], []
        for m in PATH.finditer(text):
            path = m.group(1).rstrip('/')
            after = text[m.end():m.end() + 1]
            if is_placeholder(path, after) or path in seen:
                continue
            seen.append(path)
            full = os.path.join(top, path)
            if '*' in path:
                if not glob.glob(full):
                    bad.append(path)
            elif not os.path.exists(full):
                bad.append(path)
        name = 'paths %s' % os.path.relpath(doc, top)
        ok &= say(not bad, name, '%d paths of the tree, each there' % len(seen) if not bad else
                  '%d named but not in the tree: %s' % (len(bad), ' '.join(bad[:8])))
    return ok


def check_dates(page):
    hits = []
    for n, line in enumerate(open(page, encoding='utf-8'), 1):
        if line.startswith('.TH '):
            continue
        hits += ['%d: %s' % (n, d) for d in DATE.findall(line)]
    return say(not hits, 'no dates %s' % os.path.basename(page),
               'none but the title line\'s' if not hits else '%d: %s' % (len(hits), ', '.join(hits[:6])))


def layer_arrows(script):
    """(from, to) of check-layers.sh's ARROWS table, and its folders."""
    text = open(script, encoding='utf-8').read()
    m = re.search(r"^ARROWS='\n(.*?)^'", text, re.M | re.S)
    if not m:
        return None, set()
    pairs, folders = set(), set()
    for line in m.group(1).splitlines():
        words = line.split()
        if words:
            folders.update(words)
            pairs.update((words[0], t) for t in words[1:])
    return pairs, folders


def readme_arrows(readme, folders):
    pairs = set()
    for line in open(readme, encoding='utf-8'):
        if not line.startswith('    ') or '->' not in line:
            continue
        left, right = line.strip().split('->', 1)
        tos = set()
        for item in right.split(','):
            item = item.strip()
            if item.endswith('(each)'):
                base = item[:-len('(each)')].strip()
                tos.update(f for f in folders if f == base or f.startswith(base + '/'))
            elif item:
                tos.add(item)
        for f in left.split(','):
            pairs.update((f.strip(), t) for t in tos)
    return pairs


def check_arrows(readme, script):
    want, folders = layer_arrows(script)
    if want is None:
        return say(False, 'arrows', '%s: no ARROWS table' % script)
    have = readme_arrows(readme, folders)
    extra = sorted(have - want)
    lack = sorted(want - have)
    detail = '%d arrows, as %s allows' % (len(have), os.path.basename(script))
    if extra or lack:
        detail = '; '.join(x for x in (
            'not allowed there: ' + ' '.join('%s->%s' % p for p in extra[:6]) if extra else '',
            'missing: ' + ' '.join('%s->%s' % p for p in lack[:6]) if lack else '') if x)
    name = os.path.join(os.path.basename(os.path.dirname(os.path.abspath(readme))), os.path.basename(readme))
    return say(not extra and not lack, 'arrows %s' % name, detail)


TICKS = re.compile(r'`([^`\n]+)`')
WORD = re.compile(r'^[A-Za-z0-9_.*][A-Za-z0-9_.*+/-]*$')
EXT = re.compile(r'\.[A-Za-z][A-Za-z0-9]*$')
MAKE = re.compile(r'(?<![\w-])make\s+((?:[-\w=./]+\s*)+)')
TEST_TARGET = re.compile(r'(?<![\w/.-])(test-[a-z0-9-]+)(?![\w/.-])')


def make_targets(top):
    """The targets TOP's Makefile (and what it includes) defines."""
    out = subprocess.run(['make', '-pRrq', '-C', top], capture_output=True)
    names = set()
    for line in out.stdout.decode('utf-8', errors='replace').splitlines():
        m = re.match(r'^([A-Za-z0-9_.][^:#=\t$]*):(?!=)', line)
        if m:
            names.update(m.group(1).split())
    return names


def tree_names(top):
    """Every file and folder name of the tree (git's, else the disk's)."""
    names = set()
    for d, dirs, files in os.walk(top):
        dirs[:] = [x for x in dirs if x not in ('.git', 'build')]
        names.update(dirs)
        names.update(files)
    return names


def map_path_ok(top, doc, word, names):
    word = word.rstrip('/')
    if '/' not in word:
        if '*' in word:
            return any(fnmatch.fnmatch(n, word) for n in names)
        return word in names
    bases = [top]
    d = os.path.dirname(os.path.abspath(doc))
    while d.startswith(os.path.abspath(top)) and d not in bases:
        bases.append(d)
        d = os.path.dirname(d)
    if word.endswith('.h'):
        bases.append('/usr/include')
    for b in bases:
        full = os.path.join(b, word)
        if glob.glob(full) if '*' in full else os.path.exists(full):
            return True
    return False


def map_words(text):
    """The path-like words and the make targets of a README's text."""
    paths, targets = [], []
    code, fenced = [], False
    for line in text.splitlines():
        if line.startswith('```'):
            fenced = not fenced
        elif fenced or line.startswith('    '):
            code.append(line)
    for span in TICKS.findall(text) + code:
        for m in MAKE.finditer(span):
            for w in m.group(1).split():
                if w.startswith('-') or '=' in w:
                    continue
                if not re.match(r'^[a-z][a-z0-9-]*$', w):
                    break
                targets.append(w)
                if span in code:
                    break  # a code block's prose: its first target only
        if span in code:
            continue
        for w in span.split():
            w = w.strip('(),;:')
            if (not WORD.match(w) or w.startswith(('.', '_', '/')) and '/' not in w[1:]
                    or w.startswith('/') or not ('/' in w or EXT.search(w))):
                continue
            paths.append(w)
    targets += TEST_TARGET.findall(text)
    return paths, targets


def built(word):
    base = os.path.basename(word.rstrip('/'))
    return word.startswith('build/') or re.match(r'^lib\w+\.(a|so)$', base)


def check_maps(top, docs):
    ok, targets, names = True, make_targets(top), tree_names(top)
    if not targets:
        return say(False, 'maps', 'no target read from %s/Makefile' % top)
    for doc in docs:
        rel = os.path.relpath(doc, top)
        if not os.path.isfile(doc):
            ok &= say(False, 'maps %s' % rel, 'no such document')
            continue
        paths, tgts = map_words(open(doc, encoding='utf-8').read())
        bad_p, seen_p, bad_t, seen_t = [], set(), [], set()
        for w in paths:
            if w in seen_p or built(w) or is_placeholder(w, ' ') or '<' in w:
                continue
            seen_p.add(w)
            if not map_path_ok(top, doc, w, names):
                bad_p.append(w)
        for t in tgts:
            if t in seen_t or PLACEHOLDER.match(t.split('-')[-1]):
                continue
            seen_t.add(t)
            if t not in targets:
                bad_t.append(t)
        ok &= say(not bad_p, 'maps %s: paths' % rel, '%d paths named, each there' % len(seen_p)
                  if not bad_p else '%d named but not in the tree: %s' % (len(bad_p), ' '.join(bad_p[:8])))
        ok &= say(not bad_t, 'maps %s: targets' % rel, '%d make targets named, each in the Makefile' % len(seen_t)
                  if not bad_t else '%d named but not targets of the Makefile: %s' % (len(bad_t), ' '.join(bad_t[:8])))
    return ok


def main():
    a = sys.argv[1:]
    if len(a) == 3 and a[0] == 'tree':
        ok = check_tree(a[1], a[2])
    elif len(a) >= 3 and a[0] == 'paths':
        ok = check_paths(a[1], a[2:])
    elif len(a) >= 3 and a[0] == 'maps':
        ok = check_maps(a[1], a[2:])
    elif len(a) == 2 and a[0] == 'dates':
        ok = check_dates(a[1])
    elif len(a) == 3 and a[0] == 'arrows':
        ok = check_arrows(a[1], a[2])
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)
    sys.exit(0 if ok else 1)


main()
