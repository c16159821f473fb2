"""The model, shaped as torchgen's: schemas and their parts (schema,
schema_parts), the C++ types a schema's arguments take (cpp), native
functions (native) and differentiability infos with their derivatives and
saved attributes (autograd).  Frozen dataclasses, built by parse/.

May import: itself, errors.
"""
