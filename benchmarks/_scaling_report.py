"""The report of benchmarks/bench_scaling.py (not a benchmark itself): the
measured costs turned into benchmarks/_scaling_model.py's terms, the
measured runs simulated (the model's error against them), and the
predictions for clusters of 8, 32 and 128 hosts of 16 cores.
"""

from __future__ import annotations

import json
import os

import _scaling_model as model

# (remote hosts, cores each): the curve up to one host of 16, then the 8, 32 and 128 hosts
CLUSTERS = [(1, 1), (1, 2), (1, 4), (1, 8), (1, 16), (8, 16), (32, 16), (128, 16)]

def costs_model(c: dict) -> tuple:
    """(model.Costs, the TUs of a UNITY=8 build as measured, torchgen's TU)."""
    def tu(d):
        return model.TU(d["name"], d["whole"], d["pre"], d["remote"])
    units = [d for layout in c["tus"].values() for d in layout if d["units"] > 0]
    lines = {k: model.fit_line([(d["units"], d[k]) for d in units]) for k in ("whole", "pre", "remote")}
    singles = [d for d in c["tus"].get("0", [])]
    edit = model.TU("edit", *(sum(d[k] for d in singles) / len(singles) for k in ("whole", "pre", "remote")))
    bindings = [tu(d) for d in c["tus"]["8"] if d["units"] == 0]
    costs = model.Costs(lines, bindings, edit, c["prefix"], c["prefix_edit"], c["link"])
    # the measured runs compile the cache key's digest too (0.02 s); the predictions leave it out
    built = [tu(d) for d in c["tus"]["8"]] + ([tu(c["digest"])] if "digest" in c else [])
    return costs, built, tu(c["torchgen"])


def this_machine(hosts: int, jobs: int) -> model.Cluster:
    """The measured runs: the client on CPU 0; host a on CPU 1; host b on CPU 0."""
    listed = [model.Host("cpu1", 1), model.Host("cpu0", 1)][:hosts]
    return model.Cluster({"cpu0": 1, "cpu1": 1}, "cpu0", listed, jobs=jobs)


def report(work: str, n_units: int) -> dict:
    with open(os.path.join(work, "costs.json")) as f:
        c = json.load(f)
    runs = {}
    if os.path.exists(os.path.join(work, "runs.json")):
        with open(os.path.join(work, "runs.json")) as f:
            runs = json.load(f)
    pair = None
    if os.path.exists(os.path.join(work, "pair.json")):
        with open(os.path.join(work, "pair.json")) as f:
            pair = json.load(f)["rounds"]
    costs, measured_tus, tg = costs_model(c)
    tgc = c["torchgen"]
    out: dict = {"fit": costs.bucket, "checks": [], "predictions": [], "pair": pair}
    for hosts, jobs, name in ((1, 1, "1 host"), (2, 2, "2 hosts")):
        cluster = this_machine(hosts, jobs)
        for side, t in (("ours", model.build_time(measured_tus, costs.prefix, costs.link, cluster)),
                        ("torchgen", model.monolith(tg, tgc["generate"], tgc["link"], cluster))):
            got = runs.get(name, {}).get(side, {})
            out["checks"].append({"run": name, "side": side, "predicted": t, "measured": got.get("wall"),
                                  "error": model.error(t, got.get("wall")), "load_before": got.get("load_before"),
                                  "load_after": got.get("load_after")})
    choices = [8, 16, 32, 64, 128, 256, n_units]
    for hosts, cores in CLUSTERS:
        cluster = model.remote_cluster(hosts, cores)
        row = {"hosts": hosts, "cores": cores}
        for python in (True, False):
            n, cold = model.best_buckets(costs, n_units, cluster, choices, python)
            key = "ours" if python else "ours_python0"
            row[key] = {"buckets": n, "cold": cold,
                        "header_edit": model.ours_header_edit(costs, n_units, n, cluster, python),
                        "cold_at_8": model.ours_cold(costs, n_units, 8, cluster, python)}
        row["torchgen"] = {"cold": model.monolith(tg, tgc["generate"], tgc["link"], cluster)}
        row["torchgen"]["header_edit"] = row["torchgen"]["cold"]
        out["predictions"].append(row)
    return out


def print_report(r: dict) -> None:
    a, b = r["fit"]["whole"]
    print(f"a bucket of k units: {a:.1f} + {b:.3f} k s of CPU (whole); pre {r['fit']['pre'][0]:.2f} + "
          f"{r['fit']['pre'][1]:.4f} k; remote {r['fit']['remote'][0]:.1f} + {r['fit']['remote'][1]:.3f} k")
    print("\n| run | side | measured wall (s) | model (s) | error | load before / after |\n| --- | --- | --- | --- | --- | --- |")
    for ch in r["checks"]:
        m = f"{ch['measured']:.1f}" if ch["measured"] else "not run"
        e = f"{100 * ch['error']:+.1f}%" if ch["error"] is not None else "-"
        load = f"{ch['load_before'][0]:.2f} / {ch['load_after'][0]:.2f}" if ch["load_before"] else "-"
        print(f"| {ch['run']} | {ch['side']} | {m} | {ch['predicted']:.1f} | {e} | {load} |")
    if r["pair"]:
        print("\nbucket_0's preprocessed text compiled (`pair`): " + "; ".join(
            f"{'alone on CPU 1' if len(p['cpus']) == 1 else 'on CPUs 0 and 1 at once'} {p['wall']:.1f} s wall "
            f"(CPU {', '.join(f'{u:.1f}' for u in p['cpu'])} s)" for p in r["pair"]))
    print("\n| remote hosts x cores (a client of 16 cores preprocesses) | ours: best buckets, cold, one header edit "
          "| ours at the default 8 buckets: cold | ours PYTHON=0: best buckets, cold, header edit "
          "| torchgen: cold = header edit |\n| --- | --- | --- | --- | --- |")
    for p in r["predictions"]:
        o, z, t = p["ours"], p["ours_python0"], p["torchgen"]
        print(f"| {p['hosts']} x {p['cores']} | {o['buckets']}, {o['cold']:.1f} s, {o['header_edit']:.1f} s "
              f"| {o['cold_at_8']:.1f} s | {z['buckets']}, {z['cold']:.1f} s, {z['header_edit']:.1f} s "
              f"| {t['cold']:.1f} s |")
