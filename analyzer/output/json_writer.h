// A small streaming JSON writer for the reports' --json output: keys stay in the order written
// (the documented order of docs/json.md), numbers are exact 64-bit integers, output is indented.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gmemhook::analysis {

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  void begin_object();
  void end_object();
  void begin_array();
  void end_array();
  // The key of the next value, inside an object.
  JsonWriter& key(std::string_view k);

  void value(std::string_view s);
  void value(const char* s) { value(std::string_view(s)); }
  void value(const std::string& s) { value(std::string_view(s)); }
  void value(uint64_t v);
  void value(int64_t v);
  void value(uint32_t v) { value(static_cast<uint64_t>(v)); }
  void value(int32_t v) { value(static_cast<int64_t>(v)); }
  void value(double v);
  void value(bool v);
  void null();
  // A value that is JSON text already (e.g. another report's output), written as it is.
  void raw(std::string_view json_text);
  // A short array of numbers on one line, e.g. a [time, bytes] point of a timeline.
  void inline_array(std::initializer_list<uint64_t> values);
  template <typename T>
  void value(const std::optional<T>& v) {
    if (v)
      value(*v);
    else
      null();
  }

  // key(k) then value(v).
  template <typename T>
  void field(std::string_view k, const T& v) {
    key(k);
    value(v);
  }

 private:
  void before_value();
  void newline();

  std::string& out_;
  // Per open container: whether it already holds an element.
  std::vector<bool> nonempty_;
  bool after_key_ = false;
};

// s as a JSON string literal, quotes included.
std::string json_quote(std::string_view s);

}  // namespace gmemhook::analysis
