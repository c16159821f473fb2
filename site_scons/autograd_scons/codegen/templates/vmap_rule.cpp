// The batch rule of ${op} (`vmap: ${kind}`):
// ${what}
${ret} ${name}(${params}) {
  ${prepare}
  ${operands}
  ${lookup}
  ${body}
}
