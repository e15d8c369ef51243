// --format json (--json): one document, handed out once every model is in, so a failure halfway
// leaves no half document behind.
#include "analyzer/output/format_table.h"

namespace gmemhook::analysis {

namespace {

class JsonRenderer final : public Renderer {
 public:
  explicit JsonRenderer(const RenderSettings& settings) : envelope_(settings.run.has_value()) {
    if (!envelope_) return;
    json_.begin_object();
    json_.field("run", *settings.run);
    json_.key("processes");
    json_.begin_array();
  }

  std::string add(const ReportModel& model) override {
    model.json(json_);
    return {};
  }
  std::string finish(const std::string&) override {
    if (envelope_) {
      json_.end_array();
      json_.end_object();
    }
    return std::move(out_);
  }

 private:
  bool envelope_;
  std::string out_;
  JsonWriter json_{out_};
};

}  // namespace

std::unique_ptr<Renderer> make_json_renderer(const RenderSettings& settings) {
  return std::make_unique<JsonRenderer>(settings);
}

}  // namespace gmemhook::analysis
