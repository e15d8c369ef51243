// The process the `rows` tests of `leaks` and `peak` read (leak_rows_test, peak_rows_test): three
// stacks through cuBLAS into the program's one line (0x1100), two differing only in cuBLAS's
// frames; a stack of cuBLAS frames only; a smaller line of the program (0x1200). Rows by line:
// 0x1100 with 40 MiB in 3 allocations of 2 stacks, the cuBLAS-only stack's 12 MiB, 0x1200's 2 MiB.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "report_scenario.h"

namespace gmemhook::test_logs {

struct SiteRowsScenario {
  static constexpr uint64_t kMiB = 1 << 20;
  static constexpr uint64_t kApp = Scenario::kModuleBias;
  static constexpr uint64_t kCublas = 0x10000000;            // the first library's load address
  static constexpr uint64_t kOtherAddress = 0x7f0004000000;  // 0x1200's allocation

  Scenario s{300, "train"};
  uint32_t other = 0;  // 0x1200's stack

  SiteRowsScenario() {
    using format::ApiId;
    s.add_library("/venv/nvidia/cu13/lib/libcublas.so.13");
    const uint32_t via_a = s.stack(301, {kCublas + 0x10, kApp + 0x1100, kApp + 0x1900});
    const uint32_t via_b = s.stack(301, {kCublas + 0x20, kApp + 0x1100, kApp + 0x1900});
    const uint32_t inside = s.stack(301, {kCublas + 0x30, kCublas + 0x40});
    other = s.stack(301, {kApp + 0x1200, kApp + 0x1900});
    s.alloc(301, ApiId::cudaMalloc, 0x7f0000000000, 16 * kMiB, 0, via_a);
    s.alloc(301, ApiId::cudaMalloc, 0x7f0001000000, 16 * kMiB, 0, via_a);
    s.alloc(301, ApiId::cudaMalloc, 0x7f0002000000, 8 * kMiB, 0, via_b);
    s.alloc(301, ApiId::cudaMalloc, 0x7f0003000000, 12 * kMiB, 0, inside);
    s.alloc(301, ApiId::cudaMalloc, kOtherAddress, 2 * kMiB, 0, other);
  }
};

// Each of the JSON `rows` is a row of the text report, in order from `from`: its heading `where`
// follows `lead` (the text's "... from:" line and the indentation of the heading).
inline void expect_rows_in_text(const std::string& text, const nlohmann::json& rows,
                                const std::string& lead, size_t from = 0) {
  size_t at = from;
  for (const nlohmann::json& row : rows) {
    const std::string heading = lead + row["where"].get<std::string>() + "\n";
    const size_t found = text.find(heading, at);
    EXPECT_NE(found, std::string::npos) << heading << "\nin order in\n" << text;
    if (found != std::string::npos) at = found + heading.size();
  }
}

}  // namespace gmemhook::test_logs
