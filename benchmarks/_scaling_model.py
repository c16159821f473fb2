"""The scaling model of benchmarks/bench_scaling.py (not a benchmark itself):
a discrete-event simulation of a cold build, or of a rebuild, compiled
through distcc on hosts of given cores.

A build is: a serial prefix on the client (SCons reading the SConscripts,
which is where the tool generates), then every TU, then the link on the
client.  Each TU is a distcc job: preprocessed on the client (`pre`
seconds of CPU), then compiled on the first host with a free slot, in the
order DISTCC_HOSTS lists them (`remote` seconds: the compile of the
preprocessed text); with no slot free it waits.  SCons runs at most `jobs`
TUs at a time, in the order given.  A local build compiles each TU whole
(`whole` seconds) on the client.

Cores are processor-sharing servers: n tasks on a resource of c cores each
run at min(1, c / n) of a core.  So a host can share the client's core (the
2-host run on this 2-core machine does), and a 16-core host running 20 jobs
runs each at 0.8.  Network transfers, SCons's own scheduling and the
compiler's memory traffic are left out: the comparison with the measured
runs says what that costs.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Optional

EPS = 1e-9


@dataclass
class TU:
    name: str
    whole: float        # CPU s of `g++ -c x.cpp` (a local build)
    pre: float          # CPU s of `g++ -E x.cpp` (distcc's client side)
    remote: float       # CPU s of the compile of the preprocessed text (the host's side)


@dataclass
class Host:
    resource: str       # a key of Cluster.cores (two hosts may share one)
    slots: int          # distccd --jobs


@dataclass
class Cluster:
    cores: dict                     # resource -> cores
    client: str                     # the resource the client runs on
    hosts: list = field(default_factory=list)   # [Host]: empty for a local build
    jobs: int = 1                   # scons -j


class _Sim:
    def __init__(self, cores: dict):
        self.cores = cores
        self.running: dict = {r: [] for r in cores}   # resource -> [[remaining, then]]
        self.now = 0.0

    def start(self, resource: str, work: float, then: Callable[[], None]) -> None:
        if work <= EPS:
            then()
        else:
            self.running[resource].append([work, then])

    def run(self) -> float:
        while any(self.running.values()):
            rates = {r: min(1.0, self.cores[r] / len(ts)) for r, ts in self.running.items() if ts}
            dt = min(t[0] / rates[r] for r, ts in self.running.items() for t in ts)
            done = []
            for r, ts in self.running.items():
                for t in ts:
                    t[0] -= rates.get(r, 0) * dt
                done += [t for t in ts if t[0] <= EPS]
                ts[:] = [t for t in ts if t[0] > EPS]
            self.now += dt
            for _, then in done:
                then()
        return self.now


def build_time(tus: list, prefix: float, link: float, cluster: Cluster) -> float:
    """Seconds from the build's start to the end of its link."""
    sim = _Sim(cluster.cores)
    todo = deque(tus)
    free = [h.slots for h in cluster.hosts]
    waiting: deque = deque()
    state = {"open": 0}

    def take_slot(then):
        for i, n in enumerate(free):
            if n > 0:
                free[i] -= 1
                then(i)
                return
        waiting.append(then)

    def give_slot(i):
        free[i] += 1
        if waiting:
            take_slot(waiting.popleft())

    def start_next():
        while todo and state["open"] < cluster.jobs:
            tu = todo.popleft()
            state["open"] += 1
            if cluster.hosts:
                sim.start(cluster.client, tu.pre, lambda tu=tu: take_slot(
                    lambda i, tu=tu: sim.start(cluster.hosts[i].resource, tu.remote,
                                               lambda i=i: (give_slot(i), job_done()))))
            else:
                sim.start(cluster.client, tu.whole, job_done)
        if not todo and state["open"] == 0:
            sim.start(cluster.client, link, lambda: None)

    def job_done():
        state["open"] -= 1
        start_next()

    sim.start(cluster.client, prefix, start_next)
    return sim.run()


def fit_line(points: list) -> tuple:
    """(a, b) of the least-squares a + b*x through [(x, y), ...]."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    b = sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0
    return my - b * mx, b


@dataclass
class Costs:
    """What a TU of k units costs (lines through the measured TUs), and the serial parts."""
    bucket: dict          # {"whole": (a, b), "pre": (a, b), "remote": (a, b)}: a + b * units
    bindings: list        # [TU]: the binding TUs as measured (their count is fixed by MAX_PER_SHARD)
    edit: TU              # a TU of one unit (an edit TU)
    prefix: float         # the serial prefix of a cold build (SCons reading, generation)
    prefix_edit: float    # the same for a one-header edit (the tool rewrites three files)
    link: float

    def buckets(self, n_units: int, n_buckets: int) -> list:
        k = n_units / n_buckets
        line = {key: a + b * k for key, (a, b) in self.bucket.items()}
        return [TU(f"bucket_{i}", line["whole"], line["pre"], line["remote"]) for i in range(n_buckets)]


def remote_cluster(hosts: int, cores_per_host: int = 16, client_cores: int = 16) -> Cluster:
    """A client of `client_cores` and `hosts` hosts of `cores_per_host`, all
    their cores busy (-j the sum)."""
    cores = {"client": client_cores, **{f"h{i}": cores_per_host for i in range(hosts)}}
    return Cluster(cores, "client", [Host(f"h{i}", cores_per_host) for i in range(hosts)],
                   jobs=hosts * cores_per_host + client_cores)


def ours_cold(costs: Costs, n_units: int, n_buckets: int, cluster: Cluster, python: bool = True) -> float:
    # binding TUs first: the longest jobs start first, as the tool lists them
    tus = (list(costs.bindings) if python else []) + costs.buckets(n_units, n_buckets)
    return build_time(tus, costs.prefix, costs.link, cluster)


def ours_header_edit(costs: Costs, n_units: int, n_buckets: int, cluster: Cluster, python: bool = True) -> float:
    """One Function's header changed: its bucket, its edit TU, its binding TU."""
    tus = ([max(costs.bindings, key=lambda t: t.whole)] if python else []) + \
        costs.buckets(n_units, n_buckets)[:1] + [costs.edit]
    return build_time(tus, costs.prefix_edit, costs.link, cluster)


def monolith(tu: TU, prefix: float, link: float, cluster: Cluster) -> float:
    """torchgen's Functions.cpp: one TU, whatever the cluster."""
    return build_time([tu], prefix, link, cluster)


def best_buckets(costs: Costs, n_units: int, cluster: Cluster, choices, python: bool = True) -> tuple:
    """(bucket count, cold seconds) of the fastest cold build among `choices`."""
    return min(((n, ours_cold(costs, n_units, n, cluster, python)) for n in choices), key=lambda p: p[1])


def error(predicted: float, measured: Optional[float]) -> Optional[float]:
    return None if not measured else (predicted - measured) / measured
