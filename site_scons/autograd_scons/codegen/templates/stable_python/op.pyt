

# ${label}: ${schema}
_${stem}_op = torch.ops.${namespace}.${name}.${overload}


class _${stem}_Function(_rt.OpFunction):
    op = _${stem}_op
    label = "${label}"

    @staticmethod
    def forward(${params}, keyset):
        return _rt.redispatch(_${stem}_op, keyset, ${positional}, {${keyword}})

    @staticmethod
    def setup_context(ctx, inputs, output):
        ${setup}

    @staticmethod
    def backward(ctx, *grads):
        ${backward}

    @staticmethod
    def jvp(ctx, ${tangents}, _keyset_t):
        ${jvp}


def _${stem}_autograd(keyset, ${signature}):
    return _rt.apply(_${stem}_Function, keyset, (${params},), {${keyword}})


_lib.impl("${overload_name}", _${stem}_autograd, "Autograd", with_keyset=True)
${transforms}
