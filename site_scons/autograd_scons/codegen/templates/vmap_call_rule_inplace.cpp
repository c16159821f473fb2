${check}
${rule}(${args});
${returns}
