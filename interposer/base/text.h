// Fixed-capacity string building for code that must not allocate (hooks, fork children, exit).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace gmemhook {

template <size_t N>
class FixedString {
 public:
  // constexpr: a FixedString with static storage is constant-initialized. Only a constant
  // evaluation fills the buffer; at run time the terminator is all that is written.
  constexpr FixedString() {
    if (std::is_constant_evaluated()) {
      for (char& c : buf_) c = '\0';
    } else {
      buf_[0] = '\0';
    }
  }
  FixedString& append(const char* s) { return append(s, std::strlen(s)); }
  FixedString& append(const char* s, size_t n) {
    if (n > N - 1 - len_) {
      n = N - 1 - len_;
      truncated_ = true;
    }
    std::memcpy(buf_ + len_, s, n);
    len_ += n;
    buf_[len_] = '\0';
    return *this;
  }
  FixedString& append_uint(uint64_t v) {
    char tmp[24];
    size_t i = sizeof(tmp);
    do {
      tmp[--i] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v);
    return append(tmp + i, sizeof(tmp) - i);
  }
  FixedString& append_hex(uint64_t v) {
    char tmp[16];
    size_t i = sizeof(tmp);
    do {
      tmp[--i] = "0123456789abcdef"[v & 15];
      v >>= 4;
    } while (v);
    return append(tmp + i, sizeof(tmp) - i);
  }
  FixedString& append_int(int64_t v) {
    if (v < 0) {
      append("-");
      return append_uint(static_cast<uint64_t>(-(v + 1)) + 1);
    }
    return append_uint(static_cast<uint64_t>(v));
  }
  const char* c_str() const { return buf_; }
  size_t size() const { return len_; }
  bool truncated() const { return truncated_; }
  void clear() {
    len_ = 0;
    buf_[0] = '\0';
    truncated_ = false;
  }

 private:
  char buf_[N];
  size_t len_ = 0;
  bool truncated_ = false;
};

// Appends "No space left on device (ENOSPC)": strerrordesc_np never translates, so never
// allocates (strerror may, through gettext).
template <size_t N>
void append_errno(FixedString<N>& m, int error) {
  const char* desc = strerrordesc_np(error);
  const char* name = strerrorname_np(error);
  m.append(desc ? desc : "unknown error");
  if (name) m.append(" (").append(name).append(")");
}

// Writes a message to stderr with write(2): safe in hooks, fork children and exit handlers.
void write_stderr(const char* s, size_t n);
inline void write_stderr(const char* s) { write_stderr(s, std::strlen(s)); }

}  // namespace gmemhook
