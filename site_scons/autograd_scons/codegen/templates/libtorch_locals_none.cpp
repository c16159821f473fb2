${banner}
// The patch's formulas use none of the definitions libtorch keeps local
// (site_scons/autograd_scons/torch_patch/libtorch_locals.py): nothing to reach.
