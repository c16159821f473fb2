"""What torchgen's own Python bindings give (not a test module).

Runs torchgen's `gen_autograd_functions_python` (the `python_functions_*.cpp`
of a torch build) on torchgen's infos of torch's specs into a folder, and
reads back, for every class it binds, the names of its properties.  For
specs torchgen cannot read (the example's), `torchgen_properties` runs
torchgen's own `process_function` on one of its infos given our saved
values, and reads the property names from its output: the rules the tests
hold our generator to come from torchgen, never typed again here.
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
    from support.torchgen_reference import real_torchgen
    # As a torch build does: its Python bindings are made from the infos
    # load_derivatives returns, without the foreach ones derived later.  Those
    # are the first `loaded` of the session's one torchgen run (the foreach
    # pass only adds keys), which spares a second load of the same specs.
    every, loaded = real_torchgen()
    infos = dict(list(every.items())[:loaded])
    with tempfile.TemporaryDirectory() as out:
        gen_autograd_functions_python(out, infos, os.path.join(os.path.dirname(pa.__file__), "templates"))
        texts = []
        for path in sorted(glob.glob(os.path.join(out, "python_functions_*.cpp"))):
            with open(path) as f:
                texts.append(f.read())
    flat = [i for per_key in infos.values() for i in per_key.values() if i.op]
    return property_tables(texts), flat


def to_torchgen(t):
    """Our C++ type (codegen/model/cpp.py) as torchgen's type object of the same spelling."""
    import torchgen.api.types as tg
    kind = type(t).__name__
    if kind == "BaseCType":
        ns, _, name = t.name.rpartition("::")
        return tg.BaseCType(tg.BaseCppType(ns, name))
    if kind == "ArrayCType":
        return tg.ArrayCType(to_torchgen(t.elem), t.size)
    return getattr(tg, kind)(to_torchgen(t.elem))


def torchgen_properties(inputs, outputs) -> list[str]:
    """The property names torchgen's `process_function` writes for a Function
    saving `inputs` and `outputs` (our SavedAttributes), in its order."""
    import dataclasses

    from torchgen.api.autograd import SavedAttribute
    from torchgen.api.types import NamedCType
    from torchgen.packaged.autograd.gen_autograd_functions import PY_FUNCTION_PROPS_AND_GETTERS, process_function

    def theirs(attrs):
        out = []
        for a in attrs:
            ctype = to_torchgen(a.type)
            assert ctype.cpp_type() == a.type.cpp_type(), (ctype.cpp_type(), a.type.cpp_type())
            out.append(SavedAttribute(nctype=NamedCType(a.name, ctype), expr=a.expr))
        return tuple(out)
    # A foreach op's info as the base: torchgen accepts a saved vector<Tensor>
    # (a Tensor[] output) only from those; nothing else depends on the op.
    base = next(i for i in torchgen_python()[1] if i.func.func.name.name.base.startswith("_foreach"))
    info = dataclasses.replace(base, all_saved_inputs=theirs(inputs), all_saved_outputs=theirs(outputs))
    text = process_function(info, PY_FUNCTION_PROPS_AND_GETTERS)
    return _NAME.findall(_TABLE.search(text).group(2))
