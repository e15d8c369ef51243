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

  void begin_object() { open('{'); }
  void end_object() { close('}'); }
  void begin_array() { open('['); }
  void end_array() { close(']'); }
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
  // k: an object whose members `members()` writes.
  template <typename Members>
  void object(std::string_view k, Members members) {
    key(k);
    begin_object();
    members();
    end_object();
  }
  // k: an array of one object per item of `items`, whose members `members(item)` writes.
  template <typename Items, typename Members>
  void objects(std::string_view k, const Items& items, Members members) {
    key(k);
    begin_array();
    for (const auto& item : items) {
      begin_object();
      members(item);
      end_object();
    }
    end_array();
  }

 private:
  void open(char bracket);
  void close(char bracket);
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
