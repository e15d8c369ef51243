// Encoding and decoding of record payloads, side by side so the writer (interposer) and the reader
// (analyzer) cannot drift apart. Pure functions over byte buffers: no allocation, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gmemhook/format.h"

namespace gmemhook::format {

// The optional fields of an event (see "Event payload" in format.h).
struct EventFields {
  uint16_t mask = 0;
  uint64_t address = 0, size = 0, stream = 0, pool = 0, handle = 0, offset = 0;
  int32_t device = -1;
  MemoryType memory = MemoryType::Device;
  uint64_t allocated = 0, reserved = 0;  // HasTotals: the allocator's totals after the call

  void set_address(uint64_t v) { address = v, mask |= kHasAddress; }
  void set_size(uint64_t v) { size = v, mask |= kHasSize; }
  void set_stream(uint64_t v) { stream = v, mask |= kHasStream; }
  void set_pool(uint64_t v) { pool = v, mask |= kHasPool; }
  void set_handle(uint64_t v) { handle = v, mask |= kHasHandle; }
  void set_offset(uint64_t v) { offset = v, mask |= kHasOffset; }
  void set_device(int32_t v) { device = v, mask |= kHasDevice; }
  void set_memory(MemoryType v) { memory = v, mask |= kHasMemory; }
  void set_totals(uint64_t a, uint64_t r) { allocated = a, reserved = r, mask |= kHasTotals; }
  void set_free() { mask |= kIsFree; }
  bool has(EventField f) const { return mask & f; }
};

struct Event {
  uint8_t api = 0;
  uint64_t seq = 0;
  uint64_t time_ns = 0;  // absolute CLOCK_MONOTONIC ns
  uint32_t result = 0;
  uint32_t stack_id = 0;
  EventFields f;
};

// Per-file delta state; the writer and the reader of one file each keep one.
struct EventDeltas {
  uint64_t last_seq = 0;
  uint64_t last_time_ns = 0;  // starts at FileHeader::start_monotonic_ns
  uint64_t last_address = 0;
  uint64_t last_allocated = 0, last_reserved = 0;  // of the previous HasTotals event
  uint16_t version = kFormatVersion;               // the file's: version 1 has a one-byte mask
};

// api, 4 varints, a 2-byte mask, 6 varint fields, device, memory, the two totals.
inline constexpr size_t kMaxEventPayload = 1 + 4 * 10 + 2 + 6 * 10 + 10 + 1 + 2 * 10;
static_assert(kMaxEventPayload <= kMaxSmallPayload);

// Sequential byte writer over a caller-provided buffer that is known to be large enough.
class PayloadWriter {
 public:
  explicit PayloadWriter(uint8_t* p) : begin_(p), p_(p) {}
  void u8(uint8_t v) { *p_++ = v; }
  void varint(uint64_t v) { p_ += put_varint(p_, v); }
  void zigzag(int64_t v) { varint(format::zigzag(v)); }
  void bytes(const void* data, size_t n) {
    __builtin_memcpy(p_, data, n);
    p_ += n;
  }
  void string(std::string_view s) {
    varint(s.size());
    bytes(s.data(), s.size());
  }
  size_t size() const { return static_cast<size_t>(p_ - begin_); }

 private:
  uint8_t* begin_;
  uint8_t* p_;
};

// Sequential bounds-checked reader: every accessor returns false once the payload is exhausted
// or malformed, and stays false.
class PayloadReader {
 public:
  PayloadReader(const uint8_t* p, size_t n) : p_(p), end_(p + n) {}
  bool u8(uint8_t* v) {
    if (!ok_ || p_ >= end_) return ok_ = false;
    *v = *p_++;
    return true;
  }
  bool varint(uint64_t* v) {
    if (!ok_) return false;
    size_t n = get_varint(p_, end_, v);
    if (n == 0) return ok_ = false;
    p_ += n;
    return true;
  }
  bool zigzag(int64_t* v) {
    uint64_t u;
    if (!varint(&u)) return false;
    *v = unzigzag(u);
    return true;
  }
  // A string of at most `limit` bytes; the view points into the payload.
  bool string(std::string_view* s, uint64_t limit = kMaxString) {
    uint64_t n;
    if (!varint(&n) || n > limit || n > static_cast<uint64_t>(end_ - p_)) return ok_ = false;
    *s = std::string_view(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return true;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return p_ == end_; }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

// The allocated total a HasTotals event is expected to carry (see "Allocator totals" in format.h).
inline uint64_t expected_allocated_total(const EventFields& f, const EventDeltas& d) {
  const uint64_t size = f.has(kHasSize) ? f.size : 0;
  return f.has(kIsFree) ? d.last_allocated - size : d.last_allocated + size;
}

// Encodes `ev` into out (room for kMaxEventPayload bytes); returns the payload size.
inline size_t encode_event(uint8_t* out, const Event& ev, EventDeltas& d) {
  PayloadWriter w(out);
  w.u8(ev.api);
  w.varint(ev.seq - d.last_seq);
  w.varint(ev.time_ns - d.last_time_ns);
  w.varint(ev.result);
  w.varint(ev.stack_id);
  // Totals travel as corrections to their expected values: usually none at all.
  uint16_t mask = ev.f.mask & ~kMovedFields;
  const uint64_t expected_allocated = expected_allocated_total(ev.f, d);
  if (ev.f.has(kHasTotals)) {
    if (ev.f.allocated != expected_allocated) mask |= kAllocatedMoved;
    if (ev.f.reserved != d.last_reserved) mask |= kReservedMoved;
  }
  w.varint(mask);
  if (ev.f.has(kHasAddress)) {
    w.zigzag(static_cast<int64_t>(ev.f.address - d.last_address));
    d.last_address = ev.f.address;
  }
  if (ev.f.has(kHasSize)) w.varint(ev.f.size);
  if (ev.f.has(kHasStream)) w.varint(ev.f.stream);
  if (ev.f.has(kHasPool)) w.varint(ev.f.pool);
  if (ev.f.has(kHasHandle)) w.varint(ev.f.handle);
  if (ev.f.has(kHasOffset)) w.varint(ev.f.offset);
  if (ev.f.has(kHasDevice)) w.zigzag(ev.f.device);
  if (ev.f.has(kHasMemory)) w.u8(static_cast<uint8_t>(ev.f.memory));
  if (mask & kAllocatedMoved) w.zigzag(static_cast<int64_t>(ev.f.allocated - expected_allocated));
  if (mask & kReservedMoved) w.zigzag(static_cast<int64_t>(ev.f.reserved - d.last_reserved));
  if (ev.f.has(kHasTotals)) {
    d.last_allocated = ev.f.allocated;
    d.last_reserved = ev.f.reserved;
  }
  d.last_seq = ev.seq;
  d.last_time_ns = ev.time_ns;
  return w.size();
}

// Decodes one event payload. Returns false on malformed input (nothing in `d` is trusted then).
// Sequence numbers must increase within a file; a zero delta is rejected as damage.
inline bool decode_event(const uint8_t* p, size_t n, Event* ev, EventDeltas& d) {
  PayloadReader r(p, n);
  uint64_t seq_delta, time_delta, result, stack_id, mask;
  if (!r.u8(&ev->api) || !r.varint(&seq_delta) || !r.varint(&time_delta) || !r.varint(&result) ||
      !r.varint(&stack_id))
    return false;
  if (d.version == 1) {
    uint8_t byte;
    if (!r.u8(&byte)) return false;
    mask = fields_from_version1(byte);
  } else if (!r.varint(&mask) || mask > kKnownFields) {
    return false;
  }
  if (seq_delta == 0 || result > UINT32_MAX || stack_id > UINT32_MAX) return false;
  ev->f.mask = static_cast<uint16_t>(mask);
  ev->seq = d.last_seq + seq_delta;
  ev->time_ns = d.last_time_ns + time_delta;
  ev->result = static_cast<uint32_t>(result);
  ev->stack_id = static_cast<uint32_t>(stack_id);
  EventFields& f = ev->f;
  f.address = f.size = f.stream = f.pool = f.handle = f.offset = f.allocated = f.reserved = 0;
  f.device = -1;
  f.memory = MemoryType::Device;
  if (f.has(kHasAddress)) {
    int64_t delta;
    if (!r.zigzag(&delta)) return false;
    f.address = d.last_address + static_cast<uint64_t>(delta);
  }
  if (f.has(kHasSize) && !r.varint(&f.size)) return false;
  if (f.has(kHasStream) && !r.varint(&f.stream)) return false;
  if (f.has(kHasPool) && !r.varint(&f.pool)) return false;
  if (f.has(kHasHandle) && !r.varint(&f.handle)) return false;
  if (f.has(kHasOffset) && !r.varint(&f.offset)) return false;
  if (f.has(kHasDevice)) {
    int64_t dev;
    if (!r.zigzag(&dev) || dev < INT32_MIN || dev > INT32_MAX) return false;
    f.device = static_cast<int32_t>(dev);
  }
  if (f.has(kHasMemory)) {
    uint8_t m;
    if (!r.u8(&m) || m > static_cast<uint8_t>(MemoryType::None)) return false;
    f.memory = static_cast<MemoryType>(m);
  }
  if ((f.mask & kMovedFields) && !f.has(kHasTotals)) return false;  // corrections of nothing
  int64_t allocated_moved = 0, reserved_moved = 0;
  if (f.has(kAllocatedMoved) && !r.zigzag(&allocated_moved)) return false;
  if (f.has(kReservedMoved) && !r.zigzag(&reserved_moved)) return false;
  if (!r.at_end()) return false;
  if (f.has(kHasTotals)) {
    f.allocated = expected_allocated_total(f, d) + static_cast<uint64_t>(allocated_moved);
    f.reserved = d.last_reserved + static_cast<uint64_t>(reserved_moved);
    d.last_allocated = f.allocated;
    d.last_reserved = f.reserved;
  }
  f.mask &= ~kMovedFields;  // how the totals were stored concerns the codec only
  if (f.has(kHasAddress)) d.last_address = f.address;
  d.last_seq = ev->seq;
  d.last_time_ns = ev->time_ns;
  return true;
}

}  // namespace gmemhook::format
