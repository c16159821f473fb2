# SConstruct of `patch-torch` (autograd_scons.torch_patch.build), run by
# runner.run_scons as `scons -f <this file>` in the patch's folder: not a
# module to import.  It reads the request (patch_spec.json there, written by
# build.py) and builds through the environment every build uses
# (buildenv/environment.py): the same tool, layout, precompiled prelude,
# CacheDir and LAUNCHER.  The generator runs in patch mode (codegen/engine/patch_selection.py:
# which Functions, and the refusals, before anything compiles).
# Outputs: gen/ (generated), src0/ (FunctionsManual.cpp's object, with
# --functions-manual), locals/ (the TU reaching libtorch's local definitions
# the objects use), obj/libautograd_torch_patch.so (build.py publishes a copy).
import json
import os

from autograd_scons.buildenv import environment, runner, up_to_date
from autograd_scons.codegen.engine.update_summary import report
from autograd_scons.codegen.engine.functions_request import FunctionsRequest
from autograd_scons.torch_patch import reach_locals
from autograd_scons.torch_patch.build import FACTS, LABEL, LIBRARY, PYTHON_LIBRARY, SPEC
import SCons.Errors
from autograd_scons.tool import closing_lines as tool_report

DefaultEnvironment(tools=[])

with open(SPEC) as f:
    spec = json.load(f)
request = FunctionsRequest.from_json(spec["functions"])
vars = Variables(None, ARGUMENTS)
environment.add_variables(vars)
env, facts = environment.environment(vars, cuda=lambda env: False)
# Every symbol resolved at the link: a patch using something libtorch keeps
# local fails here, with its name, never when a program preloads it.
env.Append(LINKFLAGS=["-Wl,-z,defs"])

own = []
if spec["functions_manual"]:
    env.VariantDir("src0", os.path.dirname(spec["functions_manual"]), duplicate=False)
    own.append(env.File(os.path.join("src0", os.path.basename(spec["functions_manual"]))))
# (TUs or objects: the TUs compiled here, to read the objects' symbols)
objects = [o if str(o).endswith(env.subst("$SHOBJSUFFIX")) else env.SharedObject(o)[0]
           for o in env.AutogradFunctions("gen", request=request, pch_sources=own)]
# The Python types of the patch's own classes: a library of their own, which
# the patch loads once torch's Python module runs (templates/patch_check.cpp).
bindings = [o for o in objects if os.path.normpath(str(o)).startswith(os.path.join("gen", "python") + os.sep)]
objects = [o for o in objects if o not in bindings]


def _reach_locals(target, source, env):
    """locals/libtorch_locals.cpp: what the objects use of the definitions
    libtorch keeps local, reached through its symbol table (libtorch_locals.py)."""
    try:
        reach_locals.write_source(target[0].abspath, [o.abspath for o in objects], source[0].abspath)
    except reach_locals.LocalError as e:
        raise SCons.Errors.BuildError(node=target[0], errstr=f"{LABEL}: {e}", exitstatus=2)
    return 0


# Not generated from the specs: from the compiled objects' undefined symbols.
reach = env.Command(os.path.join("locals", "libtorch_locals.cpp"), FACTS,
                    Action(_reach_locals, "reaching libtorch's local definitions: $TARGET"))
env.Depends(reach, objects)
reached = env.SharedObject(os.path.join("locals", "libtorch_locals.os"), reach)
print(f"{runner.GENERATED_TAG}objects={len(objects) + len(reached)}", flush=True)
if tool_report.REPORT.records:
    print(f"{runner.GENERATED_TAG}generated gen/: {report(tool_report.REPORT.records[-1].result)}",
          flush=True)
lib = env.SharedLibrary(os.path.join("obj", LIBRARY), objects + reached, SHLIBPREFIX="", SHLIBSUFFIX="")
package = os.path.dirname(os.path.dirname(os.path.abspath(environment.__file__)))
target = request.emit.patch
up_to_date.record_inputs(lib, up_to_date.INPUTS,
                     extra=[SPEC, os.path.join(package, "torch_patch", "patch_sconstruct.py"), target.functions_h]
                     + [p for p in (request.native_functions, request.derivatives, request.tags,
                                    *target.reference, spec["functions_manual"]) if p],
                     code_roots=up_to_date.tool_code_roots())
if bindings:
    python_lib = env.SharedLibrary(os.path.join("obj", PYTHON_LIBRARY), bindings, SHLIBPREFIX="", SHLIBSUFFIX="",
                                   LIBS=env["LIBS"] + ["torch_python"],
                                   LINKFLAGS=[f for f in env["LINKFLAGS"] if f != "-Wl,-z,defs"])
    Default(python_lib)
Default(lib)
