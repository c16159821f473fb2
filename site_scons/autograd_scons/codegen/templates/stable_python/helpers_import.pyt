_helpers = _beside("${helpers}")   # FunctionsManual's helpers, in Python
