"""Helpers shared by the test modules (none of them is a test module).

Import them as `from support.scons_helpers import scons` or
`from support import example_build`: setup.cfg puts tests/ on sys.path.

  spec_facts           the checkout (REPO) and the counts derived from the specs
                       and torch's installed headers
  scons_helpers        `scons` on copies of this checkout, with the stand-in compiler
  fakecxx, fakenvcc    stand-ins for g++ and nvcc (run as programs, not imported)
  fakeccache           a stand-in for ccache (its cache and statistics), before fakecxx
  scenarios            the edit scenarios on tests/fixtures/tiny_ext, as data
  example_build        the example (specs/) and fixture extensions, built once per session
  extension_checks     the example's ops checked against built-in torch
  cxx                  real compiles of generated C++ against torch's headers
  cuda_helpers         a faked CUDA torch and the CUDA tier's venv
  twin_extensions      two one-op extensions for the namespace-clash tests
  torchgen_reference, functions_reference, python_reference
                       what torchgen and libtorch produce, for comparisons
  netns_hosts          test hosts: network namespaces on veth links, the project's tree hidden
  host_servers         what those hosts run: distccd, Redis, sccache-dist, a server that
                       accepts and closes (accept_and_close, run as a program)
  processes            running processes found by an entry of their environment
"""
