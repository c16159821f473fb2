# SConstruct of load() and load_inline() (autograd_scons.jit.loader), run by
# runner.run_scons as `scons -f <this file>` in the build folder: not a
# module to import.  It reads the load() call's request (jit/load_request.py,
# LoadRequest) from load_spec.json there and builds through the environment
# `scons` uses (environment.py): the same tool, layout, precompiled prelude
# policy, CacheDir, LAUNCHER and nvcc.
# Outputs: gen/ (generated), src<k>/ (objects of the sources in each source
# folder), obj/<name>.so (the link; jit.loader renames a copy into place).
import json
import os

from autograd_scons.buildenv import environment, runner, up_to_date
from autograd_scons.codegen.engine.update_summary import report
from autograd_scons.jit.load_request import LoadRequest
from autograd_scons.tool import closing_lines as tool_report

DefaultEnvironment(tools=[])

with open("load_spec.json") as f:
    request = LoadRequest.from_spec(json.load(f))
vars = Variables(None, ARGUMENTS)
environment.add_variables(vars)
env, facts = environment.environment(vars, cuda=lambda env: True)
env.Append(CPPPATH=list(request.include_paths), CXXFLAGS=list(request.extra_cflags),
           NVCCFLAGS=list(request.extra_cuda_cflags), LINKFLAGS=list(request.extra_ldflags),
           CPPDEFINES=[("TORCH_EXTENSION_NAME", request.name)])

_staged = {}  # source folder -> its variant folder here (objects land in the build folder)


def staged(path):
    folder = os.path.dirname(path)
    if folder not in _staged:
        _staged[folder] = f"src{len(_staged)}"
        env.VariantDir(_staged[folder], folder, duplicate=False)
    return env.File(os.path.join(_staged[folder], os.path.basename(path)))


cpp = [staged(s) for s in request.sources if not s.endswith(".cu")]
cu = [staged(s) for s in request.sources if s.endswith(".cu")]
generated = env.AutogradFunctions("gen", request=request.functions, pch_sources=cpp)
objects = generated + env.CudaObjects(cu)
print(f"{runner.GENERATED_TAG}objects={len(objects)}", flush=True)
if tool_report.REPORT.records:
    print(f"{runner.GENERATED_TAG}generated gen/: {report(tool_report.REPORT.records[-1].result)}",
          flush=True)
lib = env.SharedLibrary(os.path.join("obj", request.name), objects, SHLIBPREFIX="")
# The tool's and the generator's modules count as inputs (up_to_date.tool_code_roots).
package = os.path.dirname(os.path.dirname(os.path.abspath(environment.__file__)))
up_to_date.record_inputs(lib, up_to_date.INPUTS,
                     extra=["load_spec.json", os.path.join(package, "jit", "sconstruct.py")]
                     + [p for p in (request.functions.native_functions, request.functions.derivatives,
                                    request.functions.tags, request.functions.python_helpers) if p],
                     code_roots=up_to_date.tool_code_roots())
Default(lib)
