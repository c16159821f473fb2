using namespace torch::autograd::generated::details;
