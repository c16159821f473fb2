"""No module name twice in the package (issue 58): a name says which file it
is, so `grep`, tracebacks and reviews never need the folder to tell two
`schema.py`s apart.  Package `__init__.py`s and a new project's template
files (ship/templates/) are not modules of the package."""

import collections
import os

from support.spec_facts import REPO

PACKAGE = os.path.join(REPO, "site_scons", "autograd_scons")


def module_names(root: str) -> dict[str, list[str]]:
    """{file name: [its paths below root]} of the package's modules."""
    found = collections.defaultdict(list)
    for folder, subdirs, names in os.walk(root):
        subdirs[:] = [d for d in subdirs if d not in ("__pycache__", "templates")]
        for n in names:
            if n.endswith(".py") and n != "__init__.py":
                found[n].append(os.path.relpath(os.path.join(folder, n), root))
    return found


def test_no_module_name_appears_twice():
    twice = {n: sorted(paths) for n, paths in module_names(PACKAGE).items() if len(paths) > 1}
    assert twice == {}


def test_a_name_twice_is_found(tmp_path):
    for folder in ("model", "build_report"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "schema.py").write_text("")
    assert sorted(module_names(str(tmp_path))["schema.py"]) == ["build_report/schema.py", "model/schema.py"]
