_own_helpers = _beside("${helpers}")   # the formulas' own helpers (a copy of ${file})
