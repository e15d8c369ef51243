// make_stack_export(): the folded or speedscope writer behind --format (see stack_export.h).
#include "analyzer/output/stack_export.h"

#include "analyzer/output/folded_stacks.h"
#include "analyzer/output/speedscope_profile.h"

namespace gmemhook::analysis {

std::unique_ptr<StackExport> make_stack_export(OutputFormat format, size_t depth,
                                               const std::string& title) {
  switch (format) {
    case OutputFormat::Folded:
      return std::make_unique<FoldedStacks>(depth);
    case OutputFormat::Speedscope:
      return std::make_unique<SpeedscopeProfile>(depth, title);
    case OutputFormat::Text:
    case OutputFormat::Json:
      break;
  }
  return nullptr;
}

}  // namespace gmemhook::analysis
