"""What torchgen's own Python bindings give (not a test module).

Runs torchgen's `gen_autograd_functions_python` (the `python_functions_*.cpp`
of a torch build) on torchgen's infos of torch's specs into a folder, and
reads back, for every class it binds, the names of its properties.  From
those and the infos, `type_rules` derives which saved C++ type gets which
property: the rules the tests hold our generator to, read from torchgen's
output rather than typed again here.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import tempfile

_TABLE = re.compile(r"PyGetSetDef (\w+)_properties\[\] = \{(.*?)\{nullptr\}", re.S)
_NAME = re.compile(r'\(char\*\)"(\w+)"')
# torchgen: addClass<Op>(module, OpClass, "Op", ...); ours: add_class<Op>(module, ...)
_BOUND = re.compile(r"\b(?:addClass|add_class)<(\w+)>\(")


def property_tables(texts) -> dict[str, list[str]]:
    """{bound class: its saved-value property names, in table order} of
    binding sources (torchgen's or ours)."""
    tables, bound = {}, set()
    for text in texts:
        bound |= set(_BOUND.findall(text))
        for op, body in _TABLE.findall(text):
            tables[op] = _NAME.findall(body)
    missing = bound ^ set(tables)
    assert not missing, f"classes bound without a table or the reverse: {sorted(missing)[:5]}"
    return tables


@functools.lru_cache(maxsize=None)
def torchgen_python() -> tuple[dict[str, list[str]], list]:
    """(torchgen's property tables of torch's specs, the infos they come from)."""
    import torchgen.packaged.autograd as pa
    from torchgen.packaged.autograd.gen_autograd_functions import gen_autograd_functions_python
    from torchgen_reference import real_spec_paths, torchgen_load
    # As a torch build does: its Python bindings are made from the infos
    # load_derivatives returns, without the foreach ones derived later.
    infos, _ = torchgen_load(*real_spec_paths(), foreach=False)
    with tempfile.TemporaryDirectory() as out:
        gen_autograd_functions_python(out, infos, os.path.join(os.path.dirname(pa.__file__), "templates"))
        texts = []
        for path in sorted(glob.glob(os.path.join(out, "python_functions_*.cpp"))):
            with open(path) as f:
                texts.append(f.read())
    flat = [i for per_key in infos.values() for i in per_key.values() if i.op]
    return property_tables(texts), flat


def _saved(info):
    for is_output, attrs in ((False, info.all_saved_inputs), (True, info.all_saved_outputs)):
        for sa in attrs:
            yield str(sa.nctype.name), sa.nctype.type.cpp_type(), is_output


@functools.lru_cache(maxsize=None)
def type_rules() -> dict[tuple[str, bool], tuple[bool, bool]]:
    """{(saved C++ type, saved as an output): (has `_saved_`, has `_raw_saved_`)},
    as torchgen's output shows it for torch's specs.  Asserts that it is a
    function of the type (and output-ness) alone."""
    tables, infos = torchgen_python()
    rules: dict = {}
    for info in infos:
        props = set(tables[info.op])
        for name, ctype, is_output in _saved(info):
            got = (f"_saved_{name}" in props, f"_raw_saved_{name}" in props)
            prev = rules.setdefault((ctype, is_output), got)
            assert prev == got, f"{info.op}.{name} ({ctype}): {got}, elsewhere {prev}"
    return rules


def expected_properties(saved) -> set[str]:
    """The properties torchgen's rules give for saved attributes
    `(name, C++ type, is_output)`; asserts that torchgen's output shows each type."""
    rules, out = type_rules(), set()
    for name, ctype, is_output in saved:
        assert (ctype, is_output) in rules, f"torchgen's output has no saved {ctype} (output={is_output})"
        value, raw = rules[(ctype, is_output)]
        out |= ({f"_saved_{name}"} if value else set()) | ({f"_raw_saved_{name}"} if raw else set())
    return out
