"""Fingerprinted extensions, for the tests that hunt for a wrong library
(not a test module).

An extension here has one op, `<ns>::fp(Tensor self) -> Tensor`, whose
kernel returns a constant written in its source (`fp_call(value)`).  A
process that loaded it says which value its library computes:

- with the real compiler, by calling the op (`THEN_REAL`);
- with the stand-in (support/fakecxx.sh), which compiles nothing, by reading
  the fingerprints that the stand-in carries from the sources into the
  objects and from them into the library, in the memory of the library this
  process loaded (`THEN_FAKE`), not in the file on disk.

Either prints `FP <value>`; `loaded_value(stdout)` reads it back.
"""

import re

from support.load_helpers import environ, run, start  # noqa: F401 (re-exported for the tests)

NATIVE = """- func: {ns}::fp(Tensor self) -> Tensor
  dispatch:
    CompositeExplicitAutograd: fp
"""
DERIVATIVES = """- name: fp(Tensor self) -> Tensor
  self: grad * 0
"""
KERNEL = """// AGF_FINGERPRINT(v{value})
#include <ATen/ATen.h>
namespace {ns}::native {{
at::Tensor fp(const at::Tensor& self) {{ return at::full_like(self, {value}); }}
}}  // namespace {ns}::native
"""

THEN_REAL = "print('FP', int(ops.fp(torch.zeros(1)).item()), flush=True)"
THEN_FAKE = """
import ctypes, re
from autograd_scons.jit import loader
_lib = ctypes.CDLL(loader._loaded[call['name']].library, mode=os.RTLD_NOLOAD)
_start = ctypes.addressof(ctypes.c_char.in_dll(_lib, '_binary_fake_object_start'))
_end = ctypes.addressof(ctypes.c_char.in_dll(_lib, '_binary_fake_object_end'))
_found = sorted(set(re.findall(rb'AGF_FINGERPRINT\\(v(\\d+)\\)', ctypes.string_at(_start, _end - _start))))
print('FP', ' '.join(v.decode() for v in _found), flush=True)
"""


def fp_call(name, folder, value, ns=None):
    """load_inline() arguments of extension `name` (op namespace `ns`,
    default the name) whose op returns `value`, built in `folder`."""
    ns = ns or name
    return {"inline": True, "name": name, "native_functions": NATIVE.format(ns=ns),
            "derivatives": DERIVATIVES, "cpp_sources": KERNEL.format(ns=ns, value=value),
            "build_directory": str(folder)}


def loaded_value(stdout):
    """The value the process's loaded library computes ("1"; "1 2" if a
    stand-in library holds two sources' fingerprints), or None."""
    m = re.search(r"^FP (.*)$", stdout, re.M)
    return m.group(1).strip() if m else None
