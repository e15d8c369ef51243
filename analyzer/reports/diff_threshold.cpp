// Parsing and checking --fail-above (see diff_threshold.h).
#include "analyzer/reports/diff_threshold.h"

#include <cctype>

namespace gmemhook::analysis {

namespace {

// "12.5" as 125 / 10^1; nullopt unless digits with at most one point (at most 18 digits).
std::optional<std::pair<uint64_t, uint32_t>> parse_decimal(const std::string& s) {
  uint64_t value = 0;
  uint32_t scale = 0, digits = 0;
  bool point = false;
  for (char c : s) {
    if (c == '.' && !point) {
      point = true;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c)) || ++digits > 18) return std::nullopt;
    value = value * 10 + uint64_t(c - '0');
    if (point) ++scale;
  }
  if (digits == 0) return std::nullopt;
  return std::make_pair(value, scale);
}

uint64_t pow10(uint32_t n) {
  uint64_t p = 1;
  while (n--) p *= 10;
  return p;
}

}  // namespace

std::optional<GrowthLimit> parse_growth_limit(const std::string& text) {
  GrowthLimit limit;
  limit.text = text;
  std::string s;
  for (char c : text)
    if (c != ' ') s += c;
  if (s.ends_with("%")) {
    auto d = parse_decimal(s.substr(0, s.size() - 1));
    // Six decimals at most keeps the exact comparison within 128 bits.
    if (!d || d->second > 6) return std::nullopt;
    limit.percent = true;
    limit.numerator = d->first;
    limit.scale = d->second;
    return limit;
  }
  struct Unit {
    const char* suffix;
    uint64_t factor;
  };
  static const Unit kUnits[] = {
      {"KiB", 1ull << 10},   {"MiB", 1ull << 20},      {"GiB", 1ull << 30},
      {"TiB", 1ull << 40},   {"KB", 1000ull},          {"MB", 1000000ull},
      {"GB", 1000000000ull}, {"TB", 1000000000000ull}, {"B", 1}};
  // A bare number is refused: "5" could mean 5% as easily as 5 bytes.
  uint64_t factor = 0;
  for (const Unit& u : kUnits)
    if (s.ends_with(u.suffix)) {
      factor = u.factor;
      s.resize(s.size() - std::char_traits<char>::length(u.suffix));
      break;
    }
  if (factor == 0) return std::nullopt;
  auto d = parse_decimal(s);
  if (!d) return std::nullopt;
  const unsigned __int128 bytes = (unsigned __int128)d->first * factor / pow10(d->second);
  if (bytes > UINT64_MAX) return std::nullopt;
  limit.bytes = uint64_t(bytes);
  return limit;
}

bool exceeds(const GrowthLimit& limit, uint64_t base, uint64_t now) {
  if (now <= base) return false;
  const uint64_t growth = now - base;
  if (!limit.percent) return growth > limit.bytes;
  // growth / base * 100 > numerator / 10^scale, without rounding; from nothing, any growth is
  // more than any percentage.
  if (base == 0) return true;
  return (unsigned __int128)growth * 100 * pow10(limit.scale) >
         (unsigned __int128)limit.numerator * base;
}

}  // namespace gmemhook::analysis
