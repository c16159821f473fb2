"""`python -m autograd_scons report REPORT.json`: what a build report says,
in a few lines, or with `--min-hit-rate R` / `--max-compiles N` a gate for
CI: one line, and exit 1 when the build did worse than asked (or failed).
An unreadable report, or none, is one line and exit 2.  `--schema` prints
the report's JSON Schema.  docs/ci.md shows it in a CI job.
"""

from __future__ import annotations

import json
import os
import sys

from .document import ReportError, read
from .json_schema import SCHEMA


def _rate(value) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _names(objects: list, fate: str, limit: int = 3) -> str:
    names = [os.path.basename(o["path"]) for o in objects if o["fate"] == fate]
    return ", ".join(names[:limit]) + (f" (+{len(names) - limit} more)" if len(names) > limit else "")


def verdict(doc: dict, min_hit_rate=None, max_compiles=None) -> tuple:
    """(passed, one line) for a report against the limits given."""
    s = doc["summary"]
    needed = s["compiled"] + s["retrieved"] + s["launcher_hit"]
    said = (f"hit rate {_rate(s['hit_rate'])} ({s['retrieved'] + s['launcher_hit']} of {needed} objects from a "
            f"cache), {s['compiled']} compiled, {s['up_to_date']} up to date")
    wrong = []
    if doc["status"] == "failed":
        wrong.append(f"the build failed: {doc['error'] or 'no error recorded'}")
    if min_hit_rate is not None and s["hit_rate"] is not None and s["hit_rate"] < min_hit_rate:
        wrong.append(f"hit rate {_rate(s['hit_rate'])} < {min_hit_rate:g} (compiled: {_names(doc['objects'], 'compiled')})")
    if max_compiles is not None and s["compiled"] > max_compiles:
        wrong.append(f"{s['compiled']} compiled > {max_compiles} allowed")
    if wrong:
        return False, "FAILED: " + "; ".join(wrong)
    return True, "ok: " + said


def describe(doc: dict) -> list:
    """The report in a few lines: per folder, in all, and the times."""
    lines = [f"{doc['entry']} build, {doc['status']}" + (f": {doc['error']}" if doc["error"] else "")
             + (" (dry run)" if doc["dry_run"] else "")]
    for f in doc["folders"]:
        states: dict = {}
        for u in f["units"]:
            states[u["state"]] = states.get(u["state"], 0) + 1
        reasons: dict = {}
        for u in f["units"]:
            if u["reason"] and u["state"] != "up_to_date":
                reasons[u["reason"]] = reasons.get(u["reason"], 0) + 1
        why = ", ".join(f"{r} {n}" for r, n in sorted(reasons.items(), key=lambda kv: -kv[1]))
        lines.append(f"  {f['path']}: " + (", ".join(f"{n} {state.replace('_', ' ')}" for state, n in states.items())
                                            or "no units")
                     + (f" ({why})" if why else "") + f"; {len(f['tus'])} TUs; generated in {f['generate_s']:.2f} s"
                     + (f"; {f['note']}" if f["note"] else ""))
    s, t = doc["summary"], doc["times"]
    fates = ", ".join(f"{s[k]} {k.replace('_', ' ')}" for k in
                      ("compiled", "retrieved", "launcher_hit", "up_to_date", "failed", "not_built") if s[k])
    lines.append(f"  objects: {s['objects']}" + (f" ({fates})" if fates else "") + f"; hit rate {_rate(s['hit_rate'])}")
    if doc["launcher"]:
        la = doc["launcher"]
        lines.append(f"  launcher {' '.join(la['command'])}: " + (
            f"{la['hits']} hits, {la['misses']} misses" if la["hits"] is not None else "no statistics"))
    lines.append(f"  times: {t['total_s']:.2f} s in all; generate {t['generate_s']:.2f} s, compile "
                 f"{t['compile_s']:.2f} s, link {t['link_s']:.2f} s")
    return lines


def add_command(sub) -> None:
    p = sub.add_parser("report", help="read a build's JSON report (AUTOGRAD_REPORT=); with --min-hit-rate or "
                                      "--max-compiles, a CI gate: one line, exit 1 when the build did worse")
    p.add_argument("report", nargs="?", metavar="REPORT.json")
    p.add_argument("--min-hit-rate", type=float, metavar="R",
                   help="fail unless at least this share (0..1) of the objects built came from a cache "
                        "(CacheDir, or the launcher's); a build that built nothing passes")
    p.add_argument("--max-compiles", type=int, metavar="N", help="fail when more objects than this were compiled")
    p.add_argument("--schema", action="store_true", help="print the report's JSON Schema and exit")
    p.set_defaults(run=_cmd_report)


def _cmd_report(args) -> int:
    if args.schema:
        print(json.dumps(SCHEMA, indent=1, sort_keys=True))
        return 0
    if args.report is None:
        print("error: report: give REPORT.json (or --schema)", file=sys.stderr)
        return 2
    if args.min_hit_rate is not None and not 0 <= args.min_hit_rate <= 1:
        print(f"error: --min-hit-rate {args.min_hit_rate:g}: a share, from 0 to 1", file=sys.stderr)
        return 2
    try:
        doc = read(args.report)
    except ReportError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.min_hit_rate is None and args.max_compiles is None:
        print(f"{args.report}: " + "\n".join(describe(doc)))
        return 1 if doc["status"] == "failed" else 0
    passed, line = verdict(doc, args.min_hit_rate, args.max_compiles)
    print(f"{args.report}: {line}", file=sys.stdout if passed else sys.stderr)
    return 0 if passed else 1
