// A fixture function built without debug info: the symbolizer names it from the ELF symbol
// table and warns once that the library has no file:line.
#include "fixture.h"

extern "C" __attribute__((noinline)) int fixture_nodebug(int x) {
  fixture_capture();
  // Keeps the call from becoming a tail call (its return address would leave this library).
  asm volatile("" ::: "memory");
  return x + 7;
}
