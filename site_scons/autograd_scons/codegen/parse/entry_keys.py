"""Which keys an entry of native_functions.yaml may have: every other one is
refused at its line, naming those allowed there, as torchgen refuses
leftover keys (and as a misspelt formula key of derivatives.yaml is).
A misspelt key silently ignored would be a silently wrong build.

An ATen op (torch's own file, a patch of it) takes torchgen's keys.  An
extension's op takes the keys the tool honours for it; each ATen key that
means nothing for an extension op is refused with the reason, never
ignored.
"""

from __future__ import annotations

from autograd_scons.base.errors import SpecError
from .yaml_io import Entry

# torchgen's NativeFunction.from_yaml pops exactly these.
ATEN_KEYS = ("func", "variants", "dispatch", "tags", "autogen", "structured", "structured_delegate",
             "structured_inherits", "precomputed", "ufunc_inner_loop", "use_const_ref_for_mutable_tensors",
             "manual_kernel_registration", "manual_cpp_binding", "device_guard", "device_check", "python_module",
             "category_override", "cpp_no_default_args")

# An extension's op: its kernels (dispatch:), its view's inverse (view:),
# its transforms (autocast:, vmap:), its stable target's fake kernel (fake:), and the ATen keys that mean the same
# for it (variants: function; the kernels' C++ types).
EXTENSION_KEYS = ("func", "dispatch", "view", "autocast", "vmap", "fake", "variants",
                  "use_const_ref_for_mutable_tensors")

_STRUCTURED = ("ATen's structured kernels are torchgen's code for ATen's own kernels: name an extension op's "
               "kernels under 'dispatch:'")
_BINDINGS = "torchgen reads it for ATen's own C++ and Python bindings; an extension op has neither"
_GUARDS = ("the generated registration calls the kernels as written, with no device guard or device check: a "
           "kernel that needs one makes it itself")

# Why each ATen key that means nothing for an extension op is refused.
_NOT_FOR_EXTENSIONS = {
    "tags": "tags are not registered with an extension op's schema, so they would do nothing",
    "autogen": "the tool derives no variants of an extension op: declare each overload (in-place, out=) as an "
               "entry of its own",
    "structured": _STRUCTURED, "structured_delegate": _STRUCTURED, "structured_inherits": _STRUCTURED,
    "precomputed": _STRUCTURED, "ufunc_inner_loop": _STRUCTURED,
    "manual_kernel_registration": "an op without 'dispatch:' is one whose kernels the extension registers itself",
    "manual_cpp_binding": "the tool always generates the op's C++ caller (<ns>::<op>, which formulas call)",
    "device_guard": _GUARDS, "device_check": _GUARDS,
    "python_module": "an extension op is torch.ops.<ns>.<op>, in no module of torch's",
    "category_override": _BINDINGS, "cpp_no_default_args": _BINDINGS,
}


def check_keys(path: str, e: Entry, namespace: str, label: str) -> None:
    """Refuse, at its line, a key that an entry in `namespace` may not have."""
    extension = namespace != "aten"
    allowed = EXTENSION_KEYS if extension else ATEN_KEYS
    for key in e.data:
        if key in allowed:
            continue
        line = e.line_of(str(key))
        if extension and key in _NOT_FOR_EXTENSIONS:
            raise SpecError(f"'{key}' has no meaning for an extension's op: {_NOT_FOR_EXTENSIONS[key]} (the keys "
                            f"of an extension op: {', '.join(EXTENSION_KEYS)})", path, line, label)
        why = (f"; '{key}' is for an extension's own op (a namespace other than aten)"
               if key in EXTENSION_KEYS else "")
        what = "an extension op" if extension else "an ATen op"
        raise SpecError(f"unknown key '{key}' in an entry of {what} (allowed: {', '.join(allowed)}){why}",
                        path, line, label)
    variants = e.data.get("variants")
    if extension and variants is not None and variants != "function":
        raise SpecError(f"an extension op has no Tensor method: 'variants' may only be 'function', not {variants!r}",
                        path, e.line_of("variants"), label)
