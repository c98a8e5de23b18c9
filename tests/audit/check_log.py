#!/usr/bin/env python3
"""check_log.py: assertions on audit logs and `naglefix report --json` output,
for tests/audit/run.sh. Each command prints why on failure and exits 1.
None passes on an empty (or missing) log or report: each needs the findings
it checks, and a check that something is absent needs a control that has it.

  valid LOG                      LOG has lines, each one JSON object with an "event"
  count LOG EVENT                prints how many lines have that event
  stalls LOG MIN_MS              LOG has measured split_writes, each with stall_ms >= MIN_MS
  prevented LOG                  LOG has split_writes, each with stall_ms null and prevented
  summary LOG                    summary findings = split_write + recv_split + repeat counts > 0
  nofinding LOG CONTROL          LOG (absent: empty) has no finding, CONTROL has some
  norecv LOG CONTROL             LOG (absent: empty) has no recv_split finding; CONTROL has
                                 some, and a recv_split summary (its process was audited)
  pauses LOG CONTROL MOST MAX_MS LOG's recv_split findings (the lines naming one peer: a
                                 repeat line, which names none, comes after 3 alike), of a
                                 sender pausing longer than MAX_MS: none of a gap over
                                 MAX_MS, MOST (< 3) at most, no repeat; CONTROL as for norecv
  group REPORT SIDE PEER WRITES MIN_FINDINGS MIN_MEDIAN|null
                                 REPORT (naglefix report --json) has that split_write group
  fix REPORT SIDE PEER FIX MIN_FINDINGS MIN_MEDIAN
                                 REPORT has a recv_split group on SIDE for PEER, with that FIX
  nogroup REPORT SIDE [FINDING]  REPORT has groups, none on that side (of that finding kind)
  findings REPORT SEEN MIN [TABLE]
                                 REPORT's findings add up to SEEN (the stalls the client
                                 saw, or the library's summary counted: no more, no
                                 fewer), and SEEN >= MIN; so do the
                                 FINDINGS column of TABLE (naglefix audit's stderr)
"""
import os
import json
import sys


def lines(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def findings(path):
    return [o for o in lines(path) if o["event"] in ("split_write", "recv_split", "repeat")]


def recv_findings(path):
    return [o for o in findings(path)
            if o["event"] == "recv_split" or o.get("of") == "recv_split"]


def kind(group):
    return group.get("finding", "split_write")


def check_median(g, min_median):
    if min_median == "null":
        if g["median_stall_ms"] is not None:
            die("median %r, expected null" % g["median_stall_ms"])
    elif g["median_stall_ms"] is None or g["median_stall_ms"] < float(min_median):
        die("median %r ms, expected >= %s" % (g["median_stall_ms"], min_median))


def check_control(path):
    """Dies unless the log at path has recv_split findings and a recv_split
    summary (its process was audited); returns how many finding lines."""
    control = recv_findings(path)
    if not control:
        die("the control %s has no recv_split finding: the check would prove nothing" % path)
    if not [o for o in lines(path) if o["event"] == "summary" and o.get("of") == "recv_split"]:
        die("the control %s has no recv_split summary" % path)
    return len(control)


def die(msg):
    print(msg)
    sys.exit(1)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "valid":
        n = 0
        with open(args[0]) as f:
            for i, l in enumerate(f, 1):
                try:
                    o = json.loads(l)
                except ValueError as e:
                    die("line %d is not JSON (%s): %r" % (i, e, l[:200]))
                if not isinstance(o, dict) or "event" not in o:
                    die("line %d has no event: %r" % (i, l[:200]))
                n += 1
        if n == 0:
            die("empty log: no line to check")
        print(n)
    elif cmd == "count":
        print(sum(1 for o in lines(args[0]) if o["event"] == args[1]))
    elif cmd == "stalls":
        objs = [o for o in lines(args[0]) if o["event"] == "split_write"]
        if not objs:
            die("no split_write line")
        for o in objs:
            if o["stall_ms"] is None or o["stall_ms"] < float(args[1]):
                die("stall below %s ms: %r" % (args[1], o))
    elif cmd == "prevented":
        objs = [o for o in lines(args[0]) if o["event"] == "split_write"]
        if not objs:
            die("no split_write line")
        for o in objs:
            if o["stall_ms"] is not None or o.get("prevented") is not True:
                die("not a prevented finding: %r" % o)
    elif cmd == "summary":
        objs = lines(args[0])
        found = sum(1 for o in objs if o["event"] in ("split_write", "recv_split")) + \
            sum(o["count"] for o in objs if o["event"] == "repeat")
        summed = sum(o["findings"] for o in objs if o["event"] == "summary")
        if found != summed or found == 0:
            die("summaries say %d findings, lines say %d" % (summed, found))
    elif cmd == "nofinding":
        found = findings(args[0]) if os.path.exists(args[0]) else []
        if found:
            die("%d finding(s), want none: %r" % (len(found), found[0]))
        if not findings(args[1]):
            die("the control %s has no finding: the check would prove nothing" % args[1])
    elif cmd == "norecv":
        found = recv_findings(args[0]) if os.path.exists(args[0]) else []
        if found:
            die("%d recv_split finding(s), want none: %r" % (len(found), found[0]))
        print("none; control: %d lines" % check_control(args[1]))
    elif cmd == "pauses":
        found = recv_findings(args[0]) if os.path.exists(args[0]) else []
        allowed, longest = int(args[2]), float(args[3])
        n = len(found)
        long_ = [o for o in found if (o.get("stall_ms") or 0) > longest]
        if long_:
            die("a recv_split finding of a gap over %g ms: %r" % (longest, long_[0]))
        if [o for o in found if o["event"] == "repeat"]:
            die("a repeat line among one peer's: %r" % found[0])
        if n > allowed:
            die("%d recv_split finding(s), want %d at most: %r" % (n, allowed, found[0]))
        check_control(args[1])
        print("%d%s" % (n, ", each in the delayed ACK's window" if n else ""))
    elif cmd == "findings":
        with open(args[0]) as f:
            total = sum(g["findings"] for g in json.load(f))
        seen, least = int(args[1]), int(args[2])
        if seen < least:
            die("%d stalls seen, expected >= %d: nothing to count" % (seen, least))
        if total != seen:
            die("report counts %d findings, want %d (the stalls seen)" % (total, seen))
        if len(args) > 3:
            with open(args[3]) as f:
                rows = [l.split() for l in f]
            shown = sum(int(r[2]) for r in rows if len(r) > 2 and r[1] in ("accept", "connect"))
            if shown != seen:
                die("the table's FINDINGS say %d, want %d (the stalls seen)" % (shown, seen))
        print("%d of %d" % (total, seen))
    elif cmd in ("group", "nogroup", "fix"):
        with open(args[0]) as f:
            groups = json.load(f)
        if cmd == "nogroup":
            if not groups:
                die("empty report: nothing to tell a missing %s group from" % args[1])
            bad = [g for g in groups if g["side"] == args[1] and
                   (len(args) < 3 or kind(g) == args[2])]
            if bad:
                die("unexpected %s group: %r" % (args[1], bad))
            return
        if cmd == "fix":
            side, peer, fix, min_findings, min_median = args[1:6]
            for g in groups:
                if kind(g) == "recv_split" and g["side"] == side and peer in ("*", g["peer"]):
                    break
            else:
                die("no recv_split %s group for %s in %r" % (side, peer, groups))
            if g["fix"] != fix.replace("*", g["peer"]):
                die("fix %r, expected %r" % (g["fix"], fix))
            if g["findings"] < int(min_findings):
                die("%d findings, expected >= %s" % (g["findings"], min_findings))
            check_median(g, min_median)
            print("%s findings=%d median_ms=%s" % (g["fix"], g["findings"], g["median_stall_ms"]))
            return
        side, peer, writes, min_findings, min_median = args[1:6]
        for g in groups:
            if kind(g) == "split_write" and g["side"] == side and peer in ("*", g["peer"]):
                break
        else:
            die("no %s group for %s in %r" % (side, peer, groups))
        if writes != "*" and g["writes"] != json.loads(writes):
            die("writes %r, expected %s" % (g["writes"], writes))
        if g["findings"] < int(min_findings):
            die("%d findings, expected >= %s" % (g["findings"], min_findings))
        check_median(g, min_median)
        print("%s %s findings=%d median_ms=%s" % (side, peer, g["findings"], g["median_stall_ms"]))
    else:
        die("unknown command " + cmd)


if __name__ == "__main__":
    main()
