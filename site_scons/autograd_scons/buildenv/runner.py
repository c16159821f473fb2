"""Run an SCons build from Python: the one runner of every build started
from Python (`load()`, the PEP 517 backend, the editable install's rebuild
on import).

    from autograd_scons.buildenv import runner, up_to_date
    from autograd_scons.base.lock import BuildLock
    with BuildLock(folder, label="load(myops)") as lock:
        if not up_to_date.up_to_date(stamp_path, key):   # stat (digest if moved) of every input
            up_to_date.clear_stamp(stamp_path)
            result = runner.run_scons(sconstruct, folder, {"CXX": "g++"}, jobs=None,
                                      verbose=False, label="load(myops)", lock=lock)
            up_to_date.write_stamp(stamp_path, key, result.inputs_path)
    # result.compiled / result.linked: what ran; BuildError on failure

`run_scons` runs SCons in a subprocess (in its own process group, killed
with the caller: Linux's parent-death signal) with stdout and stderr into
`<folder>/build.log`.  Quiet, it turns the stream into one progress line per
stage (what was generated, objects compiled of how many, the link) and says
nothing when nothing ran; verbose, it echoes every line (the commands).  A
failed build raises BuildError: the first compiler error (file:line), else
the first `scons: ***` line (e.g. a spec error, located), and the log path.
`default_jobs()`: $MAX_JOBS when it is all digits, else the CPUs this process
may run on (affinity, and a cgroup CPU quota where one is set).
"""


from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Callable, Optional

from autograd_scons.buildenv.up_to_date import INPUTS
from autograd_scons.base.errors import Error
LOG = "build.log"
# The folder holding this copy of the package (a checkout's site_scons/, or
# site-packages): first on the build's sys.path, so that it runs this copy.
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# SCons's main, with that folder (the argument after -c) put first on sys.path.
_SCONS_MAIN = "import sys\nsys.path.insert(0, sys.argv.pop(1))\nfrom SCons.Script.Main import main\nsys.exit(main())"
GENERATED_TAG = "autograd_build: "  # lines an SConstruct prints for the progress report
# g++/clang (`file:line:col: error:`) and nvcc (`file(line): error:`)
_ERROR = re.compile(r"^(\S.*?):(\d+)(?::\d+)?: (?:fatal )?error\b.*$|^(\S.*?)\((\d+)\): error\b.*$", re.M)
_SCONS_ERROR = re.compile(r"^scons: \*\*\* (.*)$", re.M)
# An exception SCons caught while reading the SConscripts: `OSError: [Errno 28] ...:`
# followed by its stack
_READ_ERROR = re.compile(r"^(\w+(?:Error|Exception): .*?):?\n  File \"", re.M)
_COMPILE = re.compile(r" -o (\S+) .*-c |-c .* -o (\S+)")
_LINK = re.compile(r" -o (\S+\.(?:so|dylib|pyd))\b")


class BuildError(Error, RuntimeError):
    """A build that failed or cannot go on, for every build started from
    Python (load(), the backend, the editable rebuild): one line (`str()`),
    and for a failed build `first_error` and `log` (the full log's path)."""

    def __init__(self, message: str, first_error: str = "", log: str = ""):
        self.first_error, self.log = first_error, log
        super().__init__(message)

    @classmethod
    def failed(cls, label: str, first_error: str, log: str) -> "BuildError":
        return cls(f"{label}: build failed: {first_error}\n  full log: {log}", first_error, log)


def first_error(text: str) -> str:
    m = _ERROR.search(text)
    if m:
        return m.group(0).strip()
    m = _SCONS_ERROR.search(text)
    if m:
        said = m.group(1).strip()
        # `[obj/x.so] Error 1` alone says nothing: the failing command's own
        # last line does (`ld: ...: No space left on device`): the nearest
        # line above that is neither a command (-j interleaves them) nor SCons's.
        if re.fullmatch(r"\[.*\] Error \d+", said):
            for line in reversed(text[:m.start()].splitlines()[-20:]):
                line = line.strip()
                if line and " -o " not in line and not line.startswith(("scons:", "autograd_")):
                    return f"{line} {said}"
        return said
    m = _READ_ERROR.search(text)
    if m:
        return m.group(1).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "SCons exited with an error and printed nothing"


def _cgroup_cpus(root: str = "/sys/fs/cgroup") -> Optional[int]:
    """CPUs allowed by a cgroup quota (v2 cpu.max, else v1), or None."""
    import math

    def read(rel):
        with open(os.path.join(root, rel)) as f:
            return f.read().split()

    for quota_of in (lambda: read("cpu.max")[:2],
                     lambda: read("cpu/cpu.cfs_quota_us")[:1] + read("cpu/cpu.cfs_period_us")[:1]):
        try:
            quota, period = quota_of()
            if quota in ("max", "-1"):
                return None
            return max(1, math.ceil(int(quota) / int(period)))
        except (OSError, ValueError):
            continue
    return None


def default_jobs() -> int:
    text = os.environ.get("MAX_JOBS", "")
    if text.isdigit() and int(text) > 0:
        return int(text)
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    quota = _cgroup_cpus()
    return max(1, min(cpus, quota) if quota else cpus)


# --- running SCons -----------------------------------------------------------

@dataclass
class BuildResult:
    compiled: list = field(default_factory=list)   # outputs of the compile commands that ran
    linked: list = field(default_factory=list)     # libraries linked
    log: str = ""
    inputs_path: str = ""


def _private_child() -> None:
    """In the child before exec of a build in a cache folder: what it makes
    is the user's alone (0600/0700, whatever the caller's umask)."""
    os.umask(0o077)
    _die_with_parent()


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the caller dies (Linux)."""
    try:
        import ctypes
        import signal
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class _Progress:
    """One line per stage, from the build's output."""

    def __init__(self, label: str, say: Callable[[str], None], verbose: bool):
        self.label, self.say, self.verbose = label, say, verbose
        self.generated: list = []
        self.objects: Optional[int] = None
        self.result = BuildResult()
        self.compile_said = False
        self.jobs = 1

    def line(self, line: str) -> None:
        if self.verbose:
            self.say(line)
        if line.startswith(GENERATED_TAG):
            text = line[len(GENERATED_TAG):]
            m = re.match(r"objects=(\d+)$", text)
            if m:
                self.objects = int(m.group(1))
            else:
                self.generated.append(text)
            return
        if line.startswith(("scons:", "autograd_functions:")):
            return
        link = _LINK.search(line)
        if link and " -c " not in line:
            self._compiled_line()
            self.result.linked.append(link.group(1))
            if not self.verbose:
                self.say(f"{self.label}: linking {link.group(1)}")
            return
        m = _COMPILE.search(line)
        if m:
            if not self.result.compiled and not self.verbose:
                for text in self.generated[:-1]:
                    self.say(f"{self.label}: {text}")
                self.say(f"{self.label}: " + "; ".join(self.generated[-1:] + [f"compiling with {self.jobs} jobs"]))
            self.result.compiled.append(m.group(1) or m.group(2))

    def _compiled_line(self) -> None:
        objects = [o for o in self.result.compiled if o.endswith((".o", ".os", ".obj"))]
        if objects and not self.compile_said and not self.verbose:
            self.compile_said = True
            total = f" of {self.objects}" if self.objects else ""
            self.say(f"{self.label}: compiled {len(objects)}{total} objects")

    def end(self) -> None:
        self._compiled_line()


def _stdout(line: str) -> None:
    print(line, flush=True)


def _log(log, text: str, path: str) -> None:
    try:
        log.write(text)
        log.flush()
    except OSError as e:  # a full disk: say which file
        raise OSError(e.errno, e.strerror, path) from None


def run_scons(sconstruct: str, folder: str, variables: Optional[dict] = None, *, jobs: Optional[int] = None,
              verbose: bool = False, label: str = "build", lock=None, say: Callable[[str], None] = _stdout,
              extra_args=(), log_path: Optional[str] = None,
              private: bool = True, environ: Optional[dict] = None, entry: str = "backend") -> BuildResult:
    """Run SCons on `sconstruct` in `folder` (its top folder) with
    `variables` (NAME=value arguments) and `jobs` (default_jobs()).
    The build imports this copy of the package; SCons reads the
    SConstruct folder's own site_scons/, if any, as `scons` there does.  `lock`: the BuildLock held, told the build's
    process group.  `log_path`: default `<folder>/build.log`.  `private`:
    files made owner-only (a cache folder's build; a project's keeps the
    umask).  `environ`: variables added to the build's environment.
    `entry`: what started it, as the JSON build report says (load,
    patch-torch, backend); the report is written where $AUTOGRAD_REPORT
    names (a relative path: from the caller's folder, not the build's) or
    the build's AUTOGRAD_REPORT= variable does (from the SConstruct's).
    Raises BuildError when SCons fails."""
    folder = os.path.abspath(folder)
    jobs = jobs or default_jobs()
    cmd = [sys.executable, "-c", _SCONS_MAIN, _PACKAGE_PARENT, "-f", os.path.abspath(sconstruct), f"-j{jobs}"]
    cmd += [f"{k}={v}" for k, v in (variables or {}).items()] + list(extra_args)
    env = dict(os.environ, PYTHONUNBUFFERED="1", **(environ or {}))
    from autograd_scons.build_report import document  # (here: a no-op load(), which runs no build, imports little)
    env[document.ENTRY_VARIABLE] = entry
    if env.get(document.PATH_VARIABLE):
        env[document.PATH_VARIABLE] = document.requested(env)
    log_path = log_path or os.path.join(folder, LOG)
    progress = _Progress(label, say, verbose)
    progress.jobs = jobs
    # Not through a link planted in the folder's place of the log.
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as log:
        _log(log, "$ " + " ".join(cmd) + "\n", log_path)
        proc = subprocess.Popen(cmd, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace", start_new_session=True,
                                preexec_fn=_private_child if private else _die_with_parent)
        if lock is not None:
            lock.set_group(proc.pid, folder)
        assert proc.stdout is not None   # (stdout=PIPE)
        try:
            for line in proc.stdout:
                _log(log, line, log_path)
                progress.line(line.rstrip("\n"))
            rc = proc.wait()
        except BaseException:  # Ctrl-C: take the whole build down with us
            import signal
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
            raise
    if rc != 0:
        with open(log_path, errors="replace") as f:
            raise BuildError.failed(label, first_error(f.read()), log_path)
    progress.end()
    progress.result.log = log_path
    progress.result.inputs_path = os.path.join(folder, INPUTS)
    return progress.result
