// ${qualified}
asm(R"(
  .pushsection .text
  .p2align 4
  .globl ${symbol}
  .hidden ${symbol}
  .type ${symbol}, @function
${symbol}:
  jmp *autograd_scons_libtorch_locals+${slot_offset}(%rip)
  .size ${symbol}, .-${symbol}
  .popsection
)");
