// `gmemhook html --format perfetto`: the run as a Chrome JSON trace for ui.perfetto.dev and
// chrome://tracing: per process and device, counter tracks of the live (or allocated
// and reserved) bytes and of the bytes by top site, and an instant event per failed allocation.
#pragma once

#include <cstdio>
#include <string>

#include "analyzer/reports/html_report.h"

namespace gmemhook::analysis {

// The trace into `out`. Returns a report exit status; errors go to `err`.
int perfetto_export(const HtmlOptions& options, std::string& out, std::FILE* err);

}  // namespace gmemhook::analysis
