

# ${label}: ${schema}
# No derivatives entry: its Autograd kernel refuses gradients and tangents.
_${stem}_op = torch.ops.${namespace}.${name}.${overload}


def _${stem}_autograd(keyset, ${signature}):
    return _rt.no_formula("${label}", _${stem}_op, keyset, (${params},), {${keyword}})


_lib.impl("${overload_name}", _${stem}_autograd, "Autograd", with_keyset=True)
${transforms}
