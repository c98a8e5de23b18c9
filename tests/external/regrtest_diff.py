#!/usr/bin/env python3
"""regrtest_diff.py: compares two runs of CPython's regrtest (`python3 -m
test -j N --junit-xml X ...`), under the library and bare.

  regrtest_diff.py suspects LIB.xml LIB.log
      prints the test modules to run bare, one a line: those with a test
      case that failed under the library, or that did not pass or skip
      there (failed, crashed, env changed, timed out); "?" for a failed
      case of no module the log names (then every module runs bare)

  regrtest_diff.py new BARE.xml LIB.xml
      prints the ids of the test cases that failed (failure or error) under
      the library and not bare, one a line (a --matchfile for a rerun)

  regrtest_diff.py verdict BARE.xml BARE.log LIB.xml LIB.log [RERUN.xml [BARE_RERUN.xml]]
      prints one tab-separated line per test module run (under the library,
      or bare: the bare run may hold only the suspects, or be missing when
      there were none):
        PASS <module> <detail>   nothing failed under the library, or only
                                 what failed bare too, or new failures each
                                 told apart below (flaky, or failing bare
                                 on its rerun too)
        FAIL <module> <detail>   new failures that failed again in RERUN
                                 (when given) and did not fail in
                                 BARE_RERUN (when given: the same cases
                                 bare, run right after RERUN), or the
                                 module as a whole failed, crashed or timed
                                 out only under the library
      and NOTE lines: test cases failing bare (not the library's doing), a
      new failure that passed on the rerun (flaky), one that failed on the
      rerun and bare right after it too (not the library's doing: the
      earlier bare run met another load), modules that changed their
      environment.
A module's state comes from the log's progress lines ("[ 5/29] name
passed", "failed (6 failures)", "crashed", "skipped"...), its test cases
from the JUnit file, whose ids ("test.test_asyncio.test_sendfile.Cls.test_x")
start with "test." and the module's name.
"""
import re
import sys
import xml.etree.ElementTree as ET

PROGRESS = re.compile(r"\[\s*\d+/\d+(?:/\d+)?\] (\S+) (.*?)(?: -- running.*)?$")


def cases(path):
    """{test id: 'ok' | 'skipped' | 'failed'} from a JUnit file."""
    out = {}
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return out
    for c in root.iter("testcase"):
        name = c.get("name") or ""
        if c.find("failure") is not None or c.find("error") is not None:
            out[name] = "failed"
        elif c.find("skipped") is not None:
            out[name] = "skipped"
        else:
            out[name] = "ok"
    return out


def modules(log):
    """{module: state} from a regrtest log, in the order they finished."""
    out = {}
    try:
        with open(log, errors="replace") as f:
            for line in f:
                m = PROGRESS.search(line.rstrip("\n"))
                if m:
                    out[m.group(1)] = m.group(2).strip()
    except OSError:
        pass
    return out


def module_of(test_id, names):
    best = ""
    for n in names:
        if test_id.startswith("test." + n + ".") and len(n) > len(best):
            best = n
    return best or "?"


def failed(d):
    return {k for k, v in d.items() if v == "failed"}


def bad_state(state):
    return not (state.startswith("passed") or state.startswith("skipped"))


def suspects(lib_xml, lib_log):
    lmods = modules(lib_log)
    names = list(lmods)
    out = {m for m, state in lmods.items() if bad_state(state)}
    out |= {module_of(t, names) for t in failed(cases(lib_xml))}
    return [m for m in names if m in out] + (["?"] if "?" in out else [])


def verdict(bare_xml, bare_log, lib_xml, lib_log, rerun_xml=None, bare_rerun_xml=None):
    bare, lib = cases(bare_xml), cases(lib_xml)
    bmods, lmods = modules(bare_log), modules(lib_log)
    rerun = cases(rerun_xml) if rerun_xml else None
    again_bare = cases(bare_rerun_xml) if bare_rerun_xml else {}
    names = list(lmods) + [m for m in bmods if m not in lmods]
    new = failed(lib) - failed(bare)
    for t in sorted(failed(bare)):
        print(f"NOTE\t{module_of(t, names)}\tfails bare too (not ours): {t}")
    for mod in names:
        bstate, lstate = bmods.get(mod), lmods.get(mod, "not run")
        mine = {t for t in lib if module_of(t, names) == mod}
        run = sum(1 for t in mine if lib[t] != "skipped")
        mnew = sorted(t for t in new if module_of(t, names) == mod)
        flaky = [t for t in mnew if rerun is not None and rerun.get(t) == "ok"]
        bare_too = [t for t in mnew if t not in flaky and again_bare.get(t) == "failed"]
        real = [t for t in mnew if t not in flaky and t not in bare_too]
        # the module failed by its cases alone, each of them told apart
        told = bool(mnew) and not real and lstate.startswith("failed")
        for t in flaky:
            print(f"NOTE\t{mod}\tfailed under the library, passed on the rerun (flaky?): {t}")
        for t in bare_too:
            print(f"NOTE\t{mod}\tfailed under the library and on its rerun, and bare "
                  f"right after (not ours): {t}")
        if "env changed" in lstate and "env changed" not in (bstate or ""):
            print(f"NOTE\t{mod}\tenv changed under the library only: {lstate}")
        if real:
            shown = ", ".join(t.split(".", 2)[-1] for t in real[:8])
            more = f" and {len(real) - 8} more" if len(real) > 8 else ""
            print(f"FAIL\t{mod}\t{len(real)} of {run} tests fail only under the library "
                  f"({lstate}): {shown}{more}")
        elif told:
            print(f"PASS\t{mod}\t{run} tests run; the {len(mnew)} failing under the library "
                  f"only: {len(flaky)} passed on the rerun, {len(bare_too)} failed bare "
                  f"too when rerun; {lstate}")
        elif bad_state(lstate) and not bad_state(bstate or "not run"):
            print(f"FAIL\t{mod}\tmodule {lstate!r} under the library, {bstate!r} bare")
        elif bstate is None and (bad_state(lstate) or mnew):
            # a suspect that the bare run did not report: nothing to
            # compare with
            print(f"FAIL\t{mod}\tmodule {lstate!r} under the library, not run bare")
        elif bstate is None:
            print(f"PASS\t{mod}\t{run} tests run, none failed; {lstate}")
        else:
            nb = len([t for t in failed(bare) if module_of(t, names) == mod])
            print(f"PASS\t{mod}\t{run} tests run, failures as bare ({nb}); {lstate}")


def main(argv):
    if len(argv) == 4 and argv[1] == "suspects":
        for m in suspects(argv[2], argv[3]):
            print(m)
        return 0
    if len(argv) == 4 and argv[1] == "new":
        for t in sorted(failed(cases(argv[3])) - failed(cases(argv[2]))):
            print(t)
        return 0
    if len(argv) in (6, 7, 8) and argv[1] == "verdict":
        verdict(*argv[2:])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
