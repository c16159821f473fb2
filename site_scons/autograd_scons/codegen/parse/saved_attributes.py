"""What a formula must save: the rewrite of `self.sym_sizes()` and friends into
saved attributes, as PyTorch's codegen does it (same names, same types).
"""

from __future__ import annotations

import re
from typing import Callable, NamedTuple, Optional, Sequence, Union

from autograd_scons.base.errors import FormulaError
from ..model.autograd import SavedAttribute, uses_ident
from ..model.cpp import (CType, OptionalCType, VectorCType, boolT, layoutT, longT, scalarTypeT, stringViewT,
                      symIntArrayRefT, symIntT, tensorGeometryT, tensorOptionsT, tensorT, typeAndSizeT)


class _Rewrite(NamedTuple):
    """One way a formula uses a variable that is saved as something smaller."""
    pattern: str                                  # regex, `{}` for the variable's name
    suffix: Union[str, Callable[[re.Match], str]]  # saved name = variable + suffix
    ctype: CType                                  # the saved value's C++ type
    save: Optional[Callable[[str], str]] = None   # save-time expression (None: the matched text)
    use: Optional[Callable[[str], str]] = None    # what the formula reads (None: the saved name)
    strides: bool = False                         # strides_or_error(): for the variable's own formula only


# Order matters: earlier rewrites apply first.  The patterns are as loose as
# PyTorch's (`.` is any character), since the names they produce must agree.
_REWRITES: list[_Rewrite] = [
    _Rewrite(r"{}.sym_sizes\(\)", "_sym_sizes", symIntArrayRefT),
    _Rewrite(r"{}->sym_sizes\(\)", "_sym_sizes_opt", OptionalCType(symIntArrayRefT),
             save=lambda n: f"{n}.has_value() ? std::optional<c10::SymIntArrayRef>({n}->sym_sizes()) : "
                            f"std::nullopt"),
    _Rewrite(r"{}.sym_blocksize\(\)", "_self_sym_blocksize_opt", OptionalCType(symIntArrayRefT),
             save=lambda n: f"at::sparse_csr::getSymIntBlockSize({n})"),
    _Rewrite(r"{}.options\(\)", "_options", tensorOptionsT),
    _Rewrite(r"zeros_like\({}\)", "_info", typeAndSizeT,
             save=lambda n: n, use=lambda n: n + "_info.zeros()"),
    _Rewrite(r"{}.sym_size\((-?\w+)\)", lambda m: "_sym_argsize_" + m.group(1).replace("-", "minus_"),
             symIntT),
    _Rewrite(r"{}.numel\(\)", "_numel", longT),
    _Rewrite(r"{}.sym_numel\(\)", "_sym_numel", symIntT),
    _Rewrite(r"to_args_sizes\({}\)", "_args_sizes", VectorCType(VectorCType(longT))),
    _Rewrite(r"to_args_sizes_symint\({}\)", "_args_sizes_symint", VectorCType(VectorCType(symIntT))),
    _Rewrite(r"to_args_scalartypes\({}\)", "_args_scalartypes", VectorCType(scalarTypeT)),
    _Rewrite(r"TensorGeometry\({}\)", "_geometry", tensorGeometryT),
    _Rewrite(r"{}.scalar_type\(\)", "_scalar_type", scalarTypeT),
    _Rewrite(r"{}.dim\(\)", "_dim", longT),
    _Rewrite(r"{}.sym_strides\(\)", "_sym_strides", symIntArrayRefT, strides=True),
    _Rewrite(r"{}.layout\(\)", "_layout", layoutT),
    _Rewrite(r"{}.is_conj\(\)", "_conjugate", boolT),
]

# For each pattern, the literal text around the name that any match has:
# (before, characters of any value right after the name, after).  Checking
# it first avoids compiling a regex per name for patterns that cannot match.
_LITERALS = {p: (p.split("{}")[0].replace("\\", ""),
                 1 if p.startswith("{}.") else 0,
                 p.split("{}")[1].lstrip(".").split("(-?")[0].replace("\\", ""))
             for p, *_ in _REWRITES}


def _may_match(formula: str, name: str, pattern: str) -> bool:
    before, gap, after = _LITERALS[pattern]
    head = before + name
    i = formula.find(head)
    while i >= 0:
        if formula.startswith(after, i + len(head) + gap):
            return True
        i = formula.find(head, i + 1)
    return False


_compiled: dict[tuple[str, str], re.Pattern] = {}


def _regex(pattern: str, name: str) -> re.Pattern:
    r = _compiled.get((pattern, name))
    if r is None:
        r = _compiled[(pattern, name)] = re.compile(pattern.format(name))
    return r


_SIZE_INT_RE = re.compile(r"(\.|->)size\(-?\d+\)")
_OPT_STRING = OptionalCType(stringViewT)


def saved_attributes(formula: str, variables: Sequence[tuple[str, CType]],
                     var_names: tuple[str, ...]) -> tuple[str, tuple[SavedAttribute, ...]]:
    """Rewrite `formula` to read saved values; return it and what to save.

    `variables` are (name, C++ value type) of the inputs or outputs."""
    if ".sizes()" in formula or "->sizes()" in formula:
        raise FormulaError("use .sym_sizes() instead of .sizes() in derivative formulas")
    if _SIZE_INT_RE.search(formula):
        raise FormulaError("use .sym_size(dim) instead of .size(dim) in derivative formulas")
    if ".strides()" in formula or "->strides()" in formula:
        raise FormulaError("use .sym_strides() instead of .strides() in derivative formulas")
    saved: list[SavedAttribute] = []
    for name, ctype in variables:
        if name not in formula:
            continue  # no pattern can match
        for rw in _REWRITES:
            if not _may_match(formula, name, rw.pattern):
                continue
            formula = _regex(rw.pattern, name).sub(_saver(rw, name, ctype, var_names, saved), formula)
        if ctype == _OPT_STRING:
            # Saved as std::optional<std::string>; the formula wants a view.
            formula = re.sub(rf"\b{name}\b", f"{name}.has_value() ? std::optional<std::string_view>"
                             f"({name}.value()) : std::nullopt", formula)
        if uses_ident(formula, name):
            saved.append(SavedAttribute(name, ctype, name))
    return formula, tuple(saved)


def _member_of(pattern: str) -> Optional[CType]:
    """The type a member-access rewrite (`{}.scalar_type()`, `{}->sym_sizes()`)
    saves from: a Tensor, an optional Tensor; None for a function's (`zeros_like({})`)."""
    if pattern.startswith("{}."):
        return tensorT
    return OptionalCType(tensorT) if pattern.startswith("{}->") else None


def _saver(rw: _Rewrite, name: str, ctype: CType, var_names: tuple[str, ...],
           saved: list[SavedAttribute]) -> Callable[[re.Match], str]:
    """The re.sub callback: records what to save, returns what the formula reads."""
    member_of = _member_of(rw.pattern)

    def repl(m: re.Match) -> str:
        whole_name = m.start() == 0 or not (m.string[m.start() - 1].isalnum() or m.string[m.start() - 1] == "_")
        if member_of is not None and ctype.cpp_type() != member_of.cpp_type() and whole_name:
            # saved as its own value at forward time, the member would not compile in the generated code
            member = m.group(0)[len(name):]
            raise FormulaError(f"'{name}{member}': '{name}' is a '{ctype.cpp_type()}', not a "
                               f"'{member_of.cpp_type()}', so it has no {member.lstrip('.-> ')}")
        sfx = rw.suffix(m) if callable(rw.suffix) else rw.suffix
        if rw.strides:
            if var_names != (name,):
                raise FormulaError(f"{name}.sym_strides() is supported only in the formula for "
                                 f"'{name}' alone")
            e = f'strides_or_error({name}, "{name}")'
        else:
            e = rw.save(name) if rw.save else m.group(0)
        saved.append(SavedAttribute(name + sfx, rw.ctype, e))
        return rw.use(name) if rw.use else name + sfx
    return repl
