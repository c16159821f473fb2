"""The output folder and what is linked from it, below the engine and its
users (the SCons tool, load(), shipping, patch-torch and the generator's own
command line): the folder's lock (lock), the check that a linked library
defines every kernel the yaml declares (kernel_check), and the weakened
copies of buckets whose units an edit overrides (weaken).

May import: the model, errors, tree.
"""
