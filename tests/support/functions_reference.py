"""What libtorch's generated Functions look like, read back from C++ text.

Not a test module: helpers for the emission tests.  `torch_functions_*`
give torch 2.13's installed header and torchgen's own Functions.cpp for the
real specs (torch imported lazily); `read_structs` / `read_definitions`
pull out of C++ text (theirs or ours) the parts the tests compare.
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
from dataclasses import dataclass


# Ours collect the common types through support.cpp's instantiations
# (codegen/emit/functions/support.py): `ca_collect<T>(args, x)` is `args.collect(x)`.
_CA_COLLECT = re.compile(r"^ca_collect(?:_saved)?<.*>\(args, (.*)\);$")


def installed_functions_h() -> str:
    import torch
    return os.path.join(os.path.dirname(torch.__file__), "include", "torch", "csrc", "autograd",
                        "generated", "Functions.h")


@functools.lru_cache(maxsize=None)
def torchgen_functions() -> tuple[str, str]:
    """(Functions.h, Functions.cpp) as torchgen writes them in a real build:
    load_derivatives, then match_differentiability_info adds the foreach
    infos, then gen_autograd_functions_lib."""
    import torchgen
    from torchgen.packaged.autograd.gen_autograd_functions import gen_autograd_functions_lib

    from support.torchgen_reference import real_torchgen

    infos, _ = real_torchgen()
    templates = os.path.join(os.path.dirname(torchgen.__file__), "packaged", "autograd", "templates")
    with tempfile.TemporaryDirectory() as out:
        gen_autograd_functions_lib(out, infos, templates)
        with open(os.path.join(out, "Functions.h")) as h, open(os.path.join(out, "Functions.cpp")) as c:
            return h.read(), c.read()


# ------------------------------------------------------------ declarations

# libtorch's classes are read by the product itself (a patch must match them).
from autograd_scons.codegen.parse.libtorch_classes import LibtorchClass as Struct  # noqa: E402,F401
from autograd_scons.codegen.parse.libtorch_classes import normalise_type  # noqa: E402,F401
from autograd_scons.codegen.parse.libtorch_classes import read_classes as read_structs  # noqa: E402,F401


# ------------------------------------------------------------- definitions


@dataclass(frozen=True)
class Definitions:
    """The behaviour-bearing lines of one op's definitions."""
    params: tuple[tuple[str, str], ...]   # apply_functional (normalised type, name) after needs_input_grad
    ranges: tuple[str, ...]               # `auto x_ix = gen.range(...)`
    aliases: tuple[str, ...]              # `const auto& grad = grads[0]`
    guarded: bool                         # computes any_grad_defined
    formulas: tuple[str, ...]             # every gradient expression, in order
    masks: tuple[tuple[int, ...], ...]    # grad_input_mask index lists, in order
    copies: tuple[tuple[str, str], ...]   # (input, source) of every copy_range, in order
    collects: tuple[str, ...]             # compiled_args statements
    unpacks: tuple[str, ...]              # apply(): checks and unpacks of saved values


def _function_body(text: str, start: int) -> str:
    i = text.index("{", start)
    depth = 0
    for j in range(i, len(text)):
        c = text[j]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1:j]
    raise ValueError("unbalanced braces")


def read_definitions(text: str, op: str) -> Definitions:
    start = text.index(f"variable_list {op}_apply_functional(")
    sig = text[start:text.index("{", start)]
    params = []
    for p in sig[sig.index("needs_input_grad") + len("needs_input_grad"):].strip(" ,)\n").split(","):
        p = p.strip()
        if p:
            t, _, n = p.rpartition(" ")
            params.append((normalise_type(t.replace("&", "")), n))
    body = [x.strip() for x in _function_body(text, start).splitlines()]
    formulas, masks, copies, mask = [], [], [], None
    for line in body:
        m = re.fullmatch(r"auto grad_result = (.*);", line) or \
            re.fullmatch(r"grad_result\.emplace_back\((.*)\);", line)
        if m and m.group(1) != "Tensor()":
            formulas.append(m.group(1))
        for m in re.finditer(r"copy_range\(grad_inputs, (\w+)_ix, (.*?)\);", line):
            copies.append((m.group(1), m.group(2)))
        if line.startswith("auto grad_input_mask"):
            mask = []
        if mask is not None:
            mask += [int(x) for x in re.findall(r"needs_input_grad\[(?:/\*\w+\*/)?(\d+)\]", line)]
            if line.endswith("};"):
                masks.append(tuple(mask))
                mask = None
    apply_at = text.index(f"variable_list {op}::apply(")
    apply_body = [x.strip() for x in _function_body(text, apply_at).splitlines()]
    collect_at = text.index(f"void {op}::compiled_args(")
    return Definitions(
        params=tuple(params),
        ranges=tuple(x for x in body if x.startswith("auto ") and "gen.range(" in x),
        aliases=tuple(x for x in body if re.fullmatch(r"const auto& \w+ = grads\[\d+\];", x)),
        guarded="bool any_grad_defined = any_variable_defined(grads);" in body,
        formulas=tuple(formulas), masks=tuple(masks), copies=tuple(copies),
        # Ours start with the load check (codegen/emit/functions/load_check.py), torchgen's do not.
        collects=tuple(_CA_COLLECT.sub(r"args.collect(\1);", x)
                       for x in (y.strip() for y in _function_body(text, collect_at).splitlines())
                       if x and not x.startswith("::autograd_functions_load::")),
        unpacks=tuple(x for x in apply_body if x.startswith("TORCH_CHECK") or
                      re.fullmatch(r"auto \w+ = \w+_?\.unpack\(.*\);|auto \w+ = unpack_(opt_)?list\(.*\);", x)),
    )


# ------------------------------------------------------------------ ours


def load_op_infos(native_functions, derivatives, tags=None) -> list:
    """Every info that becomes a Function class, derived foreach ones included."""
    from autograd_scons.codegen.engine.units import load_units
    return [u.subject for u in load_units(native_functions, derivatives, tags, kernels=False)]


@functools.lru_cache(maxsize=None)
def our_op_infos():
    """Our op infos for the real specs (loaded once per test session)."""
    from support.torchgen_reference import real_spec_paths
    nf, tags, d = real_spec_paths()
    return tuple(load_op_infos(nf, d, tags))


@functools.lru_cache(maxsize=None)
def our_files(opts) -> dict:
    """Every file the generator writes for the real specs' op infos."""
    from autograd_scons.codegen.emit.functions.function_files import render_op, render_shared
    infos = list(our_op_infos())
    files: dict = {}
    for info in infos:
        files.update(render_op(info, opts))
    files.update(render_shared([i.op for i in infos], opts))
    from autograd_scons.codegen.emit.lines import render_lines
    files.update(render_lines(infos))
    return files
