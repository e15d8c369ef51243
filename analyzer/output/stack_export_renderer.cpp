// The renderers of the stack exports (--format folded / speedscope, see stack_export.h): every
// model's weighted stacks go to the export, whose document is the output.
#include "analyzer/output/folded_stacks.h"
#include "analyzer/output/format_table.h"
#include "analyzer/output/speedscope_profile.h"
#include "analyzer/output/stack_export.h"

namespace gmemhook::analysis {

namespace {

class StackExportRenderer final : public Renderer {
 public:
  explicit StackExportRenderer(std::unique_ptr<StackExport> out) : out_(std::move(out)) {}
  std::string add(const ReportModel& model) override {
    model.stacks(*out_);
    return {};
  }
  std::string finish(const std::string&) override { return out_->finish(); }

 private:
  std::unique_ptr<StackExport> out_;
};

}  // namespace

std::unique_ptr<Renderer> make_folded_renderer(const RenderSettings& settings) {
  return std::make_unique<StackExportRenderer>(std::make_unique<FoldedStacks>(settings.depth));
}

std::unique_ptr<Renderer> make_speedscope_renderer(const RenderSettings& settings) {
  return std::make_unique<StackExportRenderer>(
      std::make_unique<SpeedscopeProfile>(settings.depth, settings.title));
}

}  // namespace gmemhook::analysis
