auto _result = ([&]() {
  at::${guard} guard;
  return op.call(${args});
})();
