// The one table of reports (see report.h). A report's file defines make_<name>_report.
#include <array>

#include "analyzer/output/format_table.h"
#include "analyzer/reports/report.h"

namespace gmemhook::analysis {

// name, help, flags.
#define GMEMHOOK_FOR_EACH_REPORT(X)                                                          \
  X(summary,                                                                                 \
    "One screen per process: allocations, frees, peak, live at end and failures per device", \
    kStackLines)                                                                             \
  X(leaks, "What was never freed (or live when the process died), grouped by stack",         \
    kAtMoment | kStackExports | kSiteRows | kStackLines)                                     \
  X(peak, "Who held the memory at each device's peak, and when an allocation first failed",  \
    kStackExports | kSiteRows | kStackLines)                                                 \
  X(fragmentation, "How live memory lay in the address space at the peak and at the end",    \
    kAtMoment | kAllMoments)

#define GMEMHOOK_DECLARE_REPORT(name, help, flags) \
  std::unique_ptr<Report> make_##name##_report(const ReportOptions& options);
GMEMHOOK_FOR_EACH_REPORT(GMEMHOOK_DECLARE_REPORT)
#undef GMEMHOOK_DECLARE_REPORT

namespace {

#define GMEMHOOK_REPORT_ENTRY(name, help, flags) \
  ReportEntry{#name, help, flags, make_##name##_report},
constexpr std::array kReports{GMEMHOOK_FOR_EACH_REPORT(GMEMHOOK_REPORT_ENTRY)};
#undef GMEMHOOK_REPORT_ENTRY

}  // namespace

unsigned ReportEntry::parts() const { return kLayout | (flags & kStackExports ? kStacks : 0u); }

std::span<const ReportEntry> reports() { return kReports; }

const ReportEntry* find_report(std::string_view name) {
  for (const ReportEntry& r : kReports)
    if (name == r.name) return &r;
  return nullptr;
}

}  // namespace gmemhook::analysis
