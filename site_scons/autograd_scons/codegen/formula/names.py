"""The tables of the translation: the types the translator knows a value by,
how C++ spells them, the constants a formula may name, the Tensor methods
whose Python spelling differs, and what the called ATen functions look like
from Python (`Callee`, built from parsed native functions by callees.py).

The types are a small vocabulary of strings, the schema's own where it has
one: "Tensor", "Tensor?" (may be None), "Tensor[]", "int", "float", "bool",
"Scalar", "int[]", "ScalarType", "str", "TensorOptions", "TypeAndSize",
"Layout", "Device", "MemoryFormat", "TensorGeometry", "bool[]", "tuple",
"None"; a trailing "?" is optional.  "?" alone is a value whose type the
translator does not know: an operation whose Python depends on the type
(division) refuses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

UNKNOWN = "?"

# Schema types (native_functions.yaml) -> the vocabulary.
_SCHEMA = {"Tensor": "Tensor", "int": "int", "SymInt": "int", "float": "float", "bool": "bool",
           "Scalar": "Scalar", "ScalarType": "ScalarType", "str": "str", "Layout": "Layout",
           "Device": "Device", "MemoryFormat": "MemoryFormat", "Generator": "Generator",
           "SymFloat": "float", "SymBool": "bool"}


def schema_type(text: str) -> str:
    """The vocabulary type of a schema type's text (`SymInt[]?` -> `int[]?`)."""
    text = text.replace(" ", "")
    opt = text.endswith("?")
    base = text[:-1] if opt else text
    if "[" in base:
        elem = base[:base.index("[")]
        if elem.endswith("?"):          # Tensor?[]
            return "Tensor?[]" if elem == "Tensor?" else UNKNOWN
        inner = _SCHEMA.get(elem)
        out = f"{inner}[]" if inner in ("Tensor", "int", "bool", "Scalar", "float") else UNKNOWN
    else:
        out = _SCHEMA.get(base, UNKNOWN)
    return out + "?" if opt and out != UNKNOWN else out


# C++ types of saved values (the parser's SavedAttribute.type) -> the vocabulary.
_CPP = {
    "at::Tensor": "Tensor?", "::std::optional<at::Tensor>": "Tensor?", "at::TensorList": "Tensor[]",
    "::std::vector<at::Tensor>": "Tensor[]", "c10::List<::std::optional<at::Tensor>>": "Tensor?[]",
    "int64_t": "int", "c10::SymInt": "int", "bool": "bool", "double": "float", "at::Scalar": "Scalar",
    "c10::SymIntArrayRef": "int[]", "at::IntArrayRef": "int[]", "at::OptionalIntArrayRef": "int[]?",
    "::std::optional<c10::SymIntArrayRef>": "int[]?", "::std::optional<double>": "float?",
    "::std::optional<int64_t>": "int?", "::std::optional<c10::SymInt>": "int?",
    "::std::optional<bool>": "bool?", "::std::optional<at::Scalar>": "Scalar?",
    "at::ScalarType": "ScalarType", "::std::optional<at::ScalarType>": "ScalarType?",
    "at::Layout": "Layout", "at::TensorOptions": "TensorOptions",
    "torch::autograd::generated::TypeAndSize": "TypeAndSize", "at::TensorGeometry": "TensorGeometry",
    "c10::string_view": "str", "::std::optional<c10::string_view>": "str?",
    "::std::vector<at::ScalarType>": "ScalarType[]", "at::ArrayRef<at::Scalar>": "Scalar[]",
    "::std::vector<::std::vector<c10::SymInt>>": "int[][]", "::std::vector<::std::vector<int64_t>>": "int[][]",
}


def cpp_type(text: str) -> str:
    """The vocabulary type of a saved value's C++ type (UNKNOWN if not listed).
    A saved at::Tensor may be undefined (an optional input, an output not
    computed), so it reads as `Tensor?`; `+`, `*`... treat both alike."""
    return _CPP.get(text.replace("const ", "").replace("&", "").strip(), UNKNOWN)


def base(t: str) -> str:
    return t[:-1] if t.endswith("?") and t != UNKNOWN else t


def is_tensor(t: str) -> bool:
    return base(t) == "Tensor"


def is_number(t: str) -> bool:
    return base(t) in ("int", "float", "bool")


# Named constants -> (Python, type).
CONSTANTS = {
    "true": ("True", "bool"), "false": ("False", "bool"),
    "std::nullopt": ("None", "None"), "c10::nullopt": ("None", "None"), "nullopt": ("None", "None"),
    "M_PI": ("math.pi", "float"), "M_SQRT2": ("math.sqrt(2.0)", "float"),
    "M_2_SQRTPI": ("(2.0 / math.sqrt(math.pi))", "float"), "M_SQRT1_2": ("math.sqrt(0.5)", "float"),
    "M_LN2": ("math.log(2.0)", "float"), "M_LN10": ("math.log(10.0)", "float"),
    "at::Reduction::None": ("0", "int"), "at::Reduction::Mean": ("1", "int"), "at::Reduction::Sum": ("2", "int"),
    "Reduction::None": ("0", "int"), "Reduction::Mean": ("1", "int"), "Reduction::Sum": ("2", "int"),
    "c10::MemoryFormat::Contiguous": ("torch.contiguous_format", "MemoryFormat"),
    "at::MemoryFormat::Contiguous": ("torch.contiguous_format", "MemoryFormat"),
    "MemoryFormat::Contiguous": ("torch.contiguous_format", "MemoryFormat"),
    "at::kStrided": ("torch.strided", "Layout"), "c10::kStrided": ("torch.strided", "Layout"),
    "c10::kJagged": ("torch.jagged", "Layout"),
    "kCudnnDoubleBackwardMsg": ("'double backward is not supported for cuDNN RNNs: disable cuDNN "
                                "(torch.backends.cudnn.flags(enabled=False)) around the forward'", "str"), "at::kJagged": ("torch.jagged", "Layout"),
}
for _cpp, _py in (("Float", "float32"), ("Double", "float64"), ("Half", "float16"), ("BFloat16", "bfloat16"),
                  ("Long", "int64"), ("Int", "int32"), ("Bool", "bool"), ("Byte", "uint8"),
                  ("ComplexFloat", "complex64"), ("ComplexDouble", "complex128")):
    for _ns in ("at::", "c10::", ""):
        CONSTANTS[f"{_ns}k{_cpp}"] = (f"torch.{_py}", "ScalarType")
        CONSTANTS[f"{_ns}ScalarType::{_cpp}"] = (f"torch.{_py}", "ScalarType")

# Tensor methods read as a Python attribute: C++ name -> (attribute, type).
TENSOR_PROPERTIES = {
    "sym_sizes": ("shape", "int[]"), "sizes": ("shape", "int[]"), "scalar_type": ("dtype", "ScalarType"),
    "dtype": ("dtype", "ScalarType"), "layout": ("layout", "Layout"), "device": ("device", "Device"),
    "mT": ("mT", "Tensor"), "mH": ("mH", "Tensor"), "is_cpu": ("is_cpu", "bool"), "is_cuda": ("is_cuda", "bool"),
    "is_xpu": ("is_xpu", "bool"), "requires_grad": ("requires_grad", "bool"), "is_sparse": ("is_sparse", "bool"),
}
# Tensor methods renamed: C++ name -> (Python method, type of the result).
TENSOR_METHODS = {
    "sym_size": ("size", "int"), "size": ("size", "int"), "sym_numel": ("numel", "int"), "numel": ("numel", "int"),
    "dim": ("dim", "int"), "sym_strides": ("stride", "int[]"), "strides": ("stride", "int[]"),
    "sym_stride": ("stride", "int"), "stride": ("stride", "int"), "toType": ("to", "Tensor"),
    "is_complex": ("is_complex", "bool"), "is_floating_point": ("is_floating_point", "bool"),
    "is_contiguous": ("is_contiguous", "bool"), "is_conj": ("is_conj", "bool"), "is_neg": ("is_neg", "bool"),
    "item": ("item", "Scalar"), "storage_offset": ("storage_offset", "int"),
    "sym_storage_offset": ("storage_offset", "int"),
}


@dataclass(frozen=True)
class Overload:
    """One schema of an ATen name, as Python calls it."""
    positional: tuple[str, ...]   # argument names before `*`, self included
    kwarg_only: tuple[str, ...]   # after `*` (out= arguments left out)
    returns: str                  # vocabulary type; "tuple" for several returns
    types: tuple[str, ...] = ()   # of positional + kwarg_only, vocabulary types

    def accepts(self, args: "list[str]", offset: int) -> bool:
        """Whether arguments of these types (after `offset` receivers) may
        bind to this overload as C++ would convert them."""
        return all(compatible(a, p) for a, p in zip(args, self.types[offset:]))


@dataclass(frozen=True)
class Callee:
    """An ATen name (`sum`), every overload of it, and where Python has it."""
    name: str
    python: Optional[str]          # `torch.sum`, `torch._C._nn.mse_loss`; None: only a Tensor method
    method: bool                   # Tensor has it as a method
    overloads: tuple[Overload, ...]

    def returns(self) -> str:
        kinds = {o.returns for o in self.overloads}
        return kinds.pop() if len(kinds) == 1 else UNKNOWN


_WIDER = {"bool": ("int", "float", "Scalar"), "int": ("float", "Scalar", "int[]"), "float": ("Scalar",),
          "Scalar": ()}


def compatible(arg: str, param: str) -> bool:
    """An argument of type `arg` may bind to a parameter of type `param`
    (unknown types may bind anywhere)."""
    if arg == UNKNOWN or param == UNKNOWN:
        return True
    if arg == "None":
        return param.endswith("?")
    a, p = base(arg), base(param)
    if a == p or p in _WIDER.get(a, ()):
        return True
    if a.endswith("[]") and p.endswith("[]"):
        return compatible(a[:-2], p[:-2]) or a == "Tensor[]" and p == "Tensor?[]"
    return False
