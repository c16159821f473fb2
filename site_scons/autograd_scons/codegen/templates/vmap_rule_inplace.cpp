op.call(${args});
