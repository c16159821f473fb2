auto results = ${rule}(${args});
return ${results};
