"""The incremental engine: the specs' units and their keys (units, keys),
what was generated from what (manifest, reasons), the compile layout and
its files (layout, unity_files), the writer, the parse cache
(native_cache, native_records), the update itself (incremental) and its
report (update_report); the request every entry point builds
(functions_request) and a patch's selection (patch_selection).  And the
output folder's machinery that the SCons tool, load() and shipping share
with the generator's own command line: the folder's lock (lock), the check
of a linked library's kernels (kernel_check) and the weakened copies of
overridden buckets (weaken).

May import: every stage (api/, spec/, emit/, templates/), errors, tree.
"""
