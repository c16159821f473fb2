check_inplace(self, _any_requires_grad);
