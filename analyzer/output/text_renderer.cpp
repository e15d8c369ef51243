// --format text: each model's own text layout, a blank line between processes, and the command's
// hint line at the end, every byte of it fit for a terminal (terminal_text.h).
#include "analyzer/output/format_table.h"
#include "analyzer/output/terminal_text.h"

namespace gmemhook::analysis {

namespace {

class TextRenderer final : public Renderer {
 public:
  std::string add(const ReportModel& model) override {
    std::string text = models_++ ? "\n" : "";
    model.text(text);
    return terminal_lines(text);
  }
  std::string finish(const std::string& next_step) override {
    return next_step.empty() ? std::string() : "\n" + terminal_lines(next_step);
  }

 private:
  size_t models_ = 0;
};

}  // namespace

std::unique_ptr<Renderer> make_text_renderer(const RenderSettings&) {
  return std::make_unique<TextRenderer>();
}

}  // namespace gmemhook::analysis
