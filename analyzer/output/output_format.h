// The output formats a report can be rendered in (--format): what the renderers of output/ know.
#pragma once

namespace gmemhook::analysis {

// Folded stacks and speedscope profiles exist for the reports that group memory by stack (peak,
// leaks, diff); see folded_stacks.h and speedscope_profile.h.
enum class OutputFormat { Text, Json, Folded, Speedscope };

}  // namespace gmemhook::analysis
