"""The Python bindings of the generated Functions: the binding units and
shards (binding_units.py) and the read-only properties of saved values
(properties.py), as torchgen's python_functions do for ATen's."""
