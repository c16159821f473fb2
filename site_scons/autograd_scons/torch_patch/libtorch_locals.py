"""The names libtorch keeps local that a patch's formulas use, reached
through libtorch's own definitions (docs/patching-torch.md).

libtorch_cpu.so defines most of FunctionsManual's helpers (`details::
handle_r_to_c`, ...) and a few other names formulas use (`TypeAndSize::
zeros`, `details::kCudnnDoubleBackwardMsg`) with hidden visibility: not in
its dynamic symbol table, so nothing can link to them.  They are not
static (other files of libtorch call them), so they keep the standard
calling convention, and its full symbol table (`.symtab`) holds each one's
offset in the library, under the very mangled name the installed headers'
declarations give a call.  So:

- when the facts are read (torch_library.read_facts), the local
  definitions in `torch::autograd` are kept with their offsets
  (`read_table`), and, per source name, whether one is usable
  (`unusable_names`: none without `.symtab`, none for a name libtorch has
  only as compiler clones, `.isra`/`.constprop`, whose calling convention
  is the compiler's own, none for a name declared but only inlined);
- when the patch links, the undefined symbols of its objects that are such
  definitions (reach_locals.py) get a definition in the patch: a jump through a
  table that, as the patch loads, is filled with libtorch's load address
  plus each offset (templates/libtorch_locals.cpp), after checking that the
  library loaded is the one whose offsets these are (its GNU build id, and
  an exported symbol found where its offset says).  Data (the one message
  string) is copied from libtorch's definition as the patch loads.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

SHT_SYMTAB, SHT_RELA = 2, 4
_STT_OBJECT, _STT_FUNC = 1, 2
STB_LOCAL, _STV_DEFAULT = 0, 0
_PREFIX = b"_ZN5torch8autograd"
_DETAILS = ("torch", "autograd", "generated", "details")
# What a compiler clone's name carries after the function's own.
_CLONE = re.compile(r"\.(?:isra|constprop|part|cold|localalias)\b")
# Relocations that call a symbol, by machine (x86-64: PLT32, PC32; AArch64: CALL26, JUMP26).
CALL_RELOCATIONS = {62: {2, 4}, 183: {283, 282}}
# Machines whose trampolines templates/libtorch_locals.cpp writes.
TRAMPOLINE_MACHINES = {62: "x86-64"}

STRIPPED = "libtorch_cpu.so has no symbol table (.symtab stripped)"
CLONES_ONLY = "libtorch_cpu.so has only compiler clones of it (.isra, .constprop: their own calling convention)"
INLINED_ONLY = "libtorch_cpu.so has no symbol for it (inlined only, or declared and never defined)"
NO_TRAMPOLINE = "the patch reaches libtorch's local symbols on x86-64 only"


@dataclass(frozen=True)
class LocalTable:
    """What `.symtab` says of libtorch's local definitions in torch::autograd."""
    present: bool                   # the library has a .symtab
    symbols: tuple = ()             # (mangled, offset, size, is_data) of each usable definition, sorted
    cloned: tuple = ()              # mangled names libtorch has only as clones, sorted
    anchor: tuple = ()              # (mangled, offset) of an exported function, to check the base with


def components(mangled: str) -> tuple[tuple[str, ...], bool]:
    """The source names of a nested symbol `_ZN<len><id>...`, up to the first
    thing that is not one, and whether one of them has internal linkage
    (`L`, a static function: no other file can call it)."""
    out, internal, at = [], False, 3 if mangled.startswith("_ZN") else len(mangled)
    while at < len(mangled):
        if mangled[at] == "L":
            internal, at = True, at + 1
        m = re.match(r"\d+", mangled[at:at + 6])
        if not m:
            break
        start = at + len(m.group())
        out.append(mangled[start:start + int(m.group())])
        at = start + int(m.group())
    return tuple(out), internal


def source_name(mangled: str) -> str:
    """What a formula calls a symbol by: `handle_r_to_c` for a details
    helper, `TypeAndSize::zeros` for another class's member; "" for others."""
    names, _ = components(mangled.split(".")[0])
    if names[:4] == _DETAILS and len(names) > 4:
        return names[4]
    if names[:2] == ("torch", "autograd") and len(names) == 4 and names[2] != "generated":
        return f"{names[2]}::{names[3]}"
    return ""


def qualified(mangled: str) -> str:
    """`torch::autograd::...::name` of a nested symbol (for messages and C++)."""
    return "::".join(components(mangled)[0])


def read_table(elf, dynamic_names: set) -> LocalTable:
    """The local definitions under `torch::autograd` in `elf`'s .symtab
    (torch_library.ElfFile), besides `dynamic_names` (the exported ones)."""
    symtab = next((s for s in elf.sections if s[1] == SHT_SYMTAB), None)
    if symtab is None:
        return LocalTable(False)
    strings = bytes(elf.body(elf.sections[symtab[6]]))
    plain: dict[str, list] = {}
    clones: set = set()
    anchor = None
    for name_at, info, other, shndx, value, size in struct.iter_unpack("<IBBHQQ", elf.body(symtab)):
        if not strings.startswith(_PREFIX, name_at) or shndx == 0 or info & 0xF not in (_STT_OBJECT, _STT_FUNC):
            continue
        name = strings[name_at:strings.index(b"\0", name_at)].decode("ascii", "replace")
        if name in dynamic_names:
            if anchor is None and info & 0xF == _STT_FUNC and components(name)[0][:4] == _DETAILS:
                anchor = (name, value)
            continue
        if info >> 4 != STB_LOCAL and other & 0x3 == _STV_DEFAULT:
            continue  # (exported but absent from the dynamic table: not a library we read right)
        names, internal = components(name)
        if internal or not source_name(name) or any(n.startswith("_GLOBAL__N") for n in names):
            continue   # (static, or in an anonymous namespace: no declaration can name it)
        if _CLONE.search(name):
            clones.add(name.split(".")[0])
            continue
        plain.setdefault(name, []).append((value, size, info & 0xF == _STT_OBJECT))
    # One definition per name: two different ones (an ODR violation) are no definition.
    usable = tuple(sorted((n, *defs[0]) for n, defs in plain.items() if len(set(defs)) == 1))
    return LocalTable(True, usable, tuple(sorted(clones - set(plain) - dynamic_names)), anchor or ())


def unusable_names(table: LocalTable, machine: int, declared_only: frozenset, exported: frozenset) -> dict:
    """{source name: why} for each name a formula could call that libtorch
    defines without a usable symbol: `declared_only` (declarations.py) and
    the names of clones, less what libtorch exports."""
    plain = {source_name(s[0]) for s in table.symbols}
    cloned = {source_name(n) for n in table.cloned} - {""}
    out = {}
    for name in sorted((declared_only | cloned) - exported):
        if not table.present:
            out[name] = STRIPPED
        elif name in plain:
            if machine not in TRAMPOLINE_MACHINES:
                out[name] = NO_TRAMPOLINE
        else:
            out[name] = CLONES_ONLY if name in cloned else INLINED_ONLY
    return out
