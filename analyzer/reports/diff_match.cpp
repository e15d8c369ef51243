// Matching sites and processes between two runs (see diff_match.h).
#include "analyzer/reports/diff_match.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "analyzer/log/name_table.h"
#include "analyzer/output/text_format.h"

namespace gmemhook::analysis {

std::string frame_match_key(const Frame& f, bool lines) {
  // A unit separator keeps "a" + "bc" apart from "ab" + "c".
  constexpr char kSep = '\x1f';
  std::string key;
  if (f.python) {
    key = "py" + std::string(1, kSep) + f.file.value_or("") + kSep + f.function.value_or("");
  } else if (f.function) {
    key =
        "fn" + std::string(1, kSep) + *f.function + kSep + (f.file ? *f.file : base_name(f.module));
  } else if (!f.module.empty()) {
    key = fmt::format("off{}{}{}{:x}", kSep, base_name(f.module), kSep, f.module_offset);
  } else {
    key = fmt::format("pc{}{:x}", kSep, f.address);
  }
  if (lines && f.line) key += fmt::format("{}{}", kSep, *f.line);
  return key;
}

std::string stack_match_key(const std::vector<Frame>& frames, bool lines) {
  std::string key;
  for (const Frame& f : frames) key += frame_match_key(f, lines) + '\x1e';
  return key;
}

SiteStatus site_status(const SiteDiff& d) {
  if (d.base_count == 0 && d.base_bytes == 0) return SiteStatus::New;
  if (d.new_count == 0 && d.new_bytes == 0) return SiteStatus::Gone;
  if (d.new_bytes > d.base_bytes) return SiteStatus::Grown;
  if (d.new_bytes < d.base_bytes) return SiteStatus::Shrunk;
  return SiteStatus::Same;
}

const char* status_name(SiteStatus status) {
  return name_in(status, {"grown", "shrunk", "new", "gone", "same"});
}

std::vector<SiteDiff> diff_sites(const DeviceSites* base, const DeviceSites* now, bool lines) {
  std::map<std::string, SiteDiff> by_key;
  auto add = [&](const DeviceSites* side, bool is_new) {
    if (!side) return;
    for (const SiteFrames& s : side->sites) {
      SiteDiff& d = by_key[stack_match_key(s.frames, lines)];
      if (is_new || d.frames.empty()) d.frames = s.frames;
      (is_new ? d.new_bytes : d.base_bytes) += s.bytes;
      (is_new ? d.new_count : d.base_count) += s.count;
    }
  };
  add(base, false);
  add(now, true);
  std::vector<std::pair<std::string, SiteDiff>> sorted(by_key.begin(), by_key.end());
  for (auto& [key, d] : sorted) d.status = site_status(d);
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    const uint64_t da = uint64_t(std::abs(a.second.delta()));
    const uint64_t db = uint64_t(std::abs(b.second.delta()));
    if (da != db) return da > db;
    if (a.second.new_bytes != b.second.new_bytes) return a.second.new_bytes > b.second.new_bytes;
    return a.first < b.first;
  });
  std::vector<SiteDiff> out;
  out.reserve(sorted.size());
  for (auto& [key, d] : sorted) out.push_back(std::move(d));
  return out;
}

std::vector<DiffRow> diff_rows(const std::vector<SiteDiff>& sites, GroupBy by) {
  std::vector<DiffRow> rows;
  std::unordered_map<std::string, size_t> row_of;
  for (const SiteDiff& s : sites) {
    const std::string key = row_key(s.frames, by);
    size_t r = rows.size();
    if (!key.empty()) r = row_of.try_emplace(key, rows.size()).first->second;
    if (r == rows.size()) {
      rows.emplace_back();
      rows.back().total.frames = s.frames;
    }
    DiffRow& row = rows[r];
    row.members.push_back(&s);
    row.total.base_bytes += s.base_bytes;
    row.total.new_bytes += s.new_bytes;
    row.total.base_count += s.base_count;
    row.total.new_count += s.new_count;
  }
  for (DiffRow& row : rows) row.total.status = site_status(row.total);
  // As diff_sites() orders sites; rows of one site keep the sites' order.
  std::stable_sort(rows.begin(), rows.end(), [](const DiffRow& a, const DiffRow& b) {
    const uint64_t da = uint64_t(std::abs(a.total.delta()));
    const uint64_t db = uint64_t(std::abs(b.total.delta()));
    if (da != db) return da > db;
    return a.total.new_bytes > b.total.new_bytes;
  });
  return rows;
}

std::vector<std::pair<int, int>> pair_processes(const std::vector<ProcessSites>& base,
                                                const std::vector<ProcessSites>& now) {
  std::vector<std::pair<int, int>> pairs;
  // One process each: the user named the two runs to compare, whatever the executables.
  if (base.size() == 1 && now.size() == 1) return {{0, 0}};
  std::vector<bool> taken(now.size(), false);
  // By rank first: a torchrun job's rank N does the same work in both runs, whatever its pid.
  std::vector<bool> paired(base.size(), false);
  for (size_t i = 0; i < base.size(); ++i) {
    if (base[i].rank.empty()) continue;
    for (size_t j = 0; j < now.size(); ++j)
      if (!taken[j] && now[j].rank == base[i].rank) {
        pairs.push_back({int(i), int(j)});
        taken[j] = paired[i] = true;
        break;
      }
  }
  // Then by executable, in pid order (the order the sides were read in).
  for (size_t i = 0; i < base.size(); ++i) {
    if (paired[i]) continue;
    for (size_t j = 0; j < now.size(); ++j)
      if (!taken[j] && base_name(now[j].exe) == base_name(base[i].exe)) {
        pairs.push_back({int(i), int(j)});
        taken[j] = paired[i] = true;
        break;
      }
    if (!paired[i]) pairs.push_back({int(i), -1});
  }
  for (size_t j = 0; j < now.size(); ++j)
    if (!taken[j]) pairs.push_back({-1, int(j)});
  // In the base run's order, processes only in the new run last.
  std::stable_sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) {
    return unsigned(a.first) < unsigned(b.first);
  });
  return pairs;
}

}  // namespace gmemhook::analysis
