"""The incremental engine: the specs' units and their keys (units, keys),
what was generated from what (manifest, reasons), the compile layout and
its files (layout, unity_files), the writer, the parse cache
(native_cache, native_records), the update itself (incremental) and its
report (update_report); the request every entry point builds
(functions_request) and a patch's selection (patch_selection).  The
output folder's lock and the checks of a library linked from it are
build_folder/'s, below the engine.

May import: every stage (model/, parse/, emit/, templates/), errors, tree.
"""
