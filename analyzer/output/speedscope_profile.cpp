// The speedscope writer (see speedscope_profile.h).
#include "analyzer/output/speedscope_profile.h"

#include <fmt/format.h>

#include <algorithm>

#include "analyzer/output/json_writer.h"
#include "analyzer/output/text_format.h"

namespace gmemhook::analysis {

void SpeedscopeProfile::begin_profile(const std::string& name) {
  profiles_.push_back(Profile{name, 0, {}, {}});
}

size_t SpeedscopeProfile::frame_index(const Frame& f) {
  SharedFrame s;
  if (f.function)
    s.name = *f.function;
  else if (!f.module.empty())
    s.name = fmt::format("{}+{:#x}", base_name(f.module), f.module_offset);
  else
    s.name = fmt::format("{:#x}", f.address);
  s.file = f.file;
  s.line = f.line;
  // Unsymbolized frames differ by offset, which is already in the name.
  auto key = std::make_tuple(s.name, s.file.value_or(""), s.line.value_or(0));
  auto [it, inserted] = frame_ids_.try_emplace(std::move(key), frames_.size());
  if (inserted) frames_.push_back(std::move(s));
  return it->second;
}

void SpeedscopeProfile::add(const std::vector<Frame>& frames, uint64_t bytes) {
  if (profiles_.empty()) begin_profile("gmemhook");
  Profile& p = profiles_.back();
  const size_t shown = depth_ == 0 ? frames.size() : std::min(depth_, frames.size());
  std::vector<size_t> sample;
  for (size_t i = shown; i-- > 0;) sample.push_back(frame_index(frames[i]));
  if (sample.empty()) {
    Frame none;
    none.function = "(no stack recorded)";
    sample.push_back(frame_index(none));
  }
  p.samples.push_back(std::move(sample));
  p.weights.push_back(bytes);
  p.total += bytes;
}

std::string SpeedscopeProfile::finish() {
  std::string out;
  JsonWriter json(out);
  json.begin_object();
  json.field("$schema", "https://www.speedscope.app/file-format-schema.json");
  json.object("shared", [&] {
    json.objects("frames", frames_, [&](const SharedFrame& f) {
      json.field("name", f.name);
      if (f.file) json.field("file", *f.file);
      if (f.line) json.field("line", *f.line);
    });
  });
  json.objects("profiles", profiles_, [&](const Profile& p) {
    json.field("type", "sampled");
    json.field("name", p.name);
    json.field("unit", "bytes");
    json.field("startValue", uint64_t{0});
    json.field("endValue", p.total);
    json.key("samples");
    json.begin_array();
    for (const auto& sample : p.samples) {
      json.begin_array();
      for (size_t i : sample) json.value(static_cast<uint64_t>(i));
      json.end_array();
    }
    json.end_array();
    json.key("weights");
    json.begin_array();
    for (uint64_t w : p.weights) json.value(w);
    json.end_array();
  });
  json.field("name", title_);
  json.field("activeProfileIndex", uint64_t{0});
  json.field("exporter", "gmemhook");
  json.end_object();
  return out;
}

}  // namespace gmemhook::analysis
