// `gmemhook diff --fail-above`: how much the new run's peak may exceed the base's before the
// command fails (a CI gate), as a percentage of the base ("5%") or an amount ("64MiB").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gmemhook::analysis {

struct GrowthLimit {
  // Percent: numerator / 10^scale percent, kept exact so "at the threshold" is exact too.
  bool percent = false;
  uint64_t numerator = 0;
  uint32_t scale = 0;
  uint64_t bytes = 0;  // when !percent
  std::string text;    // as the user wrote it, for the message
};

// "5%", "12.5%", "1048576B", "64MiB", "1.5 GiB", "100MB" (KiB/MiB/GiB/TiB: powers of 1024;
// KB/MB/GB/TB: of 1000; B: bytes). nullopt when malformed or without a unit.
std::optional<GrowthLimit> parse_growth_limit(const std::string& text);

// Whether going from `base` to `now` bytes grows by more than `limit` (exactly at it passes).
bool exceeds(const GrowthLimit& limit, uint64_t base, uint64_t now);

}  // namespace gmemhook::analysis
