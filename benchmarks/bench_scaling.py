#!/usr/bin/env python3
"""How far a cold build of torch's 711 Functions scales over hosts: measured
on 1 and 2 test hosts, modelled for 8, 32 and 128 hosts of 16 cores, for
ours and for torchgen's monolithic Functions.cpp.

    python benchmarks/bench_scaling.py costs  --work DIR   # CPU of each TU and of the serial parts (any load)
    python benchmarks/bench_scaling.py runs   --work DIR   # cold builds on 1 and 2 hosts (when the load is < 0.5)
    python benchmarks/bench_scaling.py pair   --work DIR   # one compile alone, then two at once (load < 0.5)
    python benchmarks/bench_scaling.py report --work DIR [--json out.json]

`costs` builds nothing: it generates torch's tree in three layouts (UNITY=8,
the default at -j2: 8 buckets and 3 binding TUs; UNITY=64; UNITY=0, one TU
per Function), takes each TU's compile command from `scons
compile_commands`, and measures the CPU (user + sys, from wait4: robust to
the machine's load) of the whole compile, of the preprocessing (`-E`,
distcc's client side) and of the compile of the preprocessed text (the
host's side) for every TU of UNITY=8, three buckets of UNITY=64 and two
TUs of UNITY=0; the serial parts: SCons reading the SConscripts of a cold
build (where the tool generates; `scons ... generate`) and of a one-header
edit, and the link; torchgen's generation, Functions.cpp's three costs and
its link.  Two measurements at a time.  PCH=0 and the default -O2
throughout: distcc sends preprocessed text, which a precompiled header does
not shorten.

`runs` makes two test hosts (tests/support/netns_hosts.py) and runs, each
only while /proc/loadavg's first number is below 0.5 (it waits, then gives
up after --max-wait), the cold build `scons SPECS=torch UNITY=8 PCH=0
LAUNCHER=distcc DISTCC_FALLBACK=0` with the client (SCons, generation,
preprocessing, link) pinned to CPU 0 and: 1 host, distccd --jobs 1 pinned
to CPU 1, -j1; 2 hosts, a second distccd pinned to CPU 0 (this machine has
2 cores: it shares the client's), -j2.  Then torchgen's job on the same
hosts: its generation, Functions.cpp through distcc, the link.  The load
average before and after each run is recorded.

`pair` checks the model's assumption that this machine's two cores are
independent (the 2-host run puts a compile on each) and shows how much one
compile's time drifts here: bucket_0's preprocessed text compiled on CPU 1
alone, then on CPUs 0 and 1 at once, twice over (wall and CPU of each).

`report` fits each TU's cost as a + b x units, simulates the measured runs
with benchmarks/_scaling_model.py and prints the error, then predicts cold
builds and one-header edits on 8, 32 and 128 hosts of 16 cores (and a
client of 16) for several bucket counts, with and without the Python
bindings.  Needs root for `runs` (namespaces), distcc and taskset.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402
import _scaling_report  # noqa: E402

N_UNITS = 711
SCONS = ["SPECS=torch", "PCH=0"]
HEADER_OP = "asinh(Tensor self) -> Tensor"


def cpu(cmd: list, cwd: str) -> float:
    r = _common.run(cmd, cwd=cwd)
    if r.returncode != 0:
        raise SystemExit(f"bench_scaling: {' '.join(cmd[:3])} ... failed:\n{r.stderr[-3000:]}")
    return r.cpu


def scons(root: str, *args: str, check: bool = True) -> _common.Run:
    return _common.scons(root, *args, check=check)


def tu_costs(root: str, entry: dict, scratch: str) -> dict:
    """whole / pre / remote CPU seconds of one compile_commands entry."""
    cmd = shlex.split(entry["command"])
    out = cmd.index("-o")
    base = os.path.join(scratch, os.path.basename(entry["file"]))
    whole = list(cmd)
    whole[out + 1] = base + ".o"
    pre = [c for c in cmd if c != "-c"]
    pre[pre.index("-o") + 1] = base + ".ii"
    pre.insert(1, "-E")
    costs = {"name": os.path.basename(entry["file"]), "whole": cpu(whole, root), "pre": cpu(pre, root)}
    remote = [c for i, c in enumerate(cmd) if not c.startswith(("-I", "-D", "-isystem")) and
              (i == 0 or cmd[i - 1] != "-isystem")]
    remote[remote.index("-o") + 1] = base + ".remote.o"
    remote[-1] = base + ".ii"
    costs["remote"] = cpu(remote, root)
    os.remove(base + ".ii")
    return costs


def commands(root: str, unity: str, build: str) -> list:
    scons(root, *SCONS, f"UNITY={unity}", f"BUILD={build}", "compile_commands")
    with open(os.path.join(root, "compile_commands.json")) as f:
        return json.load(f)


def measure_costs(work: str) -> dict:
    root = os.path.join(work, "ours")
    if not os.path.exists(root):
        _common.clone(root)
    specs = os.path.join(work, "specs")
    os.makedirs(specs, exist_ok=True)
    for path in _common.spec_paths():
        shutil.copy(path, specs)
    scons(root, *SCONS, "UNITY=8", "BUILD=build-facts", "generate", check=False)   # torch's facts, once
    facts = os.path.join(root, "build-facts", ".torch.json")
    res: dict = {"machine": _common.machine(), "tus": {}}

    def prefix(build: str) -> float:
        r = scons(root, *SCONS, "UNITY=8", f"BUILD={build}", f"TORCH_SPECS={specs}", "generate", check=False)
        return r.cpu

    shutil.rmtree(os.path.join(root, "build-prefix"), ignore_errors=True)   # cold, when `costs` runs again too
    os.makedirs(os.path.join(root, "build-prefix"))
    shutil.copy(facts, os.path.join(root, "build-prefix"))
    res["prefix"] = prefix("build-prefix")
    _edit_header(os.path.join(specs, "derivatives.yaml"))
    res["prefix_edit"] = prefix("build-prefix")
    print(f"serial prefix: cold {res['prefix']:.1f} s CPU, one header edited {res['prefix_edit']:.1f} s", flush=True)

    picks = {"8": None, "64": 3, "0": 2}   # layout -> how many of its TUs (None: all)
    jobs = []
    scratch = tempfile.mkdtemp(prefix="bench-scaling-", dir=work)
    for unity, n in picks.items():
        build = f"build-u{unity}"
        os.makedirs(os.path.join(root, build), exist_ok=True)
        shutil.copy(facts, os.path.join(root, build))
        listed = commands(root, unity, build)
        # the cache key's digest (0.02 s of CPU, one per library) is left out of the
        # model; UNITY=8's is compiled for the link
        entries = [e for e in listed if os.path.basename(e["file"]) not in ("kernels.cpp", "cache_key.cpp")]
        if unity == "8":
            digest = next(e for e in listed if os.path.basename(e["file"]) == "cache_key.cpp")
        buckets = [e for e in entries if "/unity/" in e["file"] or "/functions/" in e["file"]]
        chosen = entries if n is None else buckets[:n]
        jobs += [(unity, e) for e in chosen]
    for unity in picks:
        os.makedirs(os.path.join(scratch, unity))
    with ThreadPoolExecutor(2) as pool:
        for (unity, e), c in zip(jobs, pool.map(lambda j: tu_costs(root, j[1], os.path.join(scratch, j[0])), jobs)):
            c["units"] = _units(os.path.join(root, e["file"]), unity)
            res["tus"].setdefault(unity, []).append(c)
            print(f"  UNITY={unity} {c['name']}: {c['units']} units, whole {c['whole']:.1f} s, pre {c['pre']:.2f} s, "
                  f"remote {c['remote']:.1f} s", flush=True)
    res["digest"] = tu_costs(root, digest, os.path.join(scratch, "8"))
    res["link"] = _link(root, os.path.join(scratch, "8"), [c["name"] for c in res["tus"]["8"]] + ["cache_key.cpp"])
    res["torchgen"] = _torchgen(work, root, res["tus"]["8"][0], scratch)
    shutil.rmtree(scratch, ignore_errors=True)
    return res


def _units(path: str, unity: str) -> int:
    """Units in a generated TU: a bucket's (its banner says), 1 (one TU per unit), 0 (bindings)."""
    if "/python/" in path:
        return 0
    if unity == "0":
        return 1
    with open(path) as f:
        m = re.search(r"Unity bucket \d+ of \d+: (\d+) units", f.read(400))
    return int(m.group(1)) if m else 0


def _edit_header(derivatives: str) -> None:
    """`self: F` becomes `self: (F) + 0 * result` for HEADER_OP: its Function's header changes."""
    with open(derivatives) as f:
        text = f.read()
    at = text.index(f"- name: {HEADER_OP}")
    line_at = text.index("\n  self: ", at) + 1
    end = text.index("\n", line_at)
    formula = text[line_at + len("  self: "):end]
    with open(derivatives, "w") as f:
        f.write(text[:line_at] + f"  self: ({formula}) + 0 * result" + text[end:])


def _link(root: str, scratch: str, names: list) -> float:
    """CPU of the link of the UNITY=8 objects (the command SCons would run)."""
    dry = scons(root, *SCONS, "UNITY=8", "BUILD=build-u8", "-n").stdout
    line = next(ln for ln in dry.splitlines() if " -shared " in ln and " -c " not in ln)
    cmd = shlex.split(line)
    objs = {os.path.basename(o)[: -len(".os")]: o for o in cmd if o.endswith(".os")}
    for name in names:
        stem = name[: -len(".cpp")]
        if stem in objs:
            cmd[cmd.index(objs[stem])] = os.path.join(scratch, name + ".o")
    cmd[cmd.index("-o") + 1] = os.path.join(scratch, "lib.so")
    return cpu(cmd, root)


def _torchgen(work: str, root: str, sample: dict, scratch: str) -> dict:
    """torchgen's generation, its Functions.cpp's costs (our TUs' compiler and flags), its link."""
    out = os.path.join(work, "torchgen", "torch", "csrc", "autograd", "generated")
    os.makedirs(out, exist_ok=True)
    gen = _common.run(_common.torchgen_cmd(*_common.spec_paths(), out))
    entry = next(e for e in json.load(open(os.path.join(root, "compile_commands.json")))
                 if os.path.basename(e["file"]) not in ("kernels.cpp", "cache_key.cpp") and "/python/" not in e["file"])
    cmd = shlex.split(entry["command"])
    cmd = [c for c in cmd if not c.startswith("-Ibuild")]
    cmd.insert(1, "-I" + os.path.join(work, "torchgen"))
    cmd[-1] = os.path.join(out, "Functions.cpp")
    res = tu_costs(root, {"command": shlex.join(cmd), "file": cmd[-1]}, scratch)
    link = [cmd[0], "-shared", os.path.join(scratch, "Functions.cpp.o"), "-o", os.path.join(scratch, "tg.so"),
            *_link_flags(root)]   # ours' libraries and linker
    res.update(generate=gen.cpu, link=cpu(link, root))
    print(f"torchgen: generate {gen.cpu:.1f} s CPU, Functions.cpp whole {res['whole']:.1f} s, pre {res['pre']:.2f} s, "
          f"remote {res['remote']:.1f} s, link {res['link']:.1f} s", flush=True)
    return res


def _link_flags(root: str) -> list:
    dry = scons(root, *SCONS, "UNITY=8", "BUILD=build-u8", "-n").stdout
    line = shlex.split(next(ln for ln in dry.splitlines() if " -shared " in ln and " -c " not in ln))
    return [c for c in line[1:] if c.startswith(("-L", "-l", "-Wl,", "-fuse-ld"))]


# --- the runs on test hosts ---------------------------------------------------

def wait_idle(limit_s: float) -> list:
    """Until the 1-minute load average is below 0.5; its three figures then."""
    deadline = time.monotonic() + limit_s
    while os.getloadavg()[0] >= 0.5:
        if time.monotonic() > deadline:
            raise SystemExit(f"bench_scaling: the load average stayed at or above 0.5 for {limit_s:.0f} s "
                             f"({os.getloadavg()}): no wall run; try again later")
        time.sleep(20)
    return list(os.getloadavg())


def measure_runs(work: str, max_wait: float, smoke: bool = False) -> dict:
    """The runs; `smoke`: the example at -O0 instead, ours only, at any load (a check of the plumbing)."""
    sys.path.insert(0, os.path.join(_common.REPO, "tests"))
    from support import host_servers, netns_hosts
    why = netns_hosts.missing() or (None if shutil.which("taskset") else "taskset not installed (util-linux)")
    if why:
        raise SystemExit(f"bench_scaling: {why}")
    root = os.path.join(work, "ours")
    facts = os.path.join(root, "build-facts", ".torch.json")
    if not os.path.exists(facts):
        raise SystemExit("bench_scaling: run `costs` first (it clones and asks torch's facts)")
    runs: dict = {"machine": _common.machine()}
    with netns_hosts.network(["a", "b"], hidden=[work, _common.REPO]) as net:
        hosts = {"a": host_servers.Distccd(net.hosts["a"], jobs=1, cpus="1"),
                 "b": host_servers.Distccd(net.hosts["b"], jobs=1, cpus="0")}
        state = os.path.join(work, "distcc-state")
        os.makedirs(state, exist_ok=True)
        # -j as many as the hosts' slots: no job waits for one (distcc polls its slot locks once a second)
        for name, entries, jobs in (("1 host", [hosts["a"].entry], 1),
                                    ("2 hosts", [hosts["a"].entry, hosts["b"].entry], 2)):
            env = {k: v for k, v in os.environ.items() if not k.startswith(("AUTOGRAD_", "DISTCC_", "SCONSFLAGS"))}
            env.update(DISTCC_HOSTS=" ".join(entries), DISTCC_FALLBACK="0", DISTCC_DIR=state)
            for side in ("ours",) if smoke else ("ours", "torchgen"):
                build = os.path.join(root, f"build-run-{len(entries)}-{side}")
                shutil.rmtree(build, ignore_errors=True)
                os.makedirs(build)
                shutil.copy(facts, build)
                before = list(os.getloadavg()) if smoke else wait_idle(max_wait)
                if side == "ours":
                    layout = ["SPECS=example", "PCH=0", "OPT=-O0", "UNITY=2"] if smoke else [*SCONS, "UNITY=8"]
                    cmd = ["taskset", "-c", "0", *_common.scons_cmd([*layout, f"-j{jobs}", "LAUNCHER=distcc",
                                                                     f"BUILD={build}"])]
                else:
                    cmd = ["taskset", "-c", "0", sys.executable, os.path.abspath(__file__), "torchgen-job", build]
                t0 = time.perf_counter()
                proc = net.run(cmd, cwd=root, env=env, capture_output=True, text=True)
                wall = time.perf_counter() - t0
                if proc.returncode != 0:
                    raise SystemExit(f"bench_scaling: {name} {side} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
                logged = {r: d.compiles() for r, d in hosts.items()}   # (status, ms, source): cumulative
                jobs_seen = {r: len(jobs) for r, jobs in logged.items()}
                runs.setdefault(name, {})[side] = {"wall": wall, "load_before": before, "load_after": list(os.getloadavg()),
                                                   "remote_jobs": jobs_seen, "job_ms": logged}
                print(f"{name}, {side}: {wall:.1f} s wall (load {before[0]:.2f} before, {os.getloadavg()[0]:.2f} after; "
                      f"jobs so far per host {jobs_seen})", flush=True)
        for d in hosts.values():
            d.cleanup()
    return runs


def measure_pair(work: str, max_wait: float) -> dict:
    """UNITY=8's bucket_0 compiled from its preprocessed text on CPU 1 alone, then
    on CPUs 0 and 1 at once, twice: [{"cpus", "wall", "cpu": [each]}]."""
    root = os.path.join(work, "ours")
    if not os.path.isdir(os.path.join(root, "build-u8")):
        raise SystemExit("bench_scaling: run `costs` first (it generates the UNITY=8 tree)")
    entry = next(e for e in commands(root, "8", "build-u8") if e["file"].endswith("/bucket_0.cpp"))
    scratch = tempfile.mkdtemp(prefix="bench-pair-", dir=work)
    cmd = shlex.split(entry["command"])
    text = os.path.join(scratch, "bucket_0.ii")
    pre = [c for c in cmd if c != "-c"]
    pre[pre.index("-o") + 1] = text
    pre.insert(1, "-E")
    cpu(pre, root)
    remote = [c for i, c in enumerate(cmd) if not c.startswith(("-I", "-D", "-isystem")) and
              (i == 0 or cmd[i - 1] != "-isystem")]
    remote[-1] = text
    rounds = []
    for cpus in (["1"], ["0", "1"], ["1"], ["0", "1"]):
        before = wait_idle(max_wait)
        t0 = time.perf_counter()
        procs = []
        for c in cpus:
            job = list(remote)
            job[job.index("-o") + 1] = os.path.join(scratch, f"cpu{c}.o")
            procs.append(subprocess.Popen(["taskset", "-c", c, *job], cwd=root))
        used = []
        for proc in procs:
            _, status, usage = os.wait4(proc.pid, 0)
            if os.waitstatus_to_exitcode(status) != 0:
                raise SystemExit("bench_scaling: the compile of bucket_0's preprocessed text failed")
            used.append(usage.ru_utime + usage.ru_stime)
        rounds.append({"cpus": cpus, "wall": time.perf_counter() - t0, "cpu": used, "load_before": before})
        print(f"CPU {'+'.join(cpus)}: {rounds[-1]['wall']:.1f} s wall, CPU of each "
              f"{', '.join(f'{u:.1f}' for u in used)} s (load {before[0]:.2f} before)", flush=True)
    shutil.rmtree(scratch, ignore_errors=True)
    return {"machine": _common.machine(), "rounds": rounds}


def torchgen_job(build: str) -> int:
    """torchgen's whole job through distcc (run by `runs` in the build's namespace): its
    generation, Functions.cpp compiled with our TUs' flags, the link."""
    out = os.path.join(build, "torch", "csrc", "autograd", "generated")
    os.makedirs(out)
    if subprocess.call(_common.torchgen_cmd(*_common.spec_paths(), out)) != 0:
        return 1
    root = os.path.dirname(build)
    with open(os.path.join(root, "compile_commands.json")) as f:
        entry = next(e for e in json.load(f) if "/python/" not in e["file"])   # (every TU has the same flags)
    cmd = [c for c in shlex.split(entry["command"]) if not c.startswith("-Ibuild")]
    cmd.insert(1, "-I" + build)
    obj = os.path.join(build, "Functions.o")
    cmd[cmd.index("-o") + 1], cmd[-1] = obj, os.path.join(out, "Functions.cpp")
    if subprocess.call(["distcc", *cmd]) != 0:
        return 1
    return subprocess.call([cmd[0], "-shared", obj, "-o", os.path.join(build, "tg.so"), *_link_flags(root)])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("step", choices=("costs", "runs", "pair", "report", "torchgen-job"))
    ap.add_argument("build", nargs="?", help=argparse.SUPPRESS)
    ap.add_argument("--work", help="the folder the steps share (kept)")
    ap.add_argument("--max-wait", type=float, default=3600, help="runs, pair: seconds to wait for a load below 0.5")
    ap.add_argument("--json", help="report: also write it here as JSON")
    ap.add_argument("--smoke", action="store_true", help="runs: the example, at any load (checks the plumbing)")
    a = ap.parse_args(argv)
    if a.step == "torchgen-job":
        return torchgen_job(a.build)
    if not a.work:
        ap.error("--work DIR is needed")
    os.makedirs(a.work, exist_ok=True)
    if a.step == "costs":
        res = measure_costs(os.path.abspath(a.work))
        with open(os.path.join(a.work, "costs.json"), "w") as f:
            json.dump(res, f, indent=1)
    elif a.step == "runs":
        res = measure_runs(os.path.abspath(a.work), a.max_wait, a.smoke)
        with open(os.path.join(a.work, "runs-smoke.json" if a.smoke else "runs.json"), "w") as f:
            json.dump(res, f, indent=1)
    elif a.step == "pair":
        if not shutil.which("taskset"):
            raise SystemExit("bench_scaling: taskset not installed (util-linux)")
        res = measure_pair(os.path.abspath(a.work), a.max_wait)
        with open(os.path.join(a.work, "pair.json"), "w") as f:
            json.dump(res, f, indent=1)
    else:
        res = _scaling_report.report(a.work, N_UNITS)
        _scaling_report.print_report(res)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
