// libFuzzer target for RUN/run.json (reports/run_json.h) and the encoders that write names: any
// bytes give a RunJson or a warning, never a crash; what the page would embed is a JSON object of
// the keys `gmemhook run` writes and nothing else; and the input as a JSON string or as terminal
// text is valid UTF-8 without a raw control byte, whatever bytes it holds.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/output/json_writer.h"
#include "analyzer/output/terminal_text.h"
#include "analyzer/output/utf8.h"
#include "analyzer/reports/run_json.h"

namespace {

using namespace gmemhook::analysis;

bool has_control_byte(std::string_view s, bool newline_allowed) {
  for (unsigned char c : s)
    if ((c < 0x20 && !(newline_allowed && c == '\n')) || c == 0x7f) return true;
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  std::vector<std::string> warnings;
  const std::optional<RunJson> r = parse_run_json(text, "run.json", warnings);
  if (!r) {
    if (warnings.empty()) __builtin_trap();  // a refusal must say why
  } else {
    std::string out;
    JsonWriter json(out);
    write_run_json(json, *r);
    const nlohmann::json doc = nlohmann::json::parse(out, nullptr, false);
    if (doc.is_discarded() || !doc.is_object() || doc.size() != 9) __builtin_trap();
  }

  const std::string quoted = json_quote(text);
  if (!is_utf8(quoted) || has_control_byte(quoted, false)) __builtin_trap();
  const std::string shown = terminal_text(text);
  if (!is_utf8(shown) || has_control_byte(shown, false)) __builtin_trap();
  const std::string lines = terminal_lines(text);
  if (!is_utf8(lines) || has_control_byte(lines, true)) __builtin_trap();
  return 0;
}
