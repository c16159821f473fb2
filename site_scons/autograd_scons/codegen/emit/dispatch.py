"""`dispatch:` of an extension's native function, as ATen reads it.

    - func: myops::row_sum(Tensor self) -> Tensor
      dispatch:
        CPU: row_sum_cpu
        Meta: row_sum_meta

Each key maps to the name of a kernel the extension writes by hand in the
namespace `<ns>::native` (like ATen's `at::native`); several keys may share
one line (`CPU, CUDA: kernel`).  For such a function the op's generated TU
(emit/kernels.py) also writes `ops/<stem>.h`, declaring every named kernel
with the dispatcher's C++ signature (what ATen's NativeFunctions.h is for
ATen), and registers each kernel under its key (a `torch::Library` IMPL), so
the hand-written code only defines the kernels.  A CompositeImplicitAutograd
kernel is differentiated through what it calls: its op gets no Autograd
kernel.  A function without `dispatch:` is left as before: the hand-written
code registers its kernels itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from ..errors import SpecError
from ..parse.native_functions import NativeFunction
from ..templates import load

KEYS = ("CPU", "CUDA", "Meta", "CompositeExplicitAutograd", "CompositeImplicitAutograd")
CIA = "CompositeImplicitAutograd"
_IDENT = re.compile(r"[A-Za-z_]\w*")
CPP_KEYWORDS = frozenset("""alignas alignof and and_eq asm auto bitand bitor bool break case catch char
char8_t char16_t char32_t class compl concept const consteval constexpr constinit const_cast continue
co_await co_return co_yield decltype default delete do double dynamic_cast else enum explicit export
extern false float for friend goto if inline int long mutable namespace new noexcept not not_eq nullptr
operator or or_eq private protected public register reinterpret_cast requires return short signed sizeof
static static_assert static_cast struct switch template this thread_local throw true try typedef typeid
typename union unsigned using virtual void volatile wchar_t while xor xor_eq""".split())


@dataclass(frozen=True)
class Dispatch:
    kernels: tuple[tuple[str, str], ...]   # (dispatch key, kernel name), in yaml order

    @property
    def implicit(self) -> bool:
        return any(k == CIA for k, _ in self.kernels)

    def names(self) -> list[str]:
        return list(dict.fromkeys(n for _, n in self.kernels))


def dispatch_of(f: NativeFunction) -> Optional[Dispatch]:
    """The checked `dispatch:` of an extension function, None without one."""
    raw = f.raw.get("dispatch") if f.raw else None
    if raw is None:
        return None
    label = f"{f.namespace}::{f.func}"
    if not isinstance(raw, dict) or not raw:
        raise SpecError("'dispatch' must be a mapping of dispatch keys to kernel names, e.g. "
                        "'dispatch: {CPU: my_kernel}'", f.file, key_line(f, "dispatch"), label)
    kernels: list[tuple[str, str]] = []
    for ks, name in raw.items():
        line = key_line(f, str(ks), within="dispatch")
        for k in (x.strip() for x in str(ks).split(",")):
            if k not in KEYS:
                raise SpecError(f"unknown dispatch key '{k}' for an extension op (supported: "
                                f"{', '.join(KEYS)})", f.file, line, label)
            if any(k == prev for prev, _ in kernels):
                raise SpecError(f"dispatch key '{k}' is given twice", f.file, line, label)
            if not isinstance(name, str) or not cpp_identifier(name):
                raise SpecError(f"kernel name {name!r} for dispatch key '{k}' is not a C++ identifier "
                                f"(the name of a function in namespace {f.namespace}::native)",
                                f.file, line, label)
            kernels.append((k, name))
    d = Dispatch(tuple(kernels))
    if d.implicit and len(kernels) > 1:
        raise SpecError("CompositeImplicitAutograd cannot be combined with other dispatch keys "
                        "(its kernel runs for every backend)", f.file, key_line(f, "dispatch"), label)
    return d


def cpp_identifier(name: str) -> bool:
    """Whether `name` can name a C++ function (an identifier, not a keyword)."""
    return _IDENT.fullmatch(name) is not None and name not in CPP_KEYWORDS


def key_line(f: NativeFunction, key: str, within: Optional[str] = None) -> int:
    """The line of `key:` in f's entry (inside the mapping `within:` if
    given); the entry's (or `within:`'s) line if it cannot be found."""
    try:
        with open(f.file, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return f.line
    start = max(f.line - 1, 0)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("- ")), len(lines))
    at = lambda k, i: re.match(r"\s*(- )?" + re.escape(k) + r"\s*:", lines[i]) is not None  # noqa: E731
    if within is not None:
        found = next((i for i in range(start, end) if at(within, i)), None)
        if found is None:
            return f.line
        if "{" in lines[found]:  # flow style: all on one line
            return found + 1
        start = found + 1
    return next((i + 1 for i in range(start, end) if at(key, i)), start if within else f.line)


def declarations(f: NativeFunction, d: Dispatch, signature: tuple[str, str], more: Optional[str] = None) -> list[str]:
    """The part of `ops/<stem>.h` that declares the kernels the extension
    writes for `f` (and `more`: a view's inverse)."""
    ret, params = signature
    return load("op_native_kernels.h").lines(
        keys=", ".join(k for k, _ in d.kernels) + ("; the view's inverse" if more else ""),
        native_ns=f"{f.namespace}::native",
        declarations=[f"{ret} {name}({params});" for name in d.names()] + ([more] if more else []))


def registrations(f: NativeFunction, d: Dispatch) -> list[tuple[str, str]]:
    """(dispatch key, kernel) for each hand-written kernel of `f`."""
    return [(key, f"::{f.namespace}::native::{name}") for key, name in d.kernels]
