auto results = op.call(${args});
return ${type}(${results});
