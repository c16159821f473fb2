"""`python -m autograd_scons new NAME [--cuda | --stable [VERSION]] [--torch SPEC]`:
a new extension project in the folder NAME (pyproject.toml with this package's
build backend and the torch span it builds under, SConstruct, the package,
the specs of one differentiable op, its CPU kernel, tests; `--cuda`: its
CUDA kernel too; `--stable`: on PyTorch's stable ABI, templates/stable/'s
files over templates/project/'s, for torch>=VERSION, 2.10 by default:
docs/stable-abi.md), made from the real files
in templates/ (`extname` in them becomes NAME).  A folder that exists, or
a NAME that is not a Python identifier, is longer than 100 characters, or
would shadow torch's modules, this tool's or the standard library's, is
one line and writes nothing."""

import keyword
import os
import shutil
import sys
import tempfile

TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")
PLACEHOLDER = "extname"
CUDA_MARK = "  # --cuda"  # a template line kept (without the mark) only with --cuda
MAX_NAME = 100
# Names a project may not take (besides the standard library's modules):
# torch's Python packages and C++ namespaces, whose module or ops namespace
# the project's would shadow or join, and this tool's own packages.
_TORCH_CXX = "a C++ namespace of torch's"
TAKEN = {"torch": "torch itself", "aten": _TORCH_CXX, "c10": _TORCH_CXX, "at": _TORCH_CXX, "caffe2": _TORCH_CXX,
         "std": "the C++ standard library's namespace",
         "autograd_scons": "this tool's package", "codegen": "this tool's package"}


def torch_pin():
    """`X.Y.*` of the torch installed now (its version file, no import)."""
    import importlib.util
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("autograd_scons new: torch is not installed here: the project pins the torch it is "
                         f"built against (install torch into {sys.executable}'s environment first)")
    from autograd_scons.buildenv import torch_flags
    facts = torch_flags.read_facts(list(spec.submodule_search_locations)[0])
    if facts is None:  # a CUDA build: its version file still says the version
        import torch
        version = torch.__version__
    else:
        version = facts["version"]
    return ".".join(version.split("+")[0].split(".")[:2]) + ".*"


def torch_requirement(given=None):
    """The span of torch versions the project builds under, written once
    into build-system.requires: `given` (--torch) when readable, else the
    installed minor and the next one (torch_span.default_span)."""
    from autograd_scons.ship import torch_span
    if given:
        try:
            return torch_span.check(given.replace(" ", "").removeprefix("torch"))  # (`torch>=2.13` too)
        except torch_span.BadSpan as e:
            raise SystemExit(f"autograd_scons new: --torch: {e}") from None
    return torch_span.default_span(torch_pin()[:-2])


def render(text, name, cuda):
    lines = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\n")
        if body.endswith(CUDA_MARK):
            if not cuda:
                continue
            line = body[:-len(CUDA_MARK)] + "\n"
        lines.append(line)
    return "".join(lines).replace(PLACEHOLDER, name)


def template_files(cuda, stable=False):
    """[(template file, path in the project)] in a fixed order (a later
    part's file replaces an earlier one's of the same path)."""
    files = {}
    for part in ["project"] + (["cuda"] if cuda else []) + (["stable"] if stable else []):
        root = os.path.join(TEMPLATES, part)
        for folder, subdirs, names in os.walk(root):
            subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
            for n in sorted(names):
                if not n.endswith(".pyc"):
                    path = os.path.join(folder, n)
                    rel = os.path.relpath(path, root).replace(PLACEHOLDER, "{name}")
                    # (a dot file would not be package data: setup.py's globs skip them)
                    rel = ".gitignore" if rel == "gitignore" else rel
                    files[rel] = path
    return [(path, rel) for rel, path in files.items()]


def check_name(name):
    """SystemExit (one line) unless `name` can name the package, the
    distribution and the operators' namespace."""
    if len(name) > MAX_NAME:  # (it also names files: `.NAME-xxxxxxxx`, `<project>/tests/test_NAME_cuda.py`...)
        raise SystemExit(f"autograd_scons new: a name of {len(name)} characters is longer than {MAX_NAME}: "
                         "choose a shorter one")
    if not name.isidentifier() or keyword.iskeyword(name) or not name.isascii():
        raise SystemExit(f"autograd_scons new: {name!r} is not a Python identifier (it names the package and "
                         "the operators' namespace): use letters, digits and _, not starting with a digit")
    if name in TAKEN:
        raise SystemExit(f"autograd_scons new: {name!r} is taken ({TAKEN[name]}): the package or its operators' "
                         "namespace would clash with it: choose another name")
    if name in sys.stdlib_module_names:
        raise SystemExit(f"autograd_scons new: {name!r} is a module of Python's standard library: the package "
                         "would shadow it: choose another name")


def new(name, cuda=False, where=".", torch_spec=None, stable=None):
    """Write the project; returns its folder.  SystemExit (one line) on a
    bad name or an existing folder, before anything is written.  `stable`:
    the stable target's oldest torch ("2.10", True), None for the C++ target."""
    check_name(name)
    from autograd_scons.base.errors import OptionError
    from autograd_scons.codegen.model.stable_target import StableTarget
    try:
        target = StableTarget.parse(stable)
    except OptionError as e:
        raise SystemExit(f"autograd_scons new: --stable: {e}") from None
    if target is not None and cuda:
        raise SystemExit("autograd_scons new: --stable builds CPU kernels on the stable ABI here; "
                         "--cuda needs the C++ target: choose one")
    dest = name if where == "." else os.path.join(where, name)
    if os.path.lexists(dest):
        raise SystemExit(f"autograd_scons new: {dest} already exists: nothing written (choose another name, "
                         "or remove it)")
    span = torch_requirement(torch_spec)
    # Written into a temporary sibling and renamed: never a half-written project.
    tmp = tempfile.mkdtemp(prefix=f".{name}-", dir=where or ".")
    try:
        for template, rel in template_files(cuda, target is not None):
            with open(template, encoding="utf-8") as f:
                text = render(f.read(), name, cuda).replace("@TORCH_SPAN@", span)
            if target is not None:
                text = text.replace("@STABLE@", target.version)
            out = os.path.join(tmp, rel.format(name=name))
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with open(out, "w", encoding="utf-8") as f:
                f.write(text)
        os.rename(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def add_command(sub) -> None:
    """`new`, on `sub` (an argparse subparsers action)."""
    p = sub.add_parser("new", help="write a new extension project NAME/")
    p.add_argument("name")
    p.add_argument("--cuda", action="store_true", help="with a CUDA kernel (built when torch is a CUDA build)")
    p.add_argument("--torch", metavar="SPEC", default=None,
                   help="the torch versions the project builds under (default: the installed minor and the "
                        "next, e.g. '>=2.13,<2.15')")
    p.add_argument("--stable", nargs="?", const="2.10", default=None, metavar="VERSION",
                   help="on PyTorch's stable ABI: one wheel for torch>=VERSION (default 2.10), "
                        "the autograd as generated Python (docs/stable-abi.md)")
    p.set_defaults(run=_cmd_new)


def _cmd_new(args) -> int:
    dest = new(args.name, args.cuda, torch_spec=args.torch, stable=args.stable)
    print(f"{dest}: written; next: cd {dest} && pip install --no-build-isolation . && pytest tests")
    return 0
