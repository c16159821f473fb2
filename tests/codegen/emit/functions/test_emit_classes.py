"""Our generated classes against libtorch's: the class set, each class's
base and data members (installed Functions.h), and each Function's
behaviour-bearing code (torchgen's own Functions.cpp for the same specs)."""

import re

import pytest

from support.functions_reference import (installed_functions_h, our_files, our_op_infos, read_definitions,
                                 read_structs, torchgen_functions)

from autograd_scons.codegen.emit.options import TORCH_MANUAL_INCLUDES, EmitOptions

OPTS = EmitOptions(includes=TORCH_MANUAL_INCLUDES)


@pytest.fixture(scope="module")
def installed():
    with open(installed_functions_h()) as f:
        return read_structs(f.read())


@pytest.fixture(scope="module")
def ours():
    files = our_files(OPTS)
    structs = {}
    for path, text in files.items():
        if path.startswith("functions/") and path.endswith(".h"):
            structs.update(read_structs(text))
    return structs


def test_class_set_is_the_one_libtorch_ships(installed, ours, torch_counts):
    infos = our_op_infos()
    assert len(installed) == torch_counts.functions > 0
    assert sorted(i.op for i in infos) == sorted(installed)
    assert sorted(ours) == sorted(installed)
    # from derivatives.yaml (view copies included), then the derived foreach ones, in that order
    derived = infos[torch_counts.from_derivatives:]
    assert len(derived) == torch_counts.foreach_derived > 0
    assert all(i.op.startswith("Foreach") for i in derived)


def test_each_class_has_libtorchs_base_members_and_methods(installed, ours):
    diffs = []
    for name, theirs in sorted(installed.items()):
        mine = ours[name]
        for field in ("base", "members", "methods"):
            if getattr(mine, field) != getattr(theirs, field):
                diffs.append(f"{name}.{field}: ours={getattr(mine, field)} theirs={getattr(theirs, field)}")
        # release order is cosmetic; the set of statements is behaviour
        if set(mine.release) != set(theirs.release):
            diffs.append(f"{name}.release_variables: ours={mine.release} theirs={theirs.release}")
    assert diffs == [], "\n".join(diffs[:20])
    bases = [s.base for s in installed.values()]
    # read_structs understood every base (a view is a Node, the rest are TraceableFunctions)
    assert set(bases) == {"Node", "TraceableFunction"} and bases.count("Node") < bases.count("TraceableFunction")


@pytest.mark.compile
def test_definitions_compute_what_torchgens_compute():
    _, ref_cpp = torchgen_functions()
    files = our_files(OPTS)
    diffs = []
    for info in our_op_infos():
        mine = read_definitions(files[f"functions/{info.op}.cpp"], info.op)
        theirs = read_definitions(ref_cpp, info.op)
        for field in mine.__dataclass_fields__:
            if getattr(mine, field) != getattr(theirs, field):
                diffs.append(f"{info.op}.{field}: ours={getattr(mine, field)} theirs={getattr(theirs, field)}")
    assert diffs == [], "\n".join(diffs[:20])


# Data members that hold saved tensors (as libtorch's installed header types them).
SAVED_VARIABLE, SAVED_VARIABLE_LIST = "SavedVariable", "vector<SavedVariable>"  # (normalise_type)


def test_every_saved_value_is_released_collected_and_swapped():
    """What each data member needs follows from its C++ type in our header
    (whose members equal libtorch's installed header's: checked above) and
    from the infos (which saved values are outputs), not from the emitter's
    own table of slots."""
    files = our_files(OPTS)
    for info in our_op_infos():
        struct = read_structs(files[f"functions/{info.op}.h"])[info.op]
        cpp = files[f"functions/{info.op}.cpp"]
        defs = read_definitions(cpp, info.op)
        outputs = {a.name for a in info.all_saved_outputs}
        members = [(t, n) for t, n in struct.members
                   if n != "retain_variables" and not n.endswith(("_released_", "_size_"))]
        tensors = [n for t, n in members if t in (SAVED_VARIABLE, SAVED_VARIABLE_LIST)]
        assert all(n.endswith("_") for n in tensors), (info.op, tensors)
        # one member per saved value: a tensor (list) as `<name>_`, the rest by name
        assert sorted(n[:-1] if n in tensors else n for _, n in members) == \
            sorted(a.name for a in info.all_saved_inputs + info.all_saved_outputs), info.op
        for t, n in members:
            if t == SAVED_VARIABLE:
                assert f"{n}.reset_data();" in struct.release, (info.op, n)
            if t == SAVED_VARIABLE_LIST:
                assert f"{n}.clear();" in struct.release, (info.op, n)
                assert f"{n[:-1]}_released_ = true;" in struct.release, (info.op, n)
            flag = f", {'true' if n[:-1] in outputs else 'false'}" if n in tensors else ""
            assert f"args.collect({n}{flag});" in defs.collects, (info.op, n)
            for step in ("before", "after"):   # torch's own call, or its instantiation in support.cpp
                assert re.search(rf"(saved\.{step}\(|ca_{step}<.*>\(saved, ){n}\);", cpp), \
                    (info.op, n, step)
        if not tensors:
            assert not any("reset_data" in r or "_.clear()" in r for r in struct.release), info.op


def test_each_gradient_slot_uses_its_formula():
    files = our_files(OPTS)
    for info in our_op_infos():
        defs = read_definitions(files[f"functions/{info.op}.cpp"], info.op)
        assert len(defs.formulas) == len(info.derivatives), info.op
        for d, emitted in zip(info.derivatives, defs.formulas):
            assert emitted in (d.formula, f"any_grad_defined ? ({d.formula}) : Tensor()"), info.op
        # each differentiable input gets its slot from exactly its own formula
        assert sorted(name for name, _ in defs.copies) == \
            sorted(n for d in info.derivatives for n in d.var_names), info.op


def test_every_compiled_autograd_step_called_through_support_is_instantiated_there():
    """A Function's file calls `ca_<step><T>(...)` for the common types (or
    lists `&ca_packed_type<T>` in its schema table), which
    only support.cpp defines (codegen/emit/functions/support.py): a call without its
    explicit instantiation there would fail the link of every library."""
    files = our_files(OPTS)
    calls = {(step, t) for rel, text in files.items() if rel.startswith("functions/")
             for step, t in re.findall(r"\bca_(\w+)<(.+?)>[(,]", text)}   # a call, or a schema table's entry
    assert {step for step, _ in calls} == {"collect", "collect_saved", "before", "after", "pack", "unpack",
                                           "packed_type"}
    instantiated = {line for line in files["support.cpp"].splitlines() if line.startswith("template ")}
    missing = sorted((s, t) for s, t in calls if not any(f" ca_{s}<{t}>(" in line for line in instantiated))
    assert missing == []
    # and other types still call torch's templates themselves
    assert any("packed_args.unpack<" in text for rel, text in files.items() if rel.startswith("functions/"))


def test_compiled_autograd_binds_through_support_with_a_schema_table():
    """Each Function binds its backward once through support.cpp's
    compiled_autograd_bind, its schema a constant table with one packed-type
    function per argument (the mask first): the vector and the bind call
    compiled inline were ~35% of apply_with_saved's code."""
    files = our_files(OPTS)
    for info in our_op_infos():
        text = files[f"functions/{info.op}.cpp"]
        assert "std::vector<at::TypePtr>" not in text and "bind_function" not in text, info.op
        table = re.search(r"static constexpr PackedTypeOf schema\[\] = \{\n(.*?)\n\s*\};", text, re.S)
        assert table, info.op
        entries = [e.strip() for e in table.group(1).splitlines()]
        assert all(e.startswith("&") and e.endswith("packed_type,") or e.startswith("&ca_packed_type<")
                   for e in entries), (info.op, entries)
        args = re.search(r"_apply_functional\(\n\s*variable_list&& grads,\n(.*?)\) \{", text, re.S).group(1)
        assert len(entries) == args.count("\n") + 1, info.op   # needs_input_grad, then each argument
        assert f"compiled_autograd_bind(saved, compiled_autograd_bind_key, {info.op}_apply_functional_ivalue, " \
            "schema, std::size(schema));" in text, info.op
    assert "void compiled_autograd_bind(" in files["support.cpp"]
    assert "bind_function(" in files["support.cpp"]
