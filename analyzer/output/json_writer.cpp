// JSON output for the reports (see json_writer.h).
#include "analyzer/output/json_writer.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace gmemhook::analysis {

std::string json_quote(std::string_view s) {
  std::string q = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        q += "\\\"";
        break;
      case '\\':
        q += "\\\\";
        break;
      case '\n':
        q += "\\n";
        break;
      case '\r':
        q += "\\r";
        break;
      case '\t':
        q += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          q += buf;
        } else {
          q += static_cast<char>(c);  // UTF-8 passes through
        }
    }
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
