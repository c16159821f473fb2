"""The incremental engine: the specs' units and their keys (units, keys),
what was generated from what (manifest, reasons), the compile layout and
its files (buckets, unity_files), the writer, the parse cache
(native_cache, native_records), the update itself (incremental) and the
summary line of what it did (update_summary); the request every entry
point builds (functions_request) and a patch's selection (patch_selection,
patch_kernels).  The output folder's lock is the base package's
(base/lock.py); the checks of a library linked from it are the tool's.

May import: every stage (model/, parse/, emit/, templates/), tree, the base package.
"""
