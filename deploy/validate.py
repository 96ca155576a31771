#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Client-side checks of deploy/ (no cluster needed; registered with CTest
as deploy_manifests):
  1. `kubectl kustomize deploy/base` builds (kubectl parses every object);
     skipped with a note when kubectl is absent. (`kubectl apply
     --dry-run=client` needs an API server for discovery, so it is not run.)
  2. each CRD's openAPIV3Schema is a valid JSON Schema (python3-jsonschema,
     Draft 4, the dialect OpenAPI v3 schemas derive from) and structural
     (every property has a type);
  3. deploy/examples/*.yaml validate against their CRD, and every file in
     deploy/examples/invalid/ is rejected;
  4. the DaemonSet and RBAC keep their promises: host PID, no privileged
     mode, capabilities exactly BPF/PERFMON/SYS_RESOURCE/SYS_ADMIN after
     dropping ALL, read-only verbs only;
  5. the ConfigMap's config.yaml passes `agentcgroupd --check-config` when
     the daemon is built (argument 1: its path).
Exit 0 pass, 1 fail, 77 skip (python3-yaml or python3-jsonschema missing)."""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import jsonschema
    import yaml
except ImportError as e:  # pragma: no cover
    print(f"SKIP: {e} (scripts/setup.sh python)")
    sys.exit(77)

here = os.path.dirname(os.path.abspath(__file__))
fails = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        fails.append(what)


def load_all(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


objs = {}
for f in sorted(glob.glob(os.path.join(here, "base", "*.yaml"))):
    for d in load_all(f):
        if d.get("kind") and d["kind"] != "Kustomization":
            objs[(d["kind"], d["metadata"]["name"])] = d

kubectl = shutil.which("kubectl")
if kubectl:
    r = subprocess.run([kubectl, "kustomize", os.path.join(here, "base")], capture_output=True, text=True)
    built = [d for d in yaml.safe_load_all(r.stdout) if d] if r.returncode == 0 else []
    check(r.returncode == 0 and len(built) == len(objs),
          f"kubectl kustomize deploy/base builds {len(built)} objects ({r.stderr.strip()[:200]})")
else:
    print("note: kubectl not installed: kustomize build not checked")


def structural(schema, path="spec"):
    if "type" not in schema and "x-kubernetes-preserve-unknown-fields" not in schema:
        return [path]
    bad = []
    for k, v in schema.get("properties", {}).items():
        bad += structural(v, f"{path}.{k}")
    if isinstance(schema.get("items"), dict):
        bad += structural(schema["items"], path + "[]")
    if isinstance(schema.get("additionalProperties"), dict):
        bad += structural(schema["additionalProperties"], path + ".*")
    return bad


crds = {}
for (kind, name), d in objs.items():
    if kind != "CustomResourceDefinition":
        continue
    for v in d["spec"]["versions"]:
        s = v["schema"]["openAPIV3Schema"]
        try:
            jsonschema.Draft4Validator.check_schema(s)
            ok = True
        except jsonschema.SchemaError as e:
            ok = False
            print(e)
        check(ok, f"{name} {v['name']}: openAPIV3Schema is a valid JSON Schema")
        check(not structural(s), f"{name} {v['name']}: structural (untyped: {structural(s)})")
        crds[(d["spec"]["group"] + "/" + v["name"], d["spec"]["names"]["kind"])] = s


def validate(doc):
    s = crds.get((doc.get("apiVersion"), doc.get("kind")))
    if s is None:
        return f"no CRD for {doc.get('apiVersion')} {doc.get('kind')}"
    errs = sorted(jsonschema.Draft4Validator(s).iter_errors(doc), key=str)
    return "; ".join(e.message for e in errs)


for f in sorted(glob.glob(os.path.join(here, "examples", "*.yaml"))):
    for d in load_all(f):
        err = validate(d)
        check(not err, f"examples/{os.path.basename(f)} validates ({err})")
for f in sorted(glob.glob(os.path.join(here, "examples", "invalid", "*.yaml"))):
    for d in load_all(f):
        err = validate(d)
        check(bool(err), f"examples/invalid/{os.path.basename(f)} is rejected ({err})")

ds = objs[("DaemonSet", "agentcgroupd")]["spec"]["template"]["spec"]
c = ds["containers"][0]
sc = c["securityContext"]
check(ds.get("hostPID") is True, "DaemonSet: hostPID")
check(not ds.get("hostNetwork"), "DaemonSet: no host network")
check(sc.get("privileged") is False, "DaemonSet: not privileged")
check(sc["capabilities"]["drop"] == ["ALL"], "DaemonSet: drops ALL capabilities")
check(sorted(sc["capabilities"]["add"]) == ["BPF", "PERFMON", "SYS_ADMIN", "SYS_RESOURCE"],
      f"DaemonSet: adds only BPF, PERFMON, SYS_RESOURCE, SYS_ADMIN ({sc['capabilities']['add']})")
check(any(e["name"] == "NODE_NAME" for e in c["env"]), "DaemonSet: NODE_NAME from the downward API")
role = objs[("ClusterRole", "agentcg-node-agent")]
verbs = {v for r in role["rules"] for v in r["verbs"]}
check(verbs <= {"get", "list", "watch"}, f"ClusterRole: read-only verbs ({sorted(verbs)})")

daemon = sys.argv[1] if len(sys.argv) > 1 else ""
cm = objs[("ConfigMap", "agentcg-config")]["data"]["config.yaml"]
if daemon and os.access(daemon, os.X_OK):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as t:
        t.write(cm)
        t.flush()
        r = subprocess.run([daemon, "--config", t.name, "--check-config"], capture_output=True, text=True)
        check(r.returncode == 0, f"ConfigMap config.yaml passes agentcgroupd --check-config ({r.stderr.strip()})")
else:
    print("note: agentcgroupd not built: the ConfigMap's config.yaml not checked")

print(f"{len(fails)} failure(s)")
sys.exit(1 if fails else 0)
