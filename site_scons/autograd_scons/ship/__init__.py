"""Shipping an extension project: `new` and its templates (new.py,
templates/), the wheel's files (wheel_files.py), the editable install's
rebuild on import (editable.py), and the build of a project's SConstruct
that both the PEP 517 backend (autograd_scons.build_meta) and the editable
install run (project.py); several torch versions in one wheel: the
torch span a project builds under (torch_span.py), a wheel's variant
(variant.py), `merge-wheels` (merge.py) and its manylinux tag from
auditwheel (platform_tag.py).

May import: the build environment (runner, lock, torch's flags), and the
generator's errors and lock; torch when run (`new` reads its version).
Not SCons, the tool or load().  The backend and the editable install share
project.py; neither imports the other.  tests/lint/test_import_cycles.py
checks this.
"""
