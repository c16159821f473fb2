{
  at::AutoDispatchBelowADInplaceOrView guard;
  op.call(${args});
}
