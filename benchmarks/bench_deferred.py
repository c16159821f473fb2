"""What GCC instantiates again in every TU that takes its precompiled
prelude ("phase lang. deferred"), and what explicit instantiation
declarations (`extern template`) would take off it (issue 37, point 3;
docs/benchmarks-cold.md).

    python benchmarks/bench_deferred.py                  # medians of 3
    python benchmarks/bench_deferred.py --repeat 5 --top 40

It precompiles the shared prelude (tool/pch_compilers.py) with
bench_prelude.py's flags, then compiles an empty TU against it: with
`-ftime-report` for the phase's share and CPU (user + sys), and with
`-fdump-tree-original`, which writes every function body the TU's front
end completes: against a precompiled header, those are the deferred
instantiations alone.  They are listed by class template (or namespace,
for a function template), with their share of the dump's bytes.

The same TU is then compiled after each set of `extern template`
declarations (`-include`, after the prelude, as the extension's
prelude_impl.h would come): the class templates a declaration can name
(`std::vector` of torch's types, `c10::intrusive_ptr`), and, as a ceiling
never to ship, every `std::_Hashtable` specialisation the dump names,
spelled with libstdc++'s internal parameters.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

from bench_prelude import flags, timed

# Specialisations of the list that an extension could declare soundly: public
# templates with torch's public types.
NAMEABLE = """#include <ATen/core/ivalue.h>
#include <vector>
extern template class std::vector<c10::IValue>;
extern template class std::vector<at::Tensor>;
extern template class std::vector<c10::SymInt>;
extern template class std::vector<int64_t>;
extern template class std::vector<c10::Device>;
extern template class c10::intrusive_ptr<c10::TensorImpl>;
extern template class c10::SmallVectorImpl<int64_t>;
"""
_HASHTABLE = ("_Key", "_Value", "_Alloc", "_ExtractKey", "_Equal", "_Hash", "_RangeHash", "_Unused",
              "_RehashPolicy", "_Traits")


def bodies(dump: str) -> list[tuple[str, str, int]]:
    """(signature, its `[with ...]` bindings, bytes) of each function in a dump."""
    out = []
    for part in re.split(r"^;; Function ", dump, flags=re.M)[1:]:
        head = part.partition("\n")[0].removesuffix(" (null)")
        sig, _, bindings = head.partition(" [with ")
        out.append((sig, bindings.removesuffix("]"), len(part)))
    return out


def _top_level(text: str, sep: str) -> list[str]:
    """`text` split at `sep` outside <>, () and {}."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == sep and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += (ch in "<({") - (ch in ">)}")
        cur += ch
    return parts + [cur]


def owner(sig: str) -> str:
    """The class template (or namespace) a function belongs to, its
    template arguments dropped: `std::vector` for its members."""
    name = _top_level(_top_level(sig, "(")[0], " ")[-1]
    if "::operator" in name:  # its `<`, `<<` or `()` are not brackets
        name = name[:name.index("::operator")] + "::operator"
    plain, depth = "", 0
    for ch in name:
        depth += (ch == "<") - (ch == ">")
        plain += ch if depth == 0 and ch != ">" else ""
    return plain.rpartition("::")[0] or plain


def hashtables(found) -> str:
    """extern template declarations of every std::_Hashtable in the dump."""
    seen = []
    for sig, bindings, _ in found:
        if "std::_Hashtable<_Key" not in sig:
            continue
        pairs = (p.strip().partition(" = ") for p in _top_level(bindings, ";"))
        b = {k.split()[-1]: v for k, _, v in pairs if v}
        if all(k in b for k in _HASHTABLE):
            t = "std::_Hashtable<" + ", ".join(b[k] for k in _HASHTABLE) + ">"
            seen += [t] if t not in seen else []
    return "#include <unordered_map>\n" + "".join(f"extern template class {t};\n" for t in seen)


def compile_empty(cxx, work, pch_flags, header, repeat):
    """(the function bodies it instantiates, their dump bytes, median CPU,
    the deferred phase's % of it) of the empty TU, taking `header` after
    the prelude when given."""
    extra = ["-include", header] if header else []
    cmd = [cxx] + flags() + pch_flags + extra + ["-c", "empty.cpp", "-o", "empty.o"]
    cpu = statistics.median(timed(cmd, work)[1] for _ in range(repeat))
    report = subprocess.run(cmd + ["-ftime-report"], cwd=work, capture_output=True, text=True, check=True).stderr
    share = re.search(r"phase lang\. deferred\s*:\s*[\d.]+\s*\(\s*(\d+)%\)", report)
    dump_dir = os.path.join(work, "dump")
    shutil.rmtree(dump_dir, ignore_errors=True)
    os.mkdir(dump_dir)
    subprocess.run(cmd + ["-fdump-tree-original", "-dumpdir", dump_dir + "/"], cwd=work, check=True)
    dump = "".join(open(os.path.join(dump_dir, f)).read() for f in os.listdir(dump_dir) if f.endswith(".original"))
    found = bodies(dump)
    return found, sum(n for *_, n in found), cpu, share[1] if share else "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cxx", default="g++")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--top", type=int, default=25, help="class templates listed (default 25)")
    args = ap.parse_args()
    from autograd_scons.tool import pch_compilers as prelude
    print(f"load average before: {os.getloadavg()}", flush=True)
    work = tempfile.mkdtemp(prefix="bench_deferred-")
    try:
        with open(os.path.join(work, "torch_prelude.h"), "w") as f:
            f.write(prelude.shared_text("// bench_deferred"))
        open(os.path.join(work, "empty.cpp"), "w").close()
        subprocess.run([args.cxx] + flags() + ["-x", "c++-header", "-c", "torch_prelude.h", "-o",
                                               "torch_prelude.h.gch"], cwd=work, check=True)
        pch = prelude.use_flags(prelude.GCC, "torch_prelude.h")
        found, size, cpu, share = compile_empty(args.cxx, work, pch, None, args.repeat)
        by_owner, count = collections.Counter(), collections.Counter()
        for sig, _, n in found:
            by_owner[owner(sig)] += n
            count[owner(sig)] += 1
        print(f"\nempty TU: {len(found)} functions instantiated ({size / 1e6:.1f} MB of dump), "
              f"{cpu:.2f} s CPU, {share}% in phase lang. deferred\n")
        print("| class template or namespace | functions | share of the dump |\n| --- | --- | --- |")
        for name, n in by_owner.most_common(args.top):
            print(f"| `{name or '(global)'}` | {count[name]} | {n / size:.1%} |")
        rows = ["", "| taken after the prelude | functions | dump MB | CPU (s) |", "| --- | --- | --- | --- |",
                f"| nothing | {len(found)} | {size / 1e6:.2f} | {cpu:.2f} |"]
        for label, text in (("nameable extern templates", NAMEABLE),
                            ("every std::_Hashtable, extern (ceiling, unsound)", hashtables(found))):
            path = os.path.join(work, "extern.h")
            with open(path, "w") as f:
                f.write(text)
            f2, s2, c2, _ = compile_empty(args.cxx, work, pch, path, args.repeat)
            rows.append(f"| {label} | {len(f2)} | {s2 / 1e6:.2f} | {c2:.2f} |")
        print("\n".join(rows))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
