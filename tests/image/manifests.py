#!/usr/bin/env python3
"""manifests.py: conf/kubernetes/'s manifests checked, and a Pod made of
the DaemonSet's template for `podman kube play` (tests/image/run.sh).

Usage:
  manifests.py check DIR IMAGE WATCH_CAPS ATTACH_CAPS
      DIR's *.yaml read, its folders' too (python3-yaml): each object has apiVersion, kind,
      metadata.name and metadata.namespace "naglefix" (but the
      Namespace); the DaemonSet runs IMAGE (make image's name) with
      hostNetwork and hostPID, `watch --metrics ADDR:PORT` whose PORT is
      the container's port "metrics", the prometheus.io/scrape, port and
      path annotations, resource requests and limits, capabilities
      dropping ALL and adding exactly WATCH_CAPS (comma-separated), not
      privileged, the cgroup and /run/netns mounts; the Service selects
      the DaemonSet's pods on that port by name; the ServiceMonitor selects
      the Service; the attach Job runs IMAGE's attach with the ConfigMap's
      policy file, exactly ATTACH_CAPS, a writable cgroup mount.
      One line a problem, exit 1; "ok" and exit 0 if none.
  manifests.py pod DAEMONSET IMAGE PORT NAME
      The DaemonSet's pod template as a Pod named NAME (YAML on standard
      output), its image IMAGE and its metrics port PORT (the --metrics
      argument, the annotation): one that runs beside another's on this
      host. Its ports list is left out (podman 4.3 refuses one with
      hostNetwork).
"""
import glob
import os
import sys

import yaml


def load(directory):
    """Every object of DIR's *.yaml files, by kind (a list each)."""
    objs = {}
    for path in sorted(glob.glob(os.path.join(directory, "**", "*.yaml"), recursive=True)):
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if doc:
                    doc["_file"] = os.path.relpath(path, directory)
                    objs.setdefault(doc.get("kind", "?"), []).append(doc)
    return objs


def dig(obj, *keys):
    """obj[k0][k1]...: None where one is missing."""
    for k in keys:
        if isinstance(obj, dict):
            obj = obj.get(k)
        elif isinstance(obj, list) and isinstance(k, int) and k < len(obj):
            obj = obj[k]
        else:
            return None
    return obj


def metrics_port(args):
    """The PORT of a `--metrics [ADDR:]PORT` argument list, or None."""
    if "--metrics" not in args or args.index("--metrics") + 1 >= len(args):
        return None
    return str(args[args.index("--metrics") + 1]).rsplit(":", 1)[-1]


def one(objs, kind, bad):
    got = objs.get(kind, [])
    if len(got) != 1:
        bad.append("%d objects of kind %s, want 1" % (len(got), kind))
        return {}
    return got[0]


def check_common(objs, bad):
    for kind, items in objs.items():
        for o in items:
            where = "%s %s" % (o["_file"], kind)
            for key in ("apiVersion", "kind"):
                if not o.get(key):
                    bad.append("%s: no %s" % (where, key))
            if not dig(o, "metadata", "name"):
                bad.append("%s: no metadata.name" % where)
            if kind != "Namespace" and dig(o, "metadata", "namespace") != "naglefix":
                bad.append("%s: namespace %r, want naglefix" % (where, dig(o, "metadata", "namespace")))


def check_caps(where, ctr, want, bad):
    sc = ctr.get("securityContext") or {}
    caps = sc.get("capabilities") or {}
    if caps.get("drop") != ["ALL"]:
        bad.append("%s: capabilities.drop %r, want [ALL]" % (where, caps.get("drop")))
    if sorted(caps.get("add") or []) != sorted(want):
        bad.append("%s: capabilities.add %r, want %r (measured)" % (where, caps.get("add"), want))
    if sc.get("privileged") or sc.get("allowPrivilegeEscalation", True):
        bad.append("%s: privileged or allowPrivilegeEscalation" % where)


def check_resources(where, ctr, bad):
    for part in ("requests", "limits"):
        for res in ("cpu", "memory"):
            if not dig(ctr, "resources", part, res):
                bad.append("%s: no resources.%s.%s" % (where, part, res))


def mounts_of(spec, ctr):
    """{mountPath: (hostPath or configMap name, readOnly)} of a container."""
    vols = {v["name"]: v for v in spec.get("volumes") or []}
    out = {}
    for m in ctr.get("volumeMounts") or []:
        v = vols.get(m["name"], {})
        src = dig(v, "hostPath", "path") or dig(v, "configMap", "name")
        out[m["mountPath"]] = (src, bool(m.get("readOnly")))
    return out


def check_daemonset(ds, image, caps, bad):
    spec = dig(ds, "spec", "template", "spec") or {}
    labels = dig(ds, "spec", "template", "metadata", "labels") or {}
    ann = dig(ds, "spec", "template", "metadata", "annotations") or {}
    if dig(ds, "spec", "selector", "matchLabels") != labels or not labels:
        bad.append("DaemonSet: selector.matchLabels is not the template's labels")
    for key in ("hostNetwork", "hostPID"):
        if spec.get(key) is not True:
            bad.append("DaemonSet: %s is not true" % key)
    ctrs = spec.get("containers") or []
    if len(ctrs) != 1:
        bad.append("DaemonSet: %d containers, want 1" % len(ctrs))
        return labels, None
    c = ctrs[0]
    if c.get("image") != image:
        bad.append("DaemonSet: image %r, want make image's %r" % (c.get("image"), image))
    args = [str(a) for a in c.get("args") or []]
    if not args or args[0] != "watch":
        bad.append("DaemonSet: args %r, want watch ..." % args)
    port = metrics_port(args)
    named = {str(p.get("containerPort")): p.get("name") for p in c.get("ports") or []}
    if port is None or named.get(port) != "metrics":
        bad.append("DaemonSet: --metrics port %r is not the container port named metrics (%r)" % (port, named))
    if ann.get("prometheus.io/scrape") != "true":
        bad.append("DaemonSet: annotation prometheus.io/scrape is not \"true\"")
    if str(ann.get("prometheus.io/port")) != str(port):
        bad.append("DaemonSet: annotation prometheus.io/port %r, --metrics port %r" % (ann.get("prometheus.io/port"), port))
    if ann.get("prometheus.io/path") != "/metrics":
        bad.append("DaemonSet: annotation prometheus.io/path %r, want /metrics" % ann.get("prometheus.io/path"))
    check_resources("DaemonSet", c, bad)
    check_caps("DaemonSet", c, caps, bad)
    mounts = mounts_of(spec, c)
    if mounts.get("/run/netns", (None,))[0] != "/run/netns":
        bad.append("DaemonSet: the host's /run/netns is not mounted at /run/netns")
    if not any(src == "/sys/fs/cgroup" for src, _ in mounts.values()):
        bad.append("DaemonSet: the host's /sys/fs/cgroup is not mounted")
    return labels, port


def check_service(svc, mon, labels, port, bad):
    sel = dig(svc, "spec", "selector") or {}
    if not sel or any(labels.get(k) != v for k, v in sel.items()):
        bad.append("Service: selector %r does not select the DaemonSet's pods %r" % (sel, labels))
    ports = dig(svc, "spec", "ports") or []
    if not any(p.get("name") == "metrics" and str(p.get("port")) == str(port) for p in ports):
        bad.append("Service: no port named metrics on %r" % port)
    want = dig(mon, "spec", "selector", "matchLabels") or {}
    have = dig(svc, "metadata", "labels") or {}
    if not want or any(have.get(k) != v for k, v in want.items()):
        bad.append("ServiceMonitor: selector %r does not select the Service %r" % (want, have))
    eps = dig(mon, "spec", "endpoints") or []
    if not any(e.get("port") == "metrics" and e.get("path") == "/metrics" for e in eps):
        bad.append("ServiceMonitor: no endpoint on port metrics, path /metrics")
    if not str(mon.get("apiVersion", "")).startswith("monitoring.coreos.com/"):
        bad.append("ServiceMonitor: apiVersion %r" % mon.get("apiVersion"))


def check_job(job, cm, image, caps, bad):
    spec = dig(job, "spec", "template", "spec") or {}
    c = dig(spec, "containers", 0) or {}
    if c.get("image") != image:
        bad.append("Job: image %r, want make image's %r" % (c.get("image"), image))
    args = [str(a) for a in c.get("args") or []]
    if not args or args[0] != "attach" or "--cgroup" not in args or "-c" not in args:
        bad.append("Job: args %r, want attach -c POLICY --cgroup CGROUP" % args)
        return
    policy = args[args.index("-c") + 1]
    mounts = mounts_of(spec, c)
    cm_name = dig(cm, "metadata", "name")
    d, f = os.path.split(policy)
    if mounts.get(d, (None,))[0] != cm_name or f not in (cm.get("data") or {}):
        bad.append("Job: policy %s is not the ConfigMap %r's key mounted at %s" % (policy, cm_name, d))
    cg = [p for p, (src, ro) in mounts.items() if src == "/sys/fs/cgroup"]
    if len(cg) != 1 or mounts[cg[0]][1]:
        bad.append("Job: the host's /sys/fs/cgroup not mounted once, writable (attach makes a cgroup)")
    if spec.get("restartPolicy") not in ("Never", "OnFailure"):
        bad.append("Job: restartPolicy %r" % spec.get("restartPolicy"))
    check_resources("Job", c, bad)
    check_caps("Job", c, caps, bad)


def check(directory, image, watch_caps, attach_caps):
    objs = load(directory)
    bad = []
    check_common(objs, bad)
    one(objs, "Namespace", bad)
    ds = one(objs, "DaemonSet", bad)
    labels, port = check_daemonset(ds, image, watch_caps.split(","), bad)
    check_service(one(objs, "Service", bad), one(objs, "ServiceMonitor", bad), labels, port, bad)
    check_job(one(objs, "Job", bad), one(objs, "ConfigMap", bad), image, attach_caps.split(","), bad)
    for b in bad:
        print(b)
    if not bad:
        print("ok: %d objects" % sum(len(v) for v in objs.values()))
    return 1 if bad else 0


def pod(daemonset, image, port, name):
    with open(daemonset) as f:
        ds = yaml.safe_load(f)
    tmpl = ds["spec"]["template"]
    old = metrics_port([str(a) for a in tmpl["spec"]["containers"][0]["args"]])
    for c in tmpl["spec"]["containers"]:
        c["image"] = image
        c["args"] = [str(a).replace(":" + old, ":" + port) if str(a).endswith(":" + old) else a
                     for a in c["args"]]
        # under hostNetwork a port is only informational; podman 4.3's
        # kube play refuses one ("PortMappings can only be used with
        # Bridge or slirp4netns networking")
        c.pop("ports", None)
    meta = dict(tmpl["metadata"])
    meta["name"] = name
    meta["annotations"]["prometheus.io/port"] = port
    out = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": tmpl["spec"]}
    yaml.safe_dump(out, sys.stdout, sort_keys=False)
    return 0


def main(argv):
    if len(argv) == 6 and argv[1] == "check":
        return check(*argv[2:])
    if len(argv) == 6 and argv[1] == "pod":
        return pod(*argv[2:])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
