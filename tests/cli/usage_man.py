#!/usr/bin/env python3
"""usage_man.py NAGLEFIX PAGE SRC_CLI: each command's --help against naglefix(1).

For the run mode and each subcommand, the options `naglefix [CMD] --help`
names (in its synopsis, the lines its usage starts with, and in its option
lines, those that begin with blanks and then an option) must be the options
the page documents for that command (its SYNOPSIS lines, and its entry
under OPTIONS up to the next command's: every option set in bold there),
both ways: an option --help names that the page does not is a FAIL, and
so is the reverse. -h/--help is left out: every command takes it. And
the options --help names must be those the command reads: its getopt
table in src/cli (the struct option arrays and getopt_long's short
letters of CMD.c and CMD_*.c in the command's folder, src/cli/attach/detach.c
for detach, naglefix.c for the run mode), both ways.

Here, in tests/cli (make test-cli, which builds the command first), not in
tests/man: it runs the command, and test-man checks the documents without
building anything. Prints one PASS or FAIL line a command, then "N passed,
M failed" (tests/lib.sh's tally); exit status 1 if one failed.
"""
import glob
import re
import subprocess
import sys

COMMANDS = ["", "check", "audit", "report", "fix", "scan", "watch", "attach", "detach"]
OPT = r"(?:--[a-z][a-z0-9-]*|-[a-zA-Z])"
HELP_OPTS = {"-h", "--help"}


def help_text(naglefix, cmd):
    argv = [naglefix] + ([cmd] if cmd else []) + ["--help"]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def help_options(text, cmd):
    """The options of one usage: its synopsis (the first line and those
    after it indented as one; the run mode's first line only, for the
    lines after it are the subcommands') and its option lines."""
    lines = text.splitlines()
    found, n = set(), 1
    while n < len(lines) and lines[n].startswith("       "):
        n += 1
    for line in lines[:1] if cmd == "" else lines[:n]:
        found |= set(re.findall(r"(?<![\w-])" + OPT + r"(?![\w-])", line))
    for line in lines[n:]:
        m = re.match(r"^\s+(" + OPT + r"(?:,\s*" + OPT + r")*)(?:[ =]|$)", line)
        if m:
            found |= set(re.findall(OPT, m.group(1)))
    return found - HELP_OPTS


def table_options(src, cmd):
    """The options of cmd's getopt_long call and its struct option array."""
    name = cmd or "naglefix"
    code = ""
    for path in sorted(glob.glob(f"{src}/**/{name}.c", recursive=True)
                       + glob.glob(f"{src}/**/{name}_*.c", recursive=True)):
        with open(path, encoding="utf-8") as f:
            code += f.read()
    found = set()
    for table in re.findall(r"struct option [a-z_]*\[\] = \{(.*?)\n\s*\};", code, re.S):
        found |= {"--" + n for n in re.findall(r'\{ "([a-z][a-z0-9-]*)",', table)}
    for letters in re.findall(r'getopt_long\([^"]*"([^"]*)"', code):
        found |= {"-" + c for c in letters if c.isalpha()}
    return found - HELP_OPTS


def unroff(line):
    """A page's line with the escapes that matter here undone."""
    return line.replace("\\-", "-").replace("\\(em", "-")


def bold_options(line, synopsis):
    """The options set in bold on a line of the page (.B, .BR, .RB, \\fB).
    Outside the SYNOPSIS a bold run that starts with a word, not an
    option, quotes another program or command (tcpdump -w, fix --undo):
    its options are not this command's."""
    line = unroff(line)
    parts = []
    if line.startswith((".B ", ".BR ", ".RB ")):
        words = re.findall(r'"[^"]*"|\S+', line.split(" ", 1)[1])
        if line.startswith(".B "):
            parts.append(" ".join(words))
        else:
            first_bold = line.startswith(".BR ")
            parts += [w.strip('"') for n, w in enumerate(words) if (n % 2 == 0) == first_bold]
    parts += re.findall(r"\\fB(.*?)\\f[RPI]", line)
    found = set()
    for p in parts:
        p = re.sub(r"\\f[BIRP]", " ", p).strip()
        if not synopsis and p and not re.match(OPT, p):
            continue
        found |= set(re.findall(r"(?<![\w-])" + OPT + r"(?![\w.-])", p))
    return found


def page_options(page, cmd):
    """The options the page documents for cmd: its SYNOPSIS lines and its
    entry under OPTIONS (the run mode: the .TP entries before check's)."""
    lines = page.splitlines()
    section, found, current, synopsis_cmd = None, set(), None, None
    for n, line in enumerate(lines):
        if line.startswith(".SH "):
            section = line[4:].strip()
            current = None
            continue
        if section == "SYNOPSIS":
            m = re.match(r"\.B naglefix(?: ([a-z]+))?", unroff(line))
            if m:
                synopsis_cmd = m.group(1) or ""
            elif line.startswith("where a"):
                synopsis_cmd = "fix"  # "where a TARGET is ...": fix's TARGET
            if synopsis_cmd == cmd:
                found |= bold_options(line, True)
        elif section == "OPTIONS":
            if n > 0 and lines[n - 1] == ".TP":
                m = re.match(r"(\.BR? )([a-z]+)\b", unroff(line))
                if m and m.group(2) in COMMANDS:
                    current = m.group(2)
                    line = m.group(1) + unroff(line)[m.end():]  # the heading: its options
                elif current is None:
                    current = ""
            if current == cmd:
                found |= bold_options(line, False)
    return found - HELP_OPTS


def main():
    naglefix, page_path, src = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(page_path, encoding="utf-8") as f:
        page = f.read()
    passed = failed = 0
    for cmd in COMMANDS:
        name = "usage-man-" + (cmd or "run")
        want, have = page_options(page, cmd), help_options(help_text(naglefix, cmd), cmd)
        if want != have:
            print(f"FAIL {name}: in --help, not in naglefix(1): {sorted(have - want) or 'none'};"
                  f" in naglefix(1), not in --help: {sorted(want - have) or 'none'}")
            failed += 1
        else:
            print(f"PASS {name}: {len(have)} options: {' '.join(sorted(have))}")
            passed += 1
        name, table = "usage-table-" + (cmd or "run"), table_options(src, cmd)
        if table != have:
            print(f"FAIL {name}: read, not in --help: {sorted(table - have) or 'none'};"
                  f" in --help, not read: {sorted(have - table) or 'none'}")
            failed += 1
        else:
            print(f"PASS {name}: {len(table)} options")
            passed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
