// `gmemhook diff` (see diff_report.h): reads both sides, pairs their processes and devices,
// matches sites by symbol (diff_match.h), and writes text, JSON or two-column folded stacks.
#include "analyzer/reports/diff_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "analyzer/output/format_table.h"
#include "analyzer/output/json_writer.h"
#include "analyzer/output/text_format.h"
#include "analyzer/reports/diff_match.h"
#include "analyzer/reports/diff_sides.h"
#include "analyzer/reports/report_common.h"

namespace gmemhook::analysis {

namespace {

constexpr size_t kTextTop = 10;
// Usage and input errors exit 2, as cmp's and diff's do: 1 means "grew more than allowed".
constexpr int kExitUsage = 2;
constexpr size_t kTextDepth = 8;

// One process of each run (either may be missing) on one device.
struct Comparison {
  const ProcessSites* base = nullptr;
  const ProcessSites* now = nullptr;
  int32_t device = -1;
  uint64_t base_bytes = 0, new_bytes = 0;
  std::vector<SiteDiff> sites;
  bool allocated_layer = false;  // PyTorch's blocks on both sides: tensors compared
  int64_t delta() const { return int64_t(new_bytes) - int64_t(base_bytes); }
};

const DeviceSites* on_device(const ProcessSites* p, int32_t device) {
  if (!p) return nullptr;
  for (const DeviceSites& d : p->devices)
    if (d.device == device) return &d;
  return nullptr;
}

std::vector<Comparison> compare(const std::vector<ProcessSites>& base,
                                const std::vector<ProcessSites>& now, bool lines) {
  std::vector<Comparison> out;
  for (const auto& [i, j] : pair_processes(base, now)) {
    const ProcessSites* b = i >= 0 ? &base[size_t(i)] : nullptr;
    const ProcessSites* n = j >= 0 ? &now[size_t(j)] : nullptr;
    std::set<int32_t> devices;
    for (const ProcessSites* p : {b, n})
      if (p)
        for (const DeviceSites& d : p->devices) devices.insert(d.device);
    for (int32_t device : devices) {
      Comparison c{b, n, device, 0, 0, {}, false};
      const DeviceSites* bd = on_device(b, device);
      const DeviceSites* nd = on_device(n, device);
      if (bd && nd && bd->has_allocated && nd->has_allocated) {
        // Both have PyTorch's blocks: compare the tensors, not the allocator's segments.
        auto tensors = [device](const DeviceSites& d) {
          DeviceSites t;
          t.device = device;
          t.total_bytes = d.allocated_total_bytes;
          t.sites = d.allocated_sites;
          return t;
        };
        const DeviceSites ba = tensors(*bd), na = tensors(*nd);
        c.allocated_layer = true;
        c.base_bytes = ba.total_bytes;
        c.new_bytes = na.total_bytes;
        c.sites = diff_sites(&ba, &na, lines);
        out.push_back(std::move(c));
        continue;
      }
      c.base_bytes = bd ? bd->total_bytes : 0;
      c.new_bytes = nd ? nd->total_bytes : 0;
      c.sites = diff_sites(bd, nd, lines);
      out.push_back(std::move(c));
    }
  }
  return out;
}

// "+8.0 MiB", "-512 B", "0 B".
std::string signed_size(int64_t delta) {
  if (delta == 0) return "0 B";
  const uint64_t magnitude = delta < 0 ? uint64_t(0) - uint64_t(delta) : uint64_t(delta);
  return (delta < 0 ? "-" : "+") + human_size(magnitude);
}

// "+15.4%", or "new" when there was nothing before.
std::string percent_change(uint64_t base, uint64_t now) {
  if (base == 0) return now ? "new" : "+0.0%";
  return fmt::format("{:+.1f}%", 100.0 * (double(now) - double(base)) / double(base));
}

// The growth --fail-above refused: "12.5%", with more decimals where one would read as no more
// than the limit ("5.0%" against "5%").
std::string refused_percent(uint64_t base, uint64_t now, const GrowthLimit& limit) {
  const double pct = 100.0 * (double(now) - double(base)) / double(base);
  std::string s = fmt::format("{:.1f}", pct);
  if (limit.percent) {
    double allowed = double(limit.numerator);
    for (uint32_t i = 0; i < limit.scale; ++i) allowed /= 10;
    if (std::stod(s) <= allowed) s = fmt::format("{:.4f}", pct);
  }
  return s + "%";
}

bool used_device(const std::vector<ProcessSites>& side, int32_t device) {
  for (const ProcessSites& p : side)
    for (int32_t d : p.devices_used)
      if (d == device) return true;
  return false;
}

std::string side_title(const ProcessSites* p) { return p ? p->title : "(no such process)"; }

// The comparison of the two runs, one model for the whole document: text, JSON, or the sites'
// stacks weighed twice (base, new) for two-column folded stacks.
class DiffModel final : public ReportModel {
 public:
  DiffModel(const DiffOptions& options, const std::vector<Comparison>& comparisons)
      : o_(options), comparisons_(comparisons) {}

  void text(std::string& t) const override {
    const char* what = o_.leaks ? "device memory live at the end" : "device memory at the peak";
    t += fmt::format("gmemhook diff: {}, {} -> {}{}\n", what, o_.base_arg, o_.new_arg,
                     o_.match_lines ? " (sites told apart by line too)" : "");
    if (comparisons_.empty()) t += "\nneither run used device memory\n";
    const StackStyle style{o_.native, o_.depth.value_or(kTextDepth),
                           o_.group_by == GroupBy::Function};
    const char* total_name = o_.leaks ? "leaked" : "peak";
    for (const Comparison& c : comparisons_) {
      t += fmt::format("\n{} -> {}, device {}{}\n", side_title(c.base), side_title(c.now), c.device,
                       c.allocated_layer ? ", allocated in PyTorch's blocks (tensors)" : "");
      t += fmt::format("  {:6} base {}\n", total_name, size_and_bytes(c.base_bytes));
      t += fmt::format("  {:6} new  {}\n", total_name, size_and_bytes(c.new_bytes));
      t += fmt::format("  {:6} {} ({})\n", "delta", signed_size(c.delta()),
                       percent_change(c.base_bytes, c.new_bytes));
      t += o_.leaks ? "\nLEAK CHANGES\n" : "\nPEAK MEMORY CHANGES\n";
      // Unchanged sites only when asked for with --top (they sort last: their change is 0).
      const size_t top = o_.top.value_or(kTextTop);
      size_t shown = 0, hidden = 0, same = 0;
      uint64_t same_bytes = 0;
      for (const DiffRow& row : diff_rows(c.sites, o_.group_by)) {
        const SiteDiff& s = row.total;
        if (s.status == SiteStatus::Same && !o_.top) {
          ++same;
          same_bytes += s.new_bytes;
          continue;
        }
        if (top && shown >= top) {
          ++hidden;
          continue;
        }
        ++shown;
        t += fmt::format("  {:>10}  {:6}  {}\n", signed_size(s.delta()), status_name(s.status),
                         site_change(s));
        std::vector<StackShare> stacks;
        for (const SiteDiff* m : row.members)
          stacks.push_back({&m->frames, m->new_bytes ? m->new_bytes : m->base_bytes,
                            m->new_bytes ? m->new_count : m->base_count});
        append_site_stacks(t, stacks, style, "      ");
      }
      if (shown == 0 && hidden == 0) t += "  no site changed\n";
      if (hidden)
        t +=
            fmt::format("  ... and {} more (--top 0 shows all)\n", plural(hidden, "site", "sites"));
      if (same)
        t += fmt::format("  {} unchanged, holding {} (--top N shows them)\n",
                         plural(same, "site", "sites"), human_size(same_bytes));
    }
  }

  // The text's closing hint line.
  std::string next_step() const {
    if (o_.leaks)
      return hint_line("gmemhook leaks " + shell_word(o_.new_arg), "what the new run never freed");
    return hint_line("gmemhook peak " + shell_word(o_.new_arg),
                     "who holds the memory at the new run's peak");
  }

  void json(JsonWriter& j) const override {
    j.begin_object();
    // The first (or only) pair at the top level: what a single-process run needs, flat.
    if (comparisons_.empty())
      write_comparison(j, Comparison{});
    else
      write_comparison(j, comparisons_.front());
    j.field("mode", o_.leaks ? "leaks" : "peak");
    j.field("match_lines", o_.match_lines);
    j.objects("processes", comparisons_, [&](const Comparison& c) { write_comparison(j, c); });
    j.end_object();
  }

  void stacks(StackExport& out) const override {
    for (const Comparison& c : comparisons_)
      for (const SiteDiff& s : c.sites) out.add_pair(s.frames, s.base_bytes, s.new_bytes);
  }

 private:
  std::string site_change(const SiteDiff& s) const {
    switch (s.status) {
      case SiteStatus::New:
        return fmt::format("{} in {}, from:", human_size(s.new_bytes),
                           plural(s.new_count, "allocation", "allocations"));
      case SiteStatus::Gone:
        return fmt::format("{} in {} before, from:", human_size(s.base_bytes),
                           plural(s.base_count, "allocation", "allocations"));
      default:
        return fmt::format("{} -> {} ({} -> {}), from:", human_size(s.base_bytes),
                           human_size(s.new_bytes), s.base_count,
                           plural(s.new_count, "allocation", "allocations"));
    }
  }

  void write_side(JsonWriter& j, const char* key, const std::string& run, const ProcessSites* p,
                  uint64_t bytes) const {
    j.object(key, [&] {
      j.field("peak_bytes", bytes);
      j.field("run", run);
      j.key("pid");
      if (p)
        j.value(p->pid);
      else
        j.null();
      j.key("exe");
      if (p)
        j.value(p->exe);
      else
        j.null();
      j.key("rank");
      if (!p || p->rank.empty())
        j.null();
      else if (p->rank.size() < 10 && p->rank.find_first_not_of("0123456789") == std::string::npos)
        j.value(uint64_t(std::stoull(p->rank)));
      else
        j.value(p->rank);
    });
  }

  void write_comparison(JsonWriter& j, const Comparison& c) const {
    const size_t top = o_.top.value_or(0);
    const size_t depth = o_.depth.value_or(0);
    write_side(j, "base", o_.base.string(), c.base, c.base_bytes);
    write_side(j, "new", o_.now.string(), c.now, c.new_bytes);
    j.field("delta_bytes", c.delta());
    j.field("layer", c.allocated_layer ? "allocated" : "reserved");
    j.key("device");
    if (c.base || c.now)
      j.value(c.device);
    else
      j.null();
    j.key("sites");
    j.begin_array();
    for (size_t i = 0; i < c.sites.size() && (top == 0 || i < top); ++i) {
      const SiteDiff& s = c.sites[i];
      j.begin_object();
      write_frames(j, s.frames, depth);
      j.field("base_bytes", s.base_bytes);
      j.field("new_bytes", s.new_bytes);
      j.field("delta_bytes", s.delta());
      j.field("status", status_name(s.status));
      j.field("base_count", s.base_count);
      j.field("new_count", s.new_count);
      j.end_object();
    }
    j.end_array();
  }

  const DiffOptions& o_;
  const std::vector<Comparison>& comparisons_;
};

}  // namespace

int run_diff(const DiffOptions& options, std::FILE* out, std::FILE* err) {
  const Format* format = find_format(options.format);
  if (!format || !(format->reads & kDiffParts)) {
    fmt::print(err, "gmemhook: diff has no output format '{}'\n", options.format);
    return kExitReportFailure;
  }
  SideOptions side{options.leaks, options.device, options.apis};
  std::vector<ProcessSites> base, now;
  RunWarnings warnings;
  for (auto [run, sites] : {std::pair{&options.base, &base}, std::pair{&options.now, &now}})
    if (const int status = read_side(*run, side, warnings, *sites, out, err); status != kExitOk)
      return status;
  if (options.device && !used_device(base, *options.device) && !used_device(now, *options.device)) {
    // A usage error, as `--pid` of no process is for the reports; exit 1 is --fail-above's.
    fmt::print(err, "gmemhook: device {} was never used in {} or {}\n", *options.device,
               options.base_arg, options.new_arg);
    return kExitUsage;
  }
  const std::vector<Comparison> comparisons = compare(base, now, options.match_lines);
  const DiffModel model(options, comparisons);
  const std::unique_ptr<Renderer> renderer =
      format->make({"gmemhook diff " + options.base_arg + " " + options.new_arg, std::nullopt,
                    options.depth.value_or(0)});
  std::string doc = renderer->add(model);
  doc += renderer->finish(model.next_step());
  std::fwrite(doc.data(), 1, doc.size(), out);
  std::fflush(out);
  warnings.print(err);

  if (!options.fail_above) return kExitOk;
  int status = kExitOk;
  for (const Comparison& c : comparisons) {
    if (!exceeds(*options.fail_above, c.base_bytes, c.new_bytes)) continue;
    status = kExitReportFailure;
    const char* what = options.leaks ? "leaks" : "peak";
    std::string growth =
        c.base_bytes ? fmt::format("{} grew {} ({})", what,
                                   refused_percent(c.base_bytes, c.new_bytes, *options.fail_above),
                                   signed_size(c.delta()))
                     : fmt::format("{} grew from 0 B to {}", what, human_size(c.new_bytes));
    std::string where;
    if (comparisons.size() > 1)
      where = fmt::format("{} -> {}, device {}: ", side_title(c.base), side_title(c.now), c.device);
    fmt::print(err, "gmemhook: {}{}, more than the allowed {}\n", where, growth,
               options.fail_above->text);
  }
  return status;
}

}  // namespace gmemhook::analysis
