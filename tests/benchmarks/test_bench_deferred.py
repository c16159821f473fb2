"""benchmarks/bench_deferred.py's reading of GCC's `-fdump-tree-original`:
the bodies it lists, the class template each belongs to, and the
`std::_Hashtable` declarations it writes from them.  The benchmark itself
(a precompile and a dozen compiles) is not run here."""

import importlib.util
import os
import sys

from support.spec_facts import REPO

sys.path.insert(0, os.path.join(REPO, "benchmarks"))  # its `from bench_prelude import ...`
_spec = importlib.util.spec_from_file_location("bench_deferred", os.path.join(REPO, "benchmarks", "bench_deferred.py"))
deferred = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(deferred)

_HT = ("std::_Hashtable<_Key, _Value, _Alloc, _ExtractKey, _Equal, _Hash, _RangeHash, _Unused, _RehashPolicy, "
       "_Traits>")
_BINDINGS = ("_Key = const int*; _Value = std::pair<const int* const, long unsigned int>; "
             "_Alloc = std::allocator<std::pair<const int* const, long unsigned int> >; "
             "_ExtractKey = std::__detail::_Select1st; _Equal = std::equal_to<const int*>; "
             "_Hash = std::hash<const int*>; _RangeHash = std::__detail::_Mod_range_hashing; "
             "_Unused = std::__detail::_Default_ranged_hash; _RehashPolicy = std::__detail::_Prime_rehash_policy; "
             "_Traits = std::__detail::_Hashtable_traits<false, false, true>; size_type = long unsigned int")
DUMP = f"""
;; Function constexpr void std::vector<_Tp, _Alloc>::push_back(value_type&&) [with _Tp = c10::IValue; _Alloc = std::allocator<c10::IValue>] (null)
;; enabled by -tree-original
{{ body; }}

;; Function void {_HT}::_M_rehash(size_type, const __rehash_state&) [with {_BINDINGS}] (null)
{{ a longer body; }}

;; Function {_HT}::~_Hashtable() [with {_BINDINGS}] (null)
{{ }}

;; Function constexpr std::vector<_Tp, _Alloc>::size_type std::vector<_Tp, _Alloc>::size() const [with _Tp = long int; _Alloc = std::allocator<long int>; size_type = long unsigned int] (null)
{{ }}

;; Function constexpr bool std::operator<(const pair<_T1, _T2>&, const pair<_T1, _T2>&) [with _T1 = int; _T2 = int] (null)
{{ }}

;; Function c10::intrusive_ptr<TTarget, NullType>::~intrusive_ptr() [with TTarget = c10::TensorImpl; NullType = c10::detail::intrusive_target_default_null_type<c10::TensorImpl>] (null)
{{ }}
"""  # noqa: E501 (GCC's lines, as it writes them)


def test_each_dumped_body_is_listed_once_with_its_bindings():
    found = deferred.bodies(DUMP)
    assert len(found) == 6
    assert found[0][1] == "_Tp = c10::IValue; _Alloc = std::allocator<c10::IValue>"
    assert all(n > 0 for *_, n in found)


def test_a_member_const_or_not_belongs_to_its_class_template_and_an_operator_to_its_namespace():
    owners = [deferred.owner(sig) for sig, _, _ in deferred.bodies(DUMP)]
    assert owners == ["std::vector", "std::_Hashtable", "std::_Hashtable", "std::vector", "std",
                      "c10::intrusive_ptr"]


def test_one_hashtable_declaration_per_specialisation_spelled_with_its_parameters():
    text = deferred.hashtables(deferred.bodies(DUMP))
    declarations = [line for line in text.splitlines() if line.startswith("extern template class")]
    assert declarations == [
        "extern template class std::_Hashtable<const int*, std::pair<const int* const, long unsigned int>, "
        "std::allocator<std::pair<const int* const, long unsigned int> >, std::__detail::_Select1st, "
        "std::equal_to<const int*>, std::hash<const int*>, std::__detail::_Mod_range_hashing, "
        "std::__detail::_Default_ranged_hash, std::__detail::_Prime_rehash_policy, "
        "std::__detail::_Hashtable_traits<false, false, true>>;"]
