"""What the installed libtorch lets a patch replace, read off
`libtorch_cpu.so` itself (ELF), without importing torch.

A library loaded before libtorch (LD_PRELOAD) replaces a generated
Function's members when libtorch reaches them through symbols that the
dynamic loader resolves, first match in load order:

- the library is not linked with `-Bsymbolic` (DT_SYMBOLIC, DF_SYMBOLIC);
- each class's `apply` is exported, defined, with default visibility
  (hidden or protected ones are bound to libtorch itself);
- the class's vtable slot of `apply` is relocated against that symbol, not
  against libtorch's own address (`-Bsymbolic-functions` leaves a relative
  relocation, which nothing can replace).

It also lists the helpers formulas use that libtorch defines but does not
export: FunctionsManual's (`torch::autograd::generated::details::`) and
the members of the types Functions save (`TypeAndSize::zeros`), and where
its full symbol table (`.symtab`) has them, their offsets in the library
(libtorch_locals.py): a patch reaches them through libtorch's own
definitions (docs/patching-torch.md).

    facts = read_facts(path_to_libtorch_cpu)   # LibtorchFacts; ElfError when not ELF64
"""

from __future__ import annotations

import bisect
import mmap
import os
import re
import struct
from dataclasses import dataclass

from autograd_scons.base.errors import Error
from autograd_scons.torch_patch.libtorch_locals import LocalTable, read_table

# The Itanium C++ ABI's spelling of a generated class, and of the members
# the patch checks (templates/patch_check.cpp spells the same in C++).
_NESTED = "N5torch8autograd9generated"
_APPLY_SUFFIX = "5applyEOSt6vectorIN2at6TensorESaIS5_EE"
_AUTOGRAD = b"_ZN5torch8autograd"

_SHT_DYNSYM, _SHT_RELA, _SHT_DYNAMIC, _SHT_NOTE, _SHT_SYMTAB = 11, 4, 6, 7, 2
_DT_SYMBOLIC, _DT_FLAGS, _DF_SYMBOLIC = 16, 30, 0x2
_STB_LOCAL, _STV_DEFAULT = 0, 0
# An absolute pointer relocated against a symbol, by machine (x86-64, AArch64).
_ABSOLUTE = {62: 1, 183: 257}


class ElfError(Error, ValueError):
    """The file is not a 64-bit little-endian ELF shared object this reads."""


def vtable_symbol(cls: str) -> str:
    return f"_ZTV{_NESTED}{len(cls)}{cls}E"


_CLASS_OF_APPLY = re.compile(rf"_Z{_NESTED}(\d+)(\w+){_APPLY_SUFFIX}")


@dataclass(frozen=True)
class LibtorchFacts:
    machine: int
    symbolic: bool                  # linked with -Bsymbolic: nothing of it can be replaced
    replaceable: frozenset          # classes whose apply a preloaded library replaces
    bound_locally: frozenset        # classes with an apply that libtorch binds to itself
    hidden_helpers: tuple           # helpers defined but not exported (`name`, `Class::member`), sorted
    build_id: str
    exported_helpers: tuple = ()    # helpers exported (`name`, `Class::member`), sorted
    locals: LocalTable = LocalTable(False)   # the local definitions .symtab locates

    def to_record(self) -> dict:
        """JSON values, for from_record."""
        return {"machine": self.machine, "symbolic": self.symbolic, "replaceable": sorted(self.replaceable),
                "bound_locally": sorted(self.bound_locally), "hidden_helpers": list(self.hidden_helpers),
                "build_id": self.build_id, "exported_helpers": list(self.exported_helpers),
                "locals": {"present": self.locals.present, "symbols": [list(s) for s in self.locals.symbols],
                           "cloned": list(self.locals.cloned), "anchor": list(self.locals.anchor)}}

    @classmethod
    def from_record(cls, record: dict) -> "LibtorchFacts":
        """The facts from their JSON record (to_record's, as kept)."""
        table = record["locals"]
        return cls(machine=int(record["machine"]), symbolic=bool(record["symbolic"]),
                   replaceable=frozenset(record["replaceable"]), bound_locally=frozenset(record["bound_locally"]),
                   hidden_helpers=tuple(record["hidden_helpers"]), build_id=str(record["build_id"]),
                   exported_helpers=tuple(record["exported_helpers"]),
                   locals=LocalTable(bool(table["present"]),
                                     tuple((str(n), int(o), int(z), bool(d)) for n, o, z, d in table["symbols"]),
                                     tuple(table["cloned"]), tuple(table["anchor"])))


class ElfFile:
    def __init__(self, data):
        self.data = data
        if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            raise ElfError("not a 64-bit little-endian ELF file")
        (self.machine,) = struct.unpack_from("<H", data, 18)
        shoff, = struct.unpack_from("<Q", data, 40)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 58)
        self.sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
        names = self.sections[shstrndx]
        self.names = [self._cstr(names[4] + s[0]) for s in self.sections]

    def _cstr(self, at: int) -> str:
        end = self.data.find(b"\0", at)
        return self.data[at:end].decode("ascii", "replace")

    def section(self, kind: int, name=None):
        for s, n in zip(self.sections, self.names):
            if s[1] == kind and (name is None or n == name):
                return s
        return None

    def body(self, s) -> memoryview:
        return memoryview(self.data)[s[4]:s[4] + s[5]]


def read_build_id(path: str) -> str:
    """The GNU build id of the ELF file `path` ("" when it has none)."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        return _build_id(ElfFile(data))


def read_facts(path: str) -> LibtorchFacts:
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        return _read(ElfFile(data))


def _read(elf: "ElfFile") -> LibtorchFacts:
    dynsym, dynamic = elf.section(_SHT_DYNSYM), elf.section(_SHT_DYNAMIC)
    if dynsym is None or dynamic is None:
        raise ElfError("no dynamic symbol table: not a shared library")
    dynstr = elf.body(elf.sections[dynsym[6]])
    symbolic = False
    for tag, value in struct.iter_unpack("<qQ", elf.body(dynamic)):
        symbolic |= tag == _DT_SYMBOLIC or (tag == _DT_FLAGS and bool(value & _DF_SYMBOLIC))

    # Every generated class's apply and vtable among the exported symbols.
    applies, vtables, index_of_apply = {}, {}, {}
    strings = bytes(dynstr)
    autograd_names = set()
    for i, (name_at, info, other, shndx, value, size) in enumerate(struct.iter_unpack("<IBBHQQ",
                                                                                         elf.body(dynsym))):
        name = strings[name_at:strings.index(b"\0", name_at)].decode("ascii", "replace") if name_at else ""
        if shndx != 0 and name.startswith("_ZN5torch8autograd"):
            autograd_names.add(name)
        if name.startswith(f"_ZTV{_NESTED}"):
            vtables[name] = (value, size)
            continue
        m = _CLASS_OF_APPLY.fullmatch(name)
        if m and len(m.group(2)) == int(m.group(1)):
            exported = shndx != 0 and info >> 4 != _STB_LOCAL and other & 0x3 == _STV_DEFAULT
            applies[m.group(2)] = exported
            index_of_apply[i] = m.group(2)

    # The vtable slots relocated against a class's apply symbol.
    absolute = _ABSOLUTE.get(elf.machine)
    slot_of = {}
    for cls in applies:
        found = vtables.get(vtable_symbol(cls))
        if found:
            slot_of[cls] = found
    relocated = set()
    if absolute is not None:
        spans = sorted((start, start + size, cls) for cls, (start, size) in slot_of.items())
        starts = [s[0] for s in spans]
        for s, n in zip(elf.sections, elf.names):
            if s[1] != _SHT_RELA or s[6] != elf.sections.index(dynsym):
                continue
            for offset, info, _ in struct.iter_unpack("<QQq", elf.body(s)):
                if info & 0xffffffff != absolute:
                    continue
                cls = index_of_apply.get(info >> 32)
                if cls is None:
                    continue
                k = bisect.bisect_right(starts, offset) - 1
                if k >= 0 and spans[k][0] <= offset < spans[k][1] and spans[k][2] == cls:
                    relocated.add(cls)
    replaceable = frozenset(c for c, exported in applies.items() if exported and c in relocated
                            and not symbolic)
    return LibtorchFacts(elf.machine, symbolic, replaceable, frozenset(applies) - replaceable,
                         _hidden_helpers(elf, dynstr), _build_id(elf), tuple(sorted(_helper_names(dynstr))),
                         read_table(elf, autograd_names))


def _source_name(text: bytes, at: int):
    """(identifier, end) of the `<length><identifier>` at `at`, or None."""
    m = re.match(rb"(\d+)", text[at:at + 8])
    if not m:
        return None
    start = at + len(m.group(1))
    name = text[start:start + int(m.group(1))].decode("ascii", "replace")
    return (name, start + len(name)) if name.isidentifier() else None


def _helper_names(table) -> set:
    """What `table` (a string table) holds symbols of: the helpers of
    `details::` (`name`), and the members of other classes of
    `torch::autograd` (`Class::member`, e.g. TypeAndSize::zeros)."""
    text = bytes(table)
    out, at = set(), text.find(_AUTOGRAD)
    while at >= 0:
        first = _source_name(text, at + len(_AUTOGRAD))
        if first and first[0] == "generated":
            inner = _source_name(text, first[1])
            helper = _source_name(text, inner[1]) if inner and inner[0] == "details" else None
            if helper and not helper[0].startswith("_GLOBAL__N"):  # (an anonymous namespace)
                out.add(helper[0])
        elif first:
            member = _source_name(text, first[1])
            if member:
                out.add(f"{first[0]}::{member[0]}")
        at = text.find(_AUTOGRAD, at + 1)
    return out


def _hidden_helpers(elf: ElfFile, dynstr) -> tuple:
    symtab = elf.section(_SHT_SYMTAB)
    if symtab is None:
        # Stripped: which helpers exist is unknown; those exported are not hidden.
        return ()
    every = _helper_names(elf.body(elf.sections[symtab[6]]))
    return tuple(sorted(every - _helper_names(dynstr)))


def _build_id(elf: ElfFile) -> str:
    note = elf.section(_SHT_NOTE, ".note.gnu.build-id")
    if note is None:
        return ""
    body = bytes(elf.body(note))
    namesz, descsz, _ = struct.unpack_from("<III", body, 0)
    start = 12 + (namesz + 3) // 4 * 4
    return body[start:start + descsz].hex()


def library_path(torch_root: str) -> str:
    return os.path.join(torch_root, "lib", "libtorch_cpu.so")
