# SConstruct of load() and load_inline() (autograd_scons.jit.loader), run by
# runner.run_scons as `scons -f <this file>` in the build folder: not a
# module to import.  It reads the load() arguments from load_spec.json
# there and builds through the environment `scons` uses (environment.py):
# the same tool, layout, precompiled prelude (by default only where it pays:
# below), CacheDir, LAUNCHER and nvcc.
# Outputs: gen/ (generated), src<k>/ (objects of the sources in each source
# folder), obj/<name>.so (the link; jit.loader renames a copy into place).
import json
import os

from autograd_scons.buildenv import environment, runner, stamp
from autograd_scons.codegen.report import report
from autograd_scons.tool import report as tool_report

DefaultEnvironment(tools=[])

with open("load_spec.json") as f:
    spec = json.load(f)
vars = Variables(None, ARGUMENTS)
environment.add_variables(vars)
env, facts = environment.environment(vars, cuda=lambda env: True)
env.Append(CPPPATH=spec["include_paths"], CXXFLAGS=spec["extra_cflags"],
           NVCCFLAGS=spec["extra_cuda_cflags"], LINKFLAGS=spec["extra_ldflags"],
           CPPDEFINES=[("TORCH_EXTENSION_NAME", spec["name"])])

_staged = {}  # source folder -> its variant folder here (objects land in the build folder)


def staged(path):
    folder = os.path.dirname(path)
    if folder not in _staged:
        _staged[folder] = f"src{len(_staged)}"
        env.VariantDir(_staged[folder], folder, duplicate=False)
    return env.File(os.path.join(_staged[folder], os.path.basename(path)))


cpp = [staged(s) for s in spec["sources"] if not s.endswith(".cu")]
cu = [staged(s) for s in spec["sources"] if s.endswith(".cu")]
# PCH=auto here (load()'s default pch="auto") is the layout's rule
# (codegen/layout.py, prelude_pays): a cold build's TUs take the precompiled
# prelude only when enough of them do for the build to gain, the edit TUs
# always.  `scons`'s own PCH=auto keeps it on for every TU (for its edit
# loop); PCH=0/1 force it.
pch = "auto" if env["PCH"] == "auto" and env["AUTOGRAD_EXAMPLE_PCH"] else env["AUTOGRAD_EXAMPLE_PCH"]
generated = env.AutogradFunctions(
    "gen", native_functions=spec["native_functions"], derivatives=spec["derivatives"], tags=spec["tags"],
    namespace=spec["namespace"], includes=spec["includes"], unity=env["UNITY"],
    pch=pch, python=env["PYTHON"], kernels=spec["kernels"], pch_sources=cpp)
objects = generated + env.CudaObjects(cu)
print(f"{runner.GENERATED_TAG}objects={len(objects)}", flush=True)
if tool_report.REPORT.records:
    print(f"{runner.GENERATED_TAG}generated gen/: {report(tool_report.REPORT.records[-1].result)}",
          flush=True)
lib = env.SharedLibrary(os.path.join("obj", spec["name"]), objects, SHLIBPREFIX="")
# The tool's and the generator's modules count as inputs: the package folder.
package = os.path.dirname(os.path.dirname(os.path.abspath(environment.__file__)))
stamp.record_inputs(lib, stamp.INPUTS,
                     extra=["load_spec.json", os.path.join(package, "jit", "sconstruct.py")]
                     + [p for p in (spec["native_functions"], spec["derivatives"], spec["tags"]) if p],
                     code_roots=[package])
Default(lib)
