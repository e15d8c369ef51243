// Python pickles written from C++, for PyTorch's memory_viz: gmemhook writes the
// snapshot format torch.cuda.memory._snapshot() pickles, so no Python is needed at run time. This
// is a writer of our own, not a library: it covers the few types a snapshot holds (dicts, lists,
// tuples, str, int, float, bool, None) in pickle protocol 2, which every Python 3 reads.
// Streaming like JsonWriter: containers are opened, filled and closed in order.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gmemhook::analysis {

class PickleWriter {
 public:
  explicit PickleWriter(std::string& out);  // writes the protocol header
  // A piece of a pickle, to be spliced into another with raw(): no header.
  struct Fragment {};
  PickleWriter(std::string& out, Fragment) : out_(out) {}

  void begin_dict();  // then key, value, key, value ...
  void end_dict();
  void begin_list();
  void end_list();
  void begin_tuple();
  void end_tuple();

  void value(std::string_view s);  // str (UTF-8)
  void value(const char* s) { value(std::string_view(s)); }
  void value(const std::string& s) { value(std::string_view(s)); }
  void value(int64_t v);
  void value(uint64_t v);
  void value(int32_t v) { value(static_cast<int64_t>(v)); }
  void value(uint32_t v) { value(static_cast<uint64_t>(v)); }
  void value(double v);
  void value(bool v);
  void none();

  // Pickled bytes made by a Fragment writer, written as they are.
  void raw(std::string_view pickled) { out_.append(pickled.data(), pickled.size()); }
  // The memo: put() remembers the object just written under `index`, get() writes it again as a
  // reference to that same object (a stack shared by many events is pickled once).
  void put(uint32_t index);
  void get(uint32_t index);

  // A str key then its value, inside a dict.
  template <typename T>
  void field(std::string_view key, const T& v) {
    value(key);
    value(v);
  }

  // Ends the pickle (STOP); nothing may be written after.
  void finish();

 private:
  void opcode(uint8_t op) { out_ += static_cast<char>(op); }
  void little_endian(uint64_t v, size_t bytes);
  void long1(const uint8_t* twos_complement, size_t bytes);

  std::string& out_;
};

}  // namespace gmemhook::analysis
