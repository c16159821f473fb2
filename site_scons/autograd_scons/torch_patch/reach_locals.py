"""What a patch's objects use of the definitions libtorch keeps local,
found as the patch links, and the TU that reaches them
(libtorch_locals.py says how; codegen/emit/aten_kernels/locals_cpp.py writes it).

    write_source("locals/libtorch_locals.cpp", objects, ".libtorch_facts.json")   # LocalError: one line

The objects' undefined symbols that libtorch's `.symtab` locates get a
definition; one that libtorch has only as a compiler clone, or defines as
data where the patch calls it, is refused naming it.  What libtorch
neither exports nor locates is left to the link (`-z defs`), which names it.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from dataclasses import dataclass

from autograd_scons.base.errors import Error
from autograd_scons.torch_patch.libtorch_locals import (CALL_RELOCATIONS, CLONES_ONLY, NO_TRAMPOLINE, SHT_RELA,
                                                        SHT_SYMTAB, STB_LOCAL, TRAMPOLINE_MACHINES, LocalTable,
                                                        qualified)
from autograd_scons.torch_patch.torch_library import LibtorchFacts, ElfFile


class LocalError(Error, ValueError):
    """A name the patch uses that libtorch defines with no usable symbol (one line)."""


def object_symbols(path: str) -> tuple[set, set, set]:
    """(undefined, defined, called) global symbols of a relocatable object
    (called: those a call relocation names)."""
    with open(path, "rb") as f:
        elf = ElfFile(f.read())
    undefined: set[str] = set()
    defined: set[str] = set()
    called: set[str] = set()
    symtab_index = next((i for i, s in enumerate(elf.sections) if s[1] == SHT_SYMTAB), None)
    if symtab_index is None:
        return undefined, defined, called
    symtab = elf.sections[symtab_index]
    strings = bytes(elf.body(elf.sections[symtab[6]]))
    names = []
    for name_at, info, _, shndx, _, _ in struct.iter_unpack("<IBBHQQ", elf.body(symtab)):
        name = strings[name_at:strings.index(b"\0", name_at)].decode("ascii", "replace") if name_at else ""
        names.append(name)
        if not name or info >> 4 == STB_LOCAL:
            continue
        (undefined if shndx == 0 else defined).add(name)
    calls = CALL_RELOCATIONS.get(elf.machine, set())
    for s in elf.sections:
        if s[1] == SHT_RELA and s[6] == symtab_index:
            for _, info, _ in struct.iter_unpack("<QQq", elf.body(s)):
                if info & 0xFFFFFFFF in calls and info >> 32 < len(names):
                    called.add(names[info >> 32])
    return undefined, defined, called


@dataclass(frozen=True)
class Reached:
    """One local definition of libtorch's that the patch defines a way to."""
    mangled: str
    offset: int
    size: int
    is_data: bool

    @property
    def qualified(self) -> str:
        return qualified(self.mangled)


def reached(objects: list[str], table: LocalTable, machine: int, demangle=lambda s: s) -> list[Reached]:
    """The local definitions of libtorch the objects need, sorted.  Raises
    LocalError (one line, naming the symbol) for one with no usable symbol."""
    undefined, defined, called = set(), set(), set()
    for path in objects:
        u, d, c = object_symbols(path)
        undefined |= u
        defined |= d
        called |= c
    needed = undefined - defined
    symbols = {s[0]: s for s in table.symbols}
    out = []
    for name in sorted(needed):
        if name in symbols:
            _, offset, size, is_data = symbols[name]
            if is_data and name in called:
                raise LocalError(f"the patch calls {demangle(name)}, which libtorch_cpu.so defines as data, not a "
                                 "function: its declaration does not match libtorch's definition")
            if machine not in TRAMPOLINE_MACHINES:
                raise LocalError(f"the patch uses {demangle(name)}, which libtorch_cpu.so keeps local: "
                                 f"{NO_TRAMPOLINE}")
            out.append(Reached(name, offset, size, is_data))
        elif name in table.cloned:
            raise LocalError(f"the patch uses {demangle(name)}, which {CLONES_ONLY}: --functions-manual "
                             "FunctionsManual.cpp compiles FunctionsManual's helpers into the patch")
    return out


def demangle(names: list[str]) -> dict:
    """{mangled: as C++ spells it} (c++filt where there is one, else as given)."""
    tool = shutil.which("c++filt")
    if tool and names:
        p = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True)
        lines = p.stdout.splitlines()
        if p.returncode == 0 and len(lines) == len(names):
            return dict(zip(names, lines))
    return {n: n for n in names}


def write_source(target: str, objects: list[str], facts_path: str) -> None:
    """Write `target`, the patch's TU reaching what `objects` use of
    libtorch's local definitions (codegen/emit/aten_kernels/locals_cpp.py), from
    the facts patch-torch kept (torch_library.LibtorchFacts).  Raises
    LocalError (one line)."""
    from autograd_scons.buildenv.published import write_if_changed
    from autograd_scons.codegen.emit.aten_kernels.locals_cpp import render_locals
    with open(facts_path, encoding="utf-8") as f:
        facts = LibtorchFacts.from_record(json.load(f)["facts"])
    found = reached(objects, facts.locals, facts.machine, lambda n: demangle([n])[n])
    if found and not facts.locals.anchor:
        raise LocalError("libtorch_cpu.so exports no function of FunctionsManual's: the patch cannot check, as it "
                         "loads, where libtorch is")
    write_if_changed(target, render_locals([(r.mangled, r.qualified, r.offset, r.size, r.is_data) for r in found],
                                           tuple(facts.locals.anchor), facts.build_id))
