"""Hostile and unlucky inputs: each gets one located line and a non-zero exit,
or (for build facts) a different signature; never a traceback, a hang or
half-written output."""

import os
import sys

import pytest
import SCons.Environment
import SCons.Subst

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "site_scons"))
import torch_flags  # noqa: E402

# ------------------------------------------------ compile signature facts

PY311 = {"SOABI": "cpython-311-x86_64-linux-gnu", "py_version_nodot": "311", "ABIFLAGS": ""}
PY312 = {"SOABI": "cpython-312-x86_64-linux-gnu", "py_version_nodot": "312", "ABIFLAGS": ""}
PY313T = {"SOABI": "cpython-313t-x86_64-linux-gnu", "py_version_nodot": "313", "ABIFLAGS": "t"}
TORCH = {"root": "/opt/a/site-packages/torch", "abi": 1, "version": "2.13.0+cpu"}


def compile_signature(monkeypatch, python=PY311, torch=TORCH, include="/opt/a/include/python3.11"):
    """The signed compile command line of an env configured by torch_flags,
    with the Python and torch facts faked."""
    real_var, real_paths = torch_flags.sysconfig.get_config_var, torch_flags.sysconfig.get_paths
    monkeypatch.setattr(torch_flags.sysconfig, "get_config_var",
                        lambda name: python[name] if name in python else real_var(name))
    monkeypatch.setattr(torch_flags.sysconfig, "get_paths", lambda *a, **k: dict(real_paths(), include=include))
    monkeypatch.setattr(torch_flags, "torch_facts", lambda cache_path: dict(torch))
    env = SCons.Environment.Environment(tools=["g++"], ENV={})
    torch_flags.configure(env, "unused.json")
    monkeypatch.undo()
    return env.subst("$SHCXXCOM", SCons.Subst.SUBST_SIG)


def test_python_version_is_in_the_compile_signature(monkeypatch):
    base = compile_signature(monkeypatch)
    assert compile_signature(monkeypatch, python=PY312) != base


def test_python_abi_flags_are_in_the_compile_signature(monkeypatch):
    py313 = dict(PY313T, SOABI="cpython-313-x86_64-linux-gnu", ABIFLAGS="")
    assert compile_signature(monkeypatch, python=PY313T) != compile_signature(monkeypatch, python=py313)


@pytest.mark.parametrize("change", [{"abi": 0}, {"version": "2.14.0+cpu"}])
def test_torch_facts_are_in_the_compile_signature(monkeypatch, change):
    assert compile_signature(monkeypatch, torch=dict(TORCH, **change)) != compile_signature(monkeypatch)


def test_install_folders_are_not_in_the_compile_signature(monkeypatch):
    # A CacheDir shared by checkouts (and installs) in other folders keeps hitting.
    base = compile_signature(monkeypatch)
    elsewhere = compile_signature(monkeypatch, torch=dict(TORCH, root="/home/b/venv/torch"),
                                  include="/home/b/include/python3.11")
    assert elsewhere == base
    assert "/opt/a" not in base
