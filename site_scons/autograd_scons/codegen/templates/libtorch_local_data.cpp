// ${qualified}: libtorch's value, copied as the patch loads
static_assert(sizeof(${qualified}) == ${size}, "${qualified}: the declaration's size is not libtorch's");
extern "C" __attribute__((visibility("hidden"))) unsigned char ${alias}[${size}];
asm(R"(
  .pushsection .data
  .balign 16
  .globl ${symbol}
  .hidden ${symbol}
  .type ${symbol}, @object
  .size ${symbol}, ${size}
  .globl ${alias}
  .hidden ${alias}
${symbol}:
${alias}:
  .zero ${size}
  .popsection
)");
