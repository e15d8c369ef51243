// Fixture functions for symbolizer_test: a plain C function, two levels of always_inline callees
// inlined into a caller, and a namespaced C++ function. Each records the line of its capture call.
#include "fixture.h"

// Sets `slot` to the line of the macro's use and captures the return address of that call.
#define CAPTURE(slot) (fixture_lines.slot = __LINE__, fixture_capture())

extern "C" {
FixtureLines fixture_lines;
uintptr_t fixture_return_address;

__attribute__((noinline)) void fixture_capture() {
  fixture_return_address = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  // Keeps the call from being folded into its callers.
  asm volatile("" ::: "memory");
}
}

namespace gmh_fixture {
// The asm statements after each capture call keep it from becoming a tail call, whose return
// address would point into the caller's caller.
namespace {
// Internal linkage: GCC writes no linkage name, so the symbolizer qualifies the name itself.
inline __attribute__((always_inline)) void capture_inlined() {
  CAPTURE(inlined_call);
  asm volatile("" ::: "memory");
}
}  // namespace

// Two levels of inlining: fixture_with_inline <- triple <- capture_inlined.
inline __attribute__((always_inline)) int triple(int x) {
  fixture_lines.nested_site = __LINE__, capture_inlined();
  asm volatile("" ::: "memory");
  return x * 3;
}

__attribute__((noinline)) int scaled(int x) {
  CAPTURE(namespaced_call);
  asm volatile("" ::: "memory");
  return x * 5;
}
}  // namespace gmh_fixture

extern "C" {
__attribute__((noinline)) int fixture_plain(int x) {
  CAPTURE(plain_call);
  asm volatile("" ::: "memory");
  return x + 1;
}

__attribute__((noinline)) int fixture_with_inline(int x) {
  fixture_lines.inline_site = __LINE__, x = gmh_fixture::triple(x);
  asm volatile("" ::: "memory");
  return x + 1;
}
}
