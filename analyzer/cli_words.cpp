// Nearest-word suggestions and number checks for the command line (see cli_words.h).
#include "analyzer/cli_words.h"

#include <algorithm>

namespace gmemhook::analysis {

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string expected(const std::string& what, const std::string& value) {
  return "expected " + what + ", not '" + value + "'";
}

}  // namespace

std::string nearest_word(const std::string& typed, const std::vector<std::string>& known) {
  std::string best;
  size_t best_distance = 3;
  for (const std::string& k : known) {
    const size_t d = typed.size() >= 2 && k.starts_with(typed) ? 1 : edit_distance(typed, k);
    if (d < best_distance) {
      best = k;
      best_distance = d;
    }
  }
  return best;
}

std::function<std::string(const std::string&)> whole_number(const std::string& what) {
  return [what](const std::string& v) {
    const bool ok = !v.empty() && v.size() <= 18 &&
                    std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
    return ok ? std::string() : expected(what, v);
  };
}

std::function<std::string(const std::string&)> decimal_number(const std::string& what) {
  return [what](const std::string& v) {
    size_t digits = 0, points = 0;
    for (char c : v) {
      if (c >= '0' && c <= '9')
        ++digits;
      else if (c == '.')
        ++points;
      else
        return expected(what, v);
    }
    return digits && points <= 1 && v.size() <= 24 ? std::string() : expected(what, v);
  };
}

}  // namespace gmemhook::analysis
