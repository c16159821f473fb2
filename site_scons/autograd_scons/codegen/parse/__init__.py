"""Parsing: native_functions.yaml, tags.yaml and derivatives.yaml into the
model of model/ (yaml_io, native_functions, load_derivatives with matching,
saved_attributes and grad_usage), the foreach infos torch's build derives
(foreach), and libtorch's installed class declarations (libtorch_classes).

May import: model/, errors, tree.
"""
