"""`python -m autograd_scons bench PROJECT`: the cache-hit benchmark of an
extension's builds (command.py), in temporary copies of the project
(project_runs.py), counted from the builds' JSON reports (build_report/).
The project's own benchmarks of the tool are the scripts in benchmarks/.

May import: the build report, the errors' base.  No SCons, no torch: the
builds it times are other processes.
"""
