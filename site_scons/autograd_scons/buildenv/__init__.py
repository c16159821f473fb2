"""The build environment of every build this project runs: `scons` in a
checkout, load()'s and a project's SConstruct (environment.py: compiler,
torch's and CUDA's flags, the verified CacheDir, the launcher), and the
machinery of builds started from Python: the one SCons runner and its
"up to date" stamp (runner.py), the build folder's lock (site_scons/autograd_scons/base/lock.py),
its ownership checks (private_folder.py) and the recovery after a build
that never finished (unfinished_build.py).

May import: SCons (in the SCons process only), the tool, the generator.
Not load() or shipping, which build on it, nor torch (torch_flags.py reads
its facts in a subprocess).  private_folder.py is below the tool: it
imports only the generator's errors and lock, so that the tool may use it
(tool/__init__.py).  tests/lint/test_import_cycles.py checks this.
"""
