// ${why}
${ret} ${name}(${params}) {
  ${lookup}
  return op.call(${args});
}
