auto _result = ([&]() {
  at::AutoDispatchBelowADInplaceOrView guard;
  return op.call(${args});
})();
