"""What a compiler cache behind `LAUNCHER=` says it did: sccache's and
ccache's statistics, asked before a build's first launched compile and
after its last, and their difference.

Both keep one set of counters per cache (ccache: per cache folder;
sccache: per server), so a build sharing them with another build at the
same time sees that build's compiles too: the report then says more hits
or misses than its own compiles, and the per-object attribution
(tool/json_report.py) gives up.  Another launcher (distcc, icecc) has no
statistics: None.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Optional

TIMEOUT_S = 20.0   # sccache starts its server on the first question


def kind_of(command: list) -> Optional[str]:
    """"sccache" or "ccache" when `command` (the launcher's words) runs one."""
    if not command:
        return None
    name = os.path.basename(command[0])
    return name if name in ("sccache", "ccache") else None


def parse_sccache(text: str) -> dict:
    """`sccache --show-stats --stats-format json`: requests, hits, misses (every language)."""
    stats = json.loads(text)["stats"]
    return {"requests": int(stats["compile_requests"]),
            "hits": sum(int(n) for n in stats["cache_hits"]["counts"].values()),
            "misses": sum(int(n) for n in stats["cache_misses"]["counts"].values())}


def parse_ccache(text: str) -> dict:
    """`ccache --print-stats` (ccache 4: `name<TAB>value` lines)."""
    counters = {}
    for line in text.splitlines():
        name, _, value = line.partition("\t")
        if value.strip().isdigit():
            counters[name.strip()] = int(value)
    if "cache_miss" not in counters:
        raise ValueError("no cache_miss counter")
    hits = counters.get("direct_cache_hit", 0) + counters.get("preprocessed_cache_hit", 0)
    return {"requests": hits + counters["cache_miss"], "hits": hits, "misses": counters["cache_miss"]}


_ASK = {"sccache": (["--show-stats", "--stats-format", "json"], parse_sccache),
        "ccache": (["--print-stats"], parse_ccache)}


def query(command: list, environ: dict) -> Optional[dict]:
    """The launcher's counters now, or None (no statistics, or it did not answer)."""
    kind = kind_of(command)
    if kind is None:
        return None
    args, parse = _ASK[kind]
    try:
        done = subprocess.run([command[0], *args], env=environ, capture_output=True, text=True,
                              timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            return None
        return parse(done.stdout)
    except (OSError, subprocess.SubprocessError, ValueError, KeyError, TypeError, AttributeError):
        return None


def difference(before: Optional[dict], after: Optional[dict]) -> tuple:
    """(hits, misses) between two queries, or (None, None)."""
    if before is None or after is None:
        return None, None
    hits, misses = after["hits"] - before["hits"], after["misses"] - before["misses"]
    if hits < 0 or misses < 0:   # zeroed in between: nothing can be said
        return None, None
    return hits, misses
