// JSON output for the reports (see json_writer.h).
#include "analyzer/output/json_writer.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "analyzer/output/utf8.h"

namespace gmemhook::analysis {

std::string json_quote(std::string_view s) {
  std::string q = "\"";
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      q += '\\';
      q += static_cast<char>(c);
      ++i;
      continue;
    }
    if (c >= 0x20 && c < 0x7f) {
      q += static_cast<char>(c);
      ++i;
      continue;
    }
    char32_t code = 0;
    const size_t n = utf8_sequence(s.substr(i), code);
    if (n == 0) {
      // Not UTF-8 (a Latin-1 path, a cut name): written raw, it would make the whole document
      // unreadable. The byte as the lone surrogate U+DC80..U+DCFF instead, as Python's
      // "surrogateescape" does: json.load and JSON.parse read it, and
      // s.encode("utf-8", "surrogateescape") gives the exact bytes back.
      q += fmt::format("\\udc{:02x}", c);
      ++i;
      continue;
    }
    if (code == '\n')
      q += "\\n";
    else if (code == '\r')
      q += "\\r";
    else if (code == '\t')
      q += "\\t";
    else if (is_hidden_control(code))  // legal in a JSON string, but not for a terminal showing it
      q += fmt::format("\\u{:04x}", static_cast<uint32_t>(code));
    else
      q.append(s.substr(i, n));
    i += n;
  }
  return q + "\"";
}

void JsonWriter::newline() {
  out_ += '\n';
  out_.append(2 * nonempty_.size(), ' ');
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!nonempty_.empty()) {
    if (nonempty_.back()) out_ += ',';
    nonempty_.back() = true;
    newline();
  }
}

JsonWriter& JsonWriter::key(std::string_view k) {
  before_value();
  out_ += json_quote(k);
  out_ += ": ";
  after_key_ = true;
  return *this;
}

void JsonWriter::raw(std::string_view json_text) {
  before_value();
  out_ += json_text;
}

void JsonWriter::open(char bracket) {
  before_value();
  out_ += bracket;
  nonempty_.push_back(false);
}

void JsonWriter::close(char bracket) {
  const bool had = nonempty_.back();
  nonempty_.pop_back();
  if (had) newline();
  out_ += bracket;
  if (nonempty_.empty()) out_ += '\n';
}

void JsonWriter::value(std::string_view s) {
  before_value();
  out_ += json_quote(s);
}

void JsonWriter::value(uint64_t v) {
  before_value();
  out_ += std::to_string(v);
}

void JsonWriter::value(int64_t v) {
  before_value();
  out_ += std::to_string(v);
}

void JsonWriter::value(double v) {
  before_value();
  if (!std::isfinite(v)) {
    out_ += "null";
    return;
  }
  // The shortest text that reads back as the same double.
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, r.ptr);
}

void JsonWriter::value(bool v) {
  before_value();
  out_ += v ? "true" : "false";
}

void JsonWriter::inline_array(std::initializer_list<uint64_t> values) {
  before_value();
  out_ += '[';
  bool first = true;
  for (uint64_t v : values) {
    if (!first) out_ += ", ";
    first = false;
    out_ += std::to_string(v);
  }
  out_ += ']';
}

void JsonWriter::null() {
  before_value();
  out_ += "null";
}

}  // namespace gmemhook::analysis
