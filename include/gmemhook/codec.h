// Encoding and decoding of record payloads, side by side so the writer (interposer) and the reader
// (analyzer) cannot drift apart. Pure functions over byte buffers: no allocation, no I/O.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
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
  uint64_t graph = 0, flags = 0;

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
  void set_graph(uint64_t v) { graph = v, mask |= kHasGraph; }
  void set_flags(uint64_t v) { flags = v, mask |= kHasFlags; }
  bool has(EventField f) const { return mask & f; }
};

// What an event says besides its fields: the writer fills one per event and keeps the fields
// apart (an Event, fields included, took more instructions to zero than to encode the head).
struct EventCore {
  uint8_t api = 0;
  uint64_t seq = 0;
  uint64_t time_ns = 0;  // absolute CLOCK_MONOTONIC ns
  uint32_t result = 0;
  uint32_t stack_id = 0;
};

// A whole event, as the reader decodes it.
struct Event : EventCore {
  EventFields f;
};

// The usual event (decode_usual_event_v8's: no failure, no new fields or device) as its decoder
// leaves it: what it states beyond the file's running values. Its seq, time, address, stream and
// device are the EventDeltas' last ones once it is decoded (address, stream and device only where
// `mask` has them), so a consumer reads those there: filling a 128-byte Event besides was half of
// the decoder's instructions and the consumer read most of it back for nothing.
struct UsualEvent {
  uint64_t size = 0;  // 0 unless mask has kHasSize
  uint32_t stack_id = 0;
  uint16_t mask = 0;  // the api's fields (kHasAddress, kHasSize, kHasStream, kHasDevice, kIsFree)
  uint8_t api = 0;
};

// Per-file delta state; the writer and the reader of one file each keep one.
struct EventDeltas {
  uint64_t last_seq = 0;
  uint64_t last_time_ns = 0;  // starts at FileHeader::start_monotonic_ns
  uint64_t last_address = 0;
  uint64_t last_allocated = 0, last_reserved = 0;  // of the previous HasTotals event
  uint16_t version = kFormatVersion;               // the file's: version 1 has a one-byte mask
  // Version 8 (format.h, "Event payload"): what an event may leave out because it repeats.
  uint64_t last_stream = 0;
  int32_t last_device = 0;
  // The fields of the previous event of each api, less the bits an event must state (kOneOffFields).
  uint16_t api_fields[256] = {};
};

// Version 8's worst case: api, four varints, a 3-byte mask, six varint fields, device, memory,
// the two totals, graph, flags.
inline constexpr size_t kMaxEventPayload = 1 + 4 * 10 + 3 + 6 * 10 + 10 + 1 + 2 * 10 + 2 * 10;
static_assert(kMaxEventPayload <= kMaxSmallPayload);

enum class EventPart : uint8_t;

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
  void part(EventPart) {}  // see encode_event_to

 private:
  uint8_t* begin_;
  uint8_t* p_;
};

// Sequential bounds-checked reader: every accessor returns false once the payload is exhausted
// or malformed, and stays false.
class PayloadReader {
 public:
  PayloadReader(const uint8_t* p, size_t n) : p_(p), end_(p + n), readable_(end_) {}
  // The payload's bytes are [p, p + n), but up to p + readable (>= n) may be loaded: varints
  // then take get_varint_from_word's one-load path. What is read is the same either way.
  PayloadReader(const uint8_t* p, size_t n, size_t readable)
      : p_(p), end_(p + n), readable_(p + std::max(n, readable)) {}
  bool u8(uint8_t* v) {
    if (!ok_ || p_ >= end_) return ok_ = false;
    *v = *p_++;
    return true;
  }
  bool varint(uint64_t* v) {
    if (!ok_) return false;
    size_t n = get_varint_from_word(p_, end_, readable_, v);
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
  const uint8_t* readable_;
  bool ok_ = true;
};

// The allocated total a HasTotals event is expected to carry (see "Allocator totals" in format.h).
inline uint64_t expected_allocated_total(const EventFields& f, const EventDeltas& d) {
  const uint64_t size = f.has(kHasSize) ? f.size : 0;
  return f.has(kIsFree) ? d.last_allocated - size : d.last_allocated + size;
}

// The parts of an event's encoding, for measuring where a log's bytes go (bench/log_size).
enum class EventPart : uint8_t {
  Api, Seq, Time, Result, Stack, Fields, Address, Size, Stream, Device, Other, Count
};
inline constexpr const char* kEventPartNames[] = {"api",   "seq",    "time",    "result",
                                                   "stack", "fields", "address", "size",
                                                   "stream", "device", "other"};

// Version 8's scaled numbers (format.h): value >> kScaleShift[c], two bits of class c below it.
inline constexpr unsigned kScaleShift[4] = {0, 8, 12, 21};
inline constexpr unsigned scale_class(uint64_t v) {
  if (v == 0) return 0;
  const unsigned zeros = static_cast<unsigned>(__builtin_ctzll(v));
  return zeros >= 21 ? 3 : zeros >= 12 ? 2 : zeros >= 8 ? 1 : 0;
}
// False when v is too large for its class (only an unscaled v of 2^62 or more): the event is
// then stored with kPlainNumbers.
inline constexpr bool scale_unsigned(uint64_t v, uint64_t* out) {
  const unsigned c = scale_class(v);
  *out = (v >> kScaleShift[c]) << 2 | c;
  return (v >> kScaleShift[c]) >> 62 == 0;
}
inline constexpr bool scale_signed(int64_t v, uint64_t* out) {
  const unsigned c = scale_class(static_cast<uint64_t>(v));
  const uint64_t z = format::zigzag(v >> kScaleShift[c]);
  *out = z << 2 | c;
  return z >> 62 == 0;
}
inline constexpr uint64_t unscale_unsigned(uint64_t v) { return (v >> 2) << kScaleShift[v & 3]; }
inline constexpr int64_t unscale_signed(uint64_t v) {
  return static_cast<int64_t>(static_cast<uint64_t>(unzigzag(v >> 2)) << kScaleShift[v & 3]);
}

// Version 8's times: CLOCK_MONOTONIC in units of 2^kTimeShift ns, rounded up. Reports cut times
// to whole microseconds (or coarser) when they show them; rounded up, a time shows as the exact
// one would unless it lies within 32 ns below the next microsecond.
inline constexpr uint64_t time_units(uint64_t ns) {
  return (ns + (uint64_t{1} << kTimeShift) - 1) >> kTimeShift;
}

// Encodes `ev` (an Event or an EventCore) with the fields `f` (not ev.f: the writer keeps them
// apart, copying them into the event was a tenth of encoding one) through `w` (a PayloadWriter,
// or anything with the same calls and part(), which says which part the next bytes belong to),
// in today's version (8). Returns the event's head (format.h: its record type is
// kEventTypeBase | head).
template <class Out, class Core>
uint8_t encode_event_to(Out& w, const Core& ev, const EventFields& f, EventDeltas& d) {
  // Totals travel as corrections to their expected values: usually none at all.
  uint16_t mask = f.mask & ~(kMovedFields | kPlainNumbers);
  uint64_t expected_allocated = 0;
  if (f.has(kHasTotals)) {
    expected_allocated = expected_allocated_total(f, d);
    if (f.allocated != expected_allocated) mask |= kAllocatedMoved;
    if (f.reserved != d.last_reserved) mask |= kReservedMoved;
  }
  uint64_t address = 0, size = 0;
  bool scaled = true;
  if (f.has(kHasAddress))
    scaled = scale_signed(static_cast<int64_t>(f.address - d.last_address), &address);
  if (f.has(kHasSize)) scaled = scale_unsigned(f.size, &size) && scaled;
  if (!scaled) mask |= kPlainNumbers;
  const uint64_t seq_delta = ev.seq - d.last_seq;
  uint8_t head = 0;
  if (seq_delta != 1) head |= kSeqGap;
  if (ev.result != 0) head |= kFailed;
  if (ev.stack_id != 0) head |= kHasStackId;
  if (mask != d.api_fields[ev.api]) head |= kNewFields;
  if (f.has(kHasDevice) && f.device != d.last_device) head |= kNewDevice;

  w.part(EventPart::Api);
  w.u8(ev.api);
  w.part(EventPart::Seq);
  if (head & kSeqGap) w.varint(seq_delta);
  w.part(EventPart::Time);
  const uint64_t units = time_units(ev.time_ns);
  w.varint(units - time_units(d.last_time_ns));
  w.part(EventPart::Result);
  if (head & kFailed) w.varint(ev.result);
  w.part(EventPart::Stack);
  if (head & kHasStackId) w.varint(ev.stack_id);
  w.part(EventPart::Fields);
  if (head & kNewFields) w.varint(mask);
  if (f.has(kHasAddress)) {
    w.part(EventPart::Address);
    if (scaled)
      w.varint(address);
    else
      w.zigzag(static_cast<int64_t>(f.address - d.last_address));
    d.last_address = f.address;
  }
  w.part(EventPart::Size);
  if (f.has(kHasSize)) w.varint(scaled ? size : f.size);
  w.part(EventPart::Stream);
  if (f.has(kHasStream)) {
    w.zigzag(static_cast<int64_t>(f.stream - d.last_stream));
    d.last_stream = f.stream;
  }
  // Most events have none of these (one test, not five, on the writer's hot path).
  constexpr uint16_t kRareMiddle = kHasPool | kHasHandle | kHasOffset;
  if (mask & kRareMiddle) {
    w.part(EventPart::Other);
    if (f.has(kHasPool)) w.varint(f.pool);
    if (f.has(kHasHandle)) w.varint(f.handle);
    if (f.has(kHasOffset)) w.varint(f.offset);
  }
  w.part(EventPart::Device);
  if (head & kNewDevice) {
    w.zigzag(f.device);
    d.last_device = f.device;
  }
  constexpr uint16_t kRareLast = kHasMemory | kMovedFields | kHasGraph | kHasFlags | kHasTotals;
  if (mask & kRareLast) {
    w.part(EventPart::Other);
    if (f.has(kHasMemory)) w.u8(static_cast<uint8_t>(f.memory));
    if (mask & kAllocatedMoved) w.zigzag(static_cast<int64_t>(f.allocated - expected_allocated));
    if (mask & kReservedMoved) w.zigzag(static_cast<int64_t>(f.reserved - d.last_reserved));
    if (f.has(kHasGraph)) w.varint(f.graph);
    if (f.has(kHasFlags)) w.varint(f.flags);
    if (f.has(kHasTotals)) {
      d.last_allocated = f.allocated;
      d.last_reserved = f.reserved;
    }
  }
  d.api_fields[ev.api] = mask & ~kOneOffFields;
  d.last_seq = ev.seq;
  d.last_time_ns = units << kTimeShift;  // what a reader will decode
  return head;
}

// An event as the writer stores it: the record's type (with the head) and its payload's size.
struct EncodedEvent {
  RecordType type;
  size_t size;
};

// Writes v (< 2^56) as a varint at p (8 bytes of room) with one store: a byte, or else a word,
// the mirror of word_varint: its 7-bit groups spread to bytes by shifts and every byte but the
// last given its continuation bit. Returns its length. A word stores zeros after the varint's
// own bytes; nothing else is written past them.
inline size_t put_word_varint(uint8_t* p, uint64_t v) {
  if (v < 0x80) [[likely]] {  // times, stack ids, nearby addresses and round sizes mostly
    *p = static_cast<uint8_t>(v);
    return 1;
  }
  uint64_t x = (v & 0x000000000fffffffull) | ((v << 4) & 0x0fffffff00000000ull);
  x = (x & 0x00003fff00003fffull) | ((x << 2) & 0x3fff00003fff0000ull);
  x = (x & 0x007f007f007f007full) | ((x << 1) & 0x7f007f007f007f00ull);
  // 8 × (the varint's length − 1): from 8 (v ≥ 2^7) to 56 (v ≥ 2^49).
  const unsigned last_byte = (63u - static_cast<unsigned>(__builtin_clzll(x))) & ~7u;
  x |= 0x0080808080808080ull >> (56 - last_byte);
  __builtin_memcpy(p, &x, sizeof x);
  return (last_byte >> 3) + 1;
}

// scale_class(v) and its shift, as shift << 2 | class, by v's trailing zeros (64 for 0): one
// load instead of a chain of compares, for the writer's usual event.
inline constexpr auto kScaleByZeros = [] {
  std::array<uint8_t, 65> t{};
  for (unsigned zeros = 0; zeros < 64; ++zeros) {
    const unsigned c = scale_class(uint64_t{1} << zeros);
    t[zeros] = static_cast<uint8_t>(kScaleShift[c] << 2 | c);
  }
  return t;  // t[64], for 0: class 0, shift 0
}();
inline unsigned scale_by_zeros(uint64_t v) {
  return kScaleByZeros[v ? static_cast<unsigned>(__builtin_ctzll(v)) : 64];
}

// The usual event on the writer's side, the mirror of decode_usual_event_v8: no failure, the
// fields of its api's previous event (none new, no totals, none stored plainly), only address,
// size, stream and device among them, the device last stored, every part within 8 bytes. Each
// part is written with one store (put_word_varint), and only the head's two bits and the parts
// that are there are worked out (encode_event_to's tests of every rare field, the scaling of
// numbers through tables and the byte loops were ~140 instructions an event). Returns
// false, having written and changed nothing, for any other event: encode_event_to writes it.
// Both write exactly the same bytes (`UsualEncode` tests compare them). Up to 7 zero bytes
// may be stored after the payload, inside out's kMaxEventPayload bytes: where the recorder
// encodes in place those bytes are the next record's, still zero. Inline in the recorder.
template <class Core>
__attribute__((always_inline)) inline bool encode_usual_event(uint8_t* out, const Core& ev,
                                                              const EventFields& f, EventDeltas& d,
                                                              EncodedEvent* encoded) {
  constexpr uint16_t kUsualFields = kHasAddress | kHasSize | kHasStream | kHasDevice | kIsFree;
  const uint16_t mask = f.mask;
  if ((mask & ~kUsualFields) || mask != d.api_fields[ev.api] || ev.result != 0 ||
      ((mask & kHasDevice) && f.device != d.last_device))
    return false;
  const uint64_t seq_delta = ev.seq - d.last_seq;
  const uint64_t units = time_units(ev.time_ns);
  const uint64_t time_delta = units - time_units(d.last_time_ns);
  const uint64_t address_delta = f.address - d.last_address;
  const uint64_t stream =
      mask & kHasStream ? zigzag(static_cast<int64_t>(f.stream - d.last_stream)) : 0;
  // Every part below 2^56, scaled ones below 2^54 before their class's two bits: tested on the
  // numbers before scaling (scaling only makes them smaller; the few numbers it would have
  // brought below the line go to encode_event_to, which writes the same bytes), address and
  // size whether they are there or not (a wrapper clears both: an absent one is 0, and at worst
  // sends the event on). Nothing is written before this test, and each part is worked out where
  // it is written: with every part computed first, GCC spilled them to the stack.
  if ((seq_delta | time_delta | ev.stack_id | stream) >> 56 ||
      (zigzag(static_cast<int64_t>(address_delta)) | f.size) >> 54)
    return false;

  uint8_t* p = out;
  *p++ = ev.api;
  if (seq_delta != 1) p += put_word_varint(p, seq_delta);
  p += put_word_varint(p, time_delta);
  if (ev.stack_id != 0) p += put_word_varint(p, ev.stack_id);
  if (mask & kHasAddress) {
    // Scaled as scale_signed does.
    const unsigned scale = scale_by_zeros(address_delta);
    const uint64_t address = zigzag(static_cast<int64_t>(address_delta) >> (scale >> 2));
    p += put_word_varint(p, address << 2 | (scale & 3));
    d.last_address = f.address;
  }
  if (mask & kHasSize) {
    const unsigned scale = scale_by_zeros(f.size);  // as scale_unsigned
    p += put_word_varint(p, (f.size >> (scale >> 2)) << 2 | (scale & 3));
  }
  // f.mask, not `mask`: the same bits, read again (one load). Kept from the test above, its stream
  // bit took a register GCC did not have to spare here: stored, and loaded back.
  if (f.mask & kHasStream) {
    p += put_word_varint(p, stream);
    d.last_stream = f.stream;
  }

  // What encode_event_to leaves in `d` for this event (api_fields and last_device unchanged).
  d.last_seq = ev.seq;
  d.last_time_ns = units << kTimeShift;
  const uint8_t head = (seq_delta != 1 ? kSeqGap : 0) | (ev.stack_id != 0 ? kHasStackId : 0);
  *encoded = {static_cast<RecordType>(kEventTypeBase | head), static_cast<size_t>(p - out)};
  return true;
}

// Encodes any event into out (room for kMaxEventPayload bytes) the general way, without trying
// encode_usual_event first: for a caller that has just tried it (the hook's rare path).
template <class Core>
EncodedEvent encode_general_event(uint8_t* out, const Core& ev, const EventFields& f,
                                  EventDeltas& d) {
  PayloadWriter w(out);
  const uint8_t head = encode_event_to(w, ev, f, d);
  return {static_cast<RecordType>(kEventTypeBase | head), w.size()};
}

// Encodes `ev` into out (room for kMaxEventPayload bytes); with fields `f`, or its own.
template <class Core>
__attribute__((always_inline)) inline EncodedEvent encode_event(uint8_t* out, const Core& ev,
                                                                const EventFields& f,
                                                                EventDeltas& d) {
  EncodedEvent usual;
  if (encode_usual_event(out, ev, f, d, &usual)) [[likely]]
    return usual;
  return encode_general_event(out, ev, f, d);
}
inline EncodedEvent encode_event(uint8_t* out, const Event& ev, EventDeltas& d) {
  return encode_event(out, ev, ev.f, d);
}

// Reads the optional fields every version stores alike, from pool to memory, except that
// version 8 leaves out a device that repeats.
inline bool decode_middle_fields(PayloadReader& r, EventFields& f, bool device_stored) {
  if (f.has(kHasPool) && !r.varint(&f.pool)) return false;
  if (f.has(kHasHandle) && !r.varint(&f.handle)) return false;
  if (f.has(kHasOffset) && !r.varint(&f.offset)) return false;
  if (device_stored) {
    int64_t dev;
    if (!r.zigzag(&dev) || dev < INT32_MIN || dev > INT32_MAX) return false;
    f.device = static_cast<int32_t>(dev);
  }
  if (f.has(kHasMemory)) {
    uint8_t m;
    if (!r.u8(&m) || m > static_cast<uint8_t>(MemoryType::None)) return false;
    f.memory = static_cast<MemoryType>(m);
  }
  return true;
}

// Reads the totals' corrections, graph and flags, the last fields of every version, and checks
// that nothing follows.
inline bool decode_last_fields(PayloadReader& r, EventFields& f, EventDeltas& d) {
  if ((f.mask & kMovedFields) && !f.has(kHasTotals)) return false;  // corrections of nothing
  int64_t allocated_moved = 0, reserved_moved = 0;
  if (f.has(kAllocatedMoved) && !r.zigzag(&allocated_moved)) return false;
  if (f.has(kReservedMoved) && !r.zigzag(&reserved_moved)) return false;
  if (f.has(kHasGraph) && !r.varint(&f.graph)) return false;
  if (f.has(kHasFlags) && !r.varint(&f.flags)) return false;
  if (!r.at_end()) return false;
  if (f.has(kHasTotals)) {
    f.allocated = expected_allocated_total(f, d) + static_cast<uint64_t>(allocated_moved);
    f.reserved = d.last_reserved + static_cast<uint64_t>(reserved_moved);
    d.last_allocated = f.allocated;
    d.last_reserved = f.reserved;
  }
  return true;
}

inline void clear_fields(EventFields& f, uint64_t mask) {
  f.mask = static_cast<uint16_t>(mask);
  f.address = f.size = f.stream = f.pool = f.handle = f.offset = f.allocated = f.reserved = 0;
  f.graph = f.flags = 0;
  f.device = -1;
  f.memory = MemoryType::Device;
}

// Versions 1 to 7: every part stored, the record type says only "event".
inline bool decode_event_v7(const uint8_t* p, size_t n, Event* ev, EventDeltas& d) {
  PayloadReader r(p, n);
  uint64_t seq_delta, time_delta, result, stack_id, mask;
  if (!r.u8(&ev->api) || !r.varint(&seq_delta) || !r.varint(&time_delta) || !r.varint(&result) ||
      !r.varint(&stack_id))
    return false;
  if (d.version == 1) {
    uint8_t byte;
    if (!r.u8(&byte)) return false;
    mask = fields_from_version1(byte);
  } else if (!r.varint(&mask) || mask > (d.version < 4 ? kVersion3Fields : kVersion7Fields)) {
    return false;
  }
  if (seq_delta == 0 || result > UINT32_MAX || stack_id > UINT32_MAX) return false;
  ev->seq = d.last_seq + seq_delta;
  ev->time_ns = d.last_time_ns + time_delta;
  ev->result = static_cast<uint32_t>(result);
  ev->stack_id = static_cast<uint32_t>(stack_id);
  EventFields& f = ev->f;
  clear_fields(f, mask);
  if (f.has(kHasAddress)) {
    int64_t delta;
    if (!r.zigzag(&delta)) return false;
    f.address = d.last_address + static_cast<uint64_t>(delta);
  }
  if (f.has(kHasSize) && !r.varint(&f.size)) return false;
  if (f.has(kHasStream) && !r.varint(&f.stream)) return false;
  if (!decode_middle_fields(r, f, f.has(kHasDevice)) || !decode_last_fields(r, f, d)) return false;
  f.mask &= ~kMovedFields;  // how the totals were stored concerns the codec only
  if (f.has(kHasAddress)) d.last_address = f.address;
  d.last_seq = ev->seq;
  d.last_time_ns = ev->time_ns;
  return true;
}

// Which parts a usual version-8 event stores, from its head (seq gap, stack id) and its api's
// fields (address, size, stream: their EventField bits moved up past the head's two): the key of
// decode_usual_shape's instantiations.
inline constexpr unsigned kShapeFieldShift = 2;
enum UsualShape : unsigned {
  kShapeSeqGap = 1u << 0,
  kShapeStackId = 1u << 1,
  kShapeAddress = unsigned{kHasAddress} << kShapeFieldShift,
  kShapeSize = unsigned{kHasSize} << kShapeFieldShift,
  kShapeStream = unsigned{kHasStream} << kShapeFieldShift,
  kUsualShapes = kShapeStream << 1,
};

// decode_usual_event_v8 for one shape: only the parts it stores are read, in straight-line code
// (with every part read and kept or dropped by a test, as before, the parts a free leaves out
// cost as much as those it stores, and each part took a few tests).
template <unsigned kShape, bool kPext>
__attribute__((always_inline)) inline bool decode_usual_shape(uint8_t api, uint16_t mask,
                                                              const uint8_t* p, size_t n,
                                                              UsualEvent* ev, EventDeltas& d) {
  size_t at = 1;
  bool whole = true;  // every part ended within 8 bytes
  uint64_t stop_bits = 0;  // kPext: the parts' stop bits or'ed, 64 among them for a longer part
  auto part = [&] {
    uint64_t v;
    if constexpr (kPext) {
      // One test at the end for all parts, not one a part (word_varint_pext's `stops ? n : 0`).
      const uint64_t stop = word_varint_pext_stop(p + at, &v);
      stop_bits |= stop;
      at += (stop >> 3) + 1;  // 9 past a part with no stop: still within the 64 bytes loadable
    } else {
      const size_t len = word_varint(p + at, &v);
      whole &= len != 0;
      at += len;
    }
    return v;
  };
  // Times (and seq gaps, but with many threads) nearly always take one byte: a branch that is
  // nearly always right costs less than the word's arithmetic.
  auto small_part = [&] {
    if (p[at] < 0x80) return uint64_t{p[at++]};
    return part();
  };
  uint64_t seq_delta = 1, stack_id = 0, address = 0, size = 0, stream = 0;
  if constexpr ((kShape & kShapeSeqGap) != 0) seq_delta = small_part();
  const uint64_t time_delta = small_part();
  if constexpr ((kShape & kShapeStackId) != 0) stack_id = part();
  if constexpr ((kShape & kShapeAddress) != 0) address = part();
  if constexpr ((kShape & kShapeSize) != 0) size = part();
  if constexpr ((kShape & kShapeStream) != 0) stream = part();
  if (!whole || (stop_bits & 64) || at != n) return false;
  if ((kShape & kShapeSeqGap) != 0 && seq_delta == 0) return false;
  if ((kShape & kShapeStackId) != 0 && stack_id > UINT32_MAX) return false;

  ev->api = api;
  ev->mask = mask;
  ev->stack_id = static_cast<uint32_t>(stack_id);
  ev->size = (kShape & kShapeSize) != 0 ? unscale_unsigned(size) : 0;
  d.last_seq += seq_delta;
  d.last_time_ns = (time_units(d.last_time_ns) + time_delta) << kTimeShift;
  if constexpr ((kShape & kShapeAddress) != 0)
    d.last_address += static_cast<uint64_t>(unscale_signed(address));
  if constexpr ((kShape & kShapeStream) != 0)
    d.last_stream += static_cast<uint64_t>(unzigzag(stream));
  return true;
}

// The whole Event of a usual event `u` just decoded with `d`: what decode_event_v8 makes of it.
inline void expand_usual_event(const UsualEvent& u, const EventDeltas& d, Event* ev) {
  ev->api = u.api;
  ev->seq = d.last_seq;
  ev->time_ns = d.last_time_ns;
  ev->result = 0;
  ev->stack_id = u.stack_id;
  EventFields& f = ev->f;
  clear_fields(f, u.mask);
  if (u.mask & kHasAddress) f.address = d.last_address;
  f.size = u.size;
  if (u.mask & kHasStream) f.stream = d.last_stream;
  if (u.mask & kHasDevice) f.device = d.last_device;
}

// The shape bits of an event's head (kShapeSeqGap, kShapeStackId), or kUsualShapes for a head
// that stores a part the usual event never has: one load for the dispatch's head half.
inline constexpr auto kUsualShapeOfHead = [] {
  std::array<uint8_t, 32> t{};
  for (unsigned head = 0; head < 32; ++head)
    t[head] =
        head & ~unsigned{kSeqGap | kHasStackId}
            ? kUsualShapes
            : (head & kSeqGap ? kShapeSeqGap : 0u) | (head & kHasStackId ? kShapeStackId : 0u);
  return t;
}();

// Version 8's usual event — no failure, no new fields or device, only address, size, stream and
// device among its fields — decoded by the straight-line decoder of its shape (one jump on the
// parts it stores, then no test per part). Returns false, changing nothing, for any other event
// or bytes it cannot vouch for (a varint over 8 bytes, a payload that does not end where its
// last part does, a zero seq delta): decode_event_v8 then decodes or rejects it, so the two
// accept and produce exactly the same. `readable` must leave 64 bytes past the payload (7 parts
// of at most 8 bytes, each loaded as one word). With kPext, parts are read by
// word_varint_pext_stop: only where the CPU has BMI2 (the analyzer's cpu_features.h says).
template <bool kPext = false>
inline bool decode_usual_event_v8(uint8_t head, const uint8_t* p, size_t n, UsualEvent* ev,
                                  EventDeltas& d) {
  constexpr uint16_t kUsualFields = kHasAddress | kHasSize | kHasStream | kHasDevice | kIsFree;
  const uint8_t api = p[0];
  const uint16_t mask = d.api_fields[api];
  if (mask & ~kUsualFields) return false;
  // A head with other parts gives kUsualShapes or more: the switch's default. (A payload under
  // 2 bytes needs no test of its own: every shape reads the api and the time, and refuses a
  // payload that does not end where its last part does.)
  const unsigned shape = kUsualShapeOfHead[head & 31] |
                         (mask & (kHasAddress | kHasSize | kHasStream)) << kShapeFieldShift;
#define GMEMHOOK_USUAL_SHAPE(s) \
  case s:                       \
    return decode_usual_shape<s, kPext>(api, mask, p, n, ev, d);
  switch (shape) {
    // clang-format would indent each case deeper than the one before.
    // clang-format off
    GMEMHOOK_USUAL_SHAPE(0) GMEMHOOK_USUAL_SHAPE(1) GMEMHOOK_USUAL_SHAPE(2) GMEMHOOK_USUAL_SHAPE(3)
    GMEMHOOK_USUAL_SHAPE(4) GMEMHOOK_USUAL_SHAPE(5) GMEMHOOK_USUAL_SHAPE(6) GMEMHOOK_USUAL_SHAPE(7)
    GMEMHOOK_USUAL_SHAPE(8) GMEMHOOK_USUAL_SHAPE(9) GMEMHOOK_USUAL_SHAPE(10)
    GMEMHOOK_USUAL_SHAPE(11) GMEMHOOK_USUAL_SHAPE(12) GMEMHOOK_USUAL_SHAPE(13)
    GMEMHOOK_USUAL_SHAPE(14) GMEMHOOK_USUAL_SHAPE(15) GMEMHOOK_USUAL_SHAPE(16)
    GMEMHOOK_USUAL_SHAPE(17) GMEMHOOK_USUAL_SHAPE(18) GMEMHOOK_USUAL_SHAPE(19)
    GMEMHOOK_USUAL_SHAPE(20) GMEMHOOK_USUAL_SHAPE(21) GMEMHOOK_USUAL_SHAPE(22)
    GMEMHOOK_USUAL_SHAPE(23) GMEMHOOK_USUAL_SHAPE(24) GMEMHOOK_USUAL_SHAPE(25)
    GMEMHOOK_USUAL_SHAPE(26) GMEMHOOK_USUAL_SHAPE(27) GMEMHOOK_USUAL_SHAPE(28)
    GMEMHOOK_USUAL_SHAPE(29) GMEMHOOK_USUAL_SHAPE(30) GMEMHOOK_USUAL_SHAPE(31)
    // clang-format on
  }
#undef GMEMHOOK_USUAL_SHAPE
  static_assert(kUsualShapes == 32);
  return false;  // a head with parts no shape has
}

// The same, into a whole Event.
template <bool kPext = false>
inline bool decode_usual_event_v8(uint8_t head, const uint8_t* p, size_t n, Event* ev,
                                  EventDeltas& d) {
  UsualEvent u;
  if (!decode_usual_event_v8<kPext>(head, p, n, &u, d)) return false;
  expand_usual_event(u, d, ev);
  return true;
}

// Version 8: the head (from the record type) says which of the leading parts are stored.
inline bool decode_event_v8(uint8_t head, const uint8_t* p, size_t n, Event* ev, EventDeltas& d,
                            size_t readable) {
  PayloadReader r(p, n, readable);
  if (!r.u8(&ev->api)) return false;
  uint64_t seq_delta = 1, time_delta, result = 0, stack_id = 0;
  uint64_t mask = d.api_fields[ev->api];
  if ((head & kSeqGap) && !r.varint(&seq_delta)) return false;
  if (!r.varint(&time_delta)) return false;
  if ((head & kFailed) && !r.varint(&result)) return false;
  if ((head & kHasStackId) && !r.varint(&stack_id)) return false;
  if ((head & kNewFields) && (!r.varint(&mask) || mask > kKnownFields)) return false;
  if (seq_delta == 0 || result > UINT32_MAX || stack_id > UINT32_MAX) return false;
  if ((head & kNewDevice) && !(mask & kHasDevice)) return false;  // a device of nothing
  d.api_fields[ev->api] = static_cast<uint16_t>(mask & ~kOneOffFields);
  ev->seq = d.last_seq + seq_delta;
  ev->time_ns = (time_units(d.last_time_ns) + time_delta) << kTimeShift;
  ev->result = static_cast<uint32_t>(result);
  ev->stack_id = static_cast<uint32_t>(stack_id);
  EventFields& f = ev->f;
  clear_fields(f, mask);
  const bool plain = f.has(kPlainNumbers);
  if (f.has(kHasAddress)) {
    uint64_t v;
    if (!r.varint(&v)) return false;
    f.address = d.last_address + static_cast<uint64_t>(plain ? unzigzag(v) : unscale_signed(v));
  }
  if (f.has(kHasSize)) {
    if (!r.varint(&f.size)) return false;
    if (!plain) f.size = unscale_unsigned(f.size);
  }
  if (f.has(kHasStream)) {
    int64_t delta;
    if (!r.zigzag(&delta)) return false;
    f.stream = d.last_stream + static_cast<uint64_t>(delta);
  }
  if (!decode_middle_fields(r, f, head & kNewDevice) || !decode_last_fields(r, f, d)) return false;
  if (head & kNewDevice) d.last_device = f.device;
  if (f.has(kHasDevice) && !(head & kNewDevice)) f.device = d.last_device;
  f.mask &= ~(kMovedFields | kPlainNumbers);  // how numbers were stored concerns the codec only
  if (f.has(kHasAddress)) d.last_address = f.address;
  if (f.has(kHasStream)) d.last_stream = f.stream;
  d.last_seq = ev->seq;
  d.last_time_ns = ev->time_ns;
  return true;
}

// Decodes one event record of the file `d` belongs to, given its record type. Returns false on
// malformed input (nothing in `d` is trusted then). Sequence numbers must increase within a
// file; a zero delta is rejected as damage. `readable` (>= n) is how many bytes from p may be
// loaded (the rest of a mapped file): a reader that knows it decodes faster, never differently.
// kPext as for decode_usual_event_v8.
template <bool kPext = false>
inline bool decode_event(uint8_t type, const uint8_t* p, size_t n, Event* ev, EventDeltas& d,
                         size_t readable = 0) {
  if (d.version >= kFirstHeadVersion) {
    if (!is_event_type(type, d.version)) return false;
    // The usual event first, apart: inlined here it spares the general decoder's entry.
    if (readable >= n + 64 && decode_usual_event_v8<kPext>(type & kEventHeadBits, p, n, ev, d))
      return true;
    return decode_event_v8(type & kEventHeadBits, p, n, ev, d, readable);
  }
  return is_event_type(type, d.version) && decode_event_v7(p, n, ev, d);
}

// ---------------------------------------------------------------------------------------------
// The other records (format.h gives their layouts). For each: a plain struct of the payload's
// fields, holding views and spans rather than containers because the interposer fills them from
// its own memory inside hooks, where nothing may allocate; its encoder (encode_fields, written
// once for PayloadWriter and SizeCounter); and its decoder, which checks every field the way
// format.h limits it. Strings and lists a decoder returns point into the payload or into room
// the caller lends.
// ---------------------------------------------------------------------------------------------

inline constexpr size_t varint_size(uint64_t v) {
  size_t n = 1;
  for (; v >= 0x80; v >>= 7) ++n;
  return n;
}

// Counts what a PayloadWriter would write: the log writer reserves a record's exact size, encodes
// the payload in place and stores the header last (format.h, crash safety).
class SizeCounter {
 public:
  void u8(uint8_t) { ++n_; }
  void varint(uint64_t v) { n_ += varint_size(v); }
  void zigzag(int64_t v) { varint(format::zigzag(v)); }
  void string(std::string_view s) { n_ += varint_size(s.size()) + s.size(); }
  size_t size() const { return n_; }

 private:
  size_t n_ = 0;
};

// Why a decoder rejected a payload: enough for the analyzer to name the field in its message.
struct DecodeError {
  enum class Kind : uint8_t {
    None,
    Missing,     // `field` could not be read as a `shape` (truncated, or too long a string)
    OverLimit,   // the count `field` is `value`, above `limit`
    DoesNotFit,  // `value` items of `field` need more than the `limit` bytes left
    Unexpected,  // `field` says what was expected; `value` is what was found
    LeftOver,    // `value` bytes follow the last field
  };
  enum class Shape : uint8_t { Varint, Zigzag, Byte, String };
  Kind kind = Kind::None;
  Shape shape = Shape::Varint;
  const char* field = nullptr;
  uint64_t value = 0;
  uint64_t limit = 0;
};

// A PayloadReader whose reads name their field. The first failure is kept; every read after it
// returns 0 (or an empty string), so a decoder reads straight through and asks once at the end.
class FieldReader {
 public:
  FieldReader(const uint8_t* p, size_t n) : in_(p, n) {}

  uint64_t varint(const char* field) {
    uint64_t v = 0;
    if (ok() && !in_.varint(&v)) missing(field, DecodeError::Shape::Varint);
    return ok() ? v : 0;
  }
  int64_t zigzag(const char* field) {
    int64_t v = 0;
    if (ok() && !in_.zigzag(&v)) missing(field, DecodeError::Shape::Zigzag);
    return ok() ? v : 0;
  }
  uint8_t u8(const char* field) {
    uint8_t v = 0;
    if (ok() && !in_.u8(&v)) missing(field, DecodeError::Shape::Byte);
    return ok() ? v : 0;
  }
  // A byte that must be 0 or 1 (`expected` names the field and that rule).
  bool flag(const char* field, const char* expected) {
    uint8_t v = u8(field);
    expect(v <= 1, expected, v);
    return v == 1;
  }
  std::string_view string(const char* field) {
    std::string_view s;
    if (ok() && !in_.string(&s)) missing(field, DecodeError::Shape::String);
    return ok() ? s : std::string_view();
  }
  // A count of the items that follow, at most `limit`. Each item takes at least `min_item_bytes`,
  // so a count the payload cannot hold is refused before anyone makes room for it.
  uint64_t count(const char* field, uint64_t limit, uint64_t min_item_bytes) {
    uint64_t n = varint(field);
    if (ok() && n > limit) fail(DecodeError::Kind::OverLimit, field, n, limit);
    if (ok() && n * min_item_bytes > in_.remaining())
      fail(DecodeError::Kind::DoesNotFit, field, n, in_.remaining());
    return ok() ? n : 0;
  }
  // Unless `good`, fails with `expected` (what a valid payload holds here) and the value found.
  void expect(bool good, const char* expected, uint64_t found) {
    if (ok() && !good) fail(DecodeError::Kind::Unexpected, expected, found, 0);
  }
  // True when every field was read and nothing is left over; otherwise *err says why.
  bool finish(DecodeError* err) {
    if (ok() && !in_.at_end()) fail(DecodeError::Kind::LeftOver, nullptr, in_.remaining(), 0);
    *err = error_;
    return ok();
  }
  bool ok() const { return error_.kind == DecodeError::Kind::None; }
  // Whether every byte was read: fields added to a record by a later version are read only when
  // present.
  bool at_end() const { return in_.at_end(); }

 private:
  void missing(const char* field, DecodeError::Shape shape) {
    fail(DecodeError::Kind::Missing, field, 0, 0);
    error_.shape = shape;
  }
  void fail(DecodeError::Kind kind, const char* field, uint64_t value, uint64_t limit) {
    error_ = {kind, DecodeError::Shape::Varint, field, value, limit};
  }

  PayloadReader in_;
  DecodeError error_;
};

// --- Stack -----------------------------------------------------------------------------------

// A Python frame of a stack as one word, the form the interposer collects and interns them in:
// code_id << 32 | where (format.h: where = instruction byte offset << 1 | is_entry).
inline constexpr uint64_t py_frame_word(uint32_t code_id, uint32_t where) {
  return uint64_t{code_id} << 32 | where;
}
inline constexpr uint32_t py_frame_code_id(uint64_t word) {
  return static_cast<uint32_t>(word >> 32);
}
inline constexpr uint32_t py_frame_where(uint64_t word) { return static_cast<uint32_t>(word); }

struct StackPayload {
  static constexpr RecordType kType = RecordType::Stack;
  uint32_t id = 0;
  std::span<const uint64_t> frames;  // return addresses, innermost first
  std::span<const uint64_t> python;  // py_frame_word()s, innermost first
};

template <class Out>
void encode_fields(Out& w, const StackPayload& s) {
  w.varint(s.id);
  w.varint(s.frames.size());
  uint64_t prev = 0;
  for (uint64_t pc : s.frames) {
    w.zigzag(static_cast<int64_t>(pc - prev));
    prev = pc;
  }
  w.varint(s.python.size());
  for (uint64_t f : s.python) {
    w.varint(py_frame_code_id(f));
    w.varint(py_frame_where(f));
  }
}

// Frames land in `frame_room` and `py_room` (kMaxFrames and kMaxPyFrames words hold any valid
// stack). Code ids are not checked against the file's PyCode records here.
inline bool decode(const uint8_t* p, size_t n, StackPayload* s, std::span<uint64_t> frame_room,
                   std::span<uint64_t> py_room, DecodeError* err) {
  FieldReader in(p, n);
  uint64_t id = in.varint("id");
  in.expect(id != 0 && id <= UINT32_MAX, "an id in [1, 2^32)", id);
  s->id = static_cast<uint32_t>(id);
  uint64_t count = in.count("frame count", std::min<uint64_t>(kMaxFrames, frame_room.size()), 1);
  uint64_t address = 0;
  for (uint64_t i = 0; i < count && in.ok(); ++i) {
    address += static_cast<uint64_t>(in.zigzag("frame address delta"));
    frame_room[i] = address;
  }
  s->frames = frame_room.first(count);
  uint64_t pycount =
      in.count("python frame count", std::min<uint64_t>(kMaxPyFrames, py_room.size()), 2);
  for (uint64_t i = 0; i < pycount && in.ok(); ++i) {
    uint64_t code_id = in.varint("python frame code_id");
    in.expect(code_id != 0 && code_id <= UINT32_MAX, "a python frame code_id in [1, 2^32)",
              code_id);
    uint64_t where = in.varint("python frame where");
    in.expect(where <= UINT32_MAX, "a python frame where < 2^32", where);
    py_room[i] = py_frame_word(static_cast<uint32_t>(code_id), static_cast<uint32_t>(where));
  }
  s->python = py_room.first(pycount);
  return in.finish(err);
}

// --- PyCode ----------------------------------------------------------------------------------

struct PyCodePayload {
  static constexpr RecordType kType = RecordType::PyCode;
  uint32_t id = 0;
  uint16_t py_version = 0;  // (major << 8) | minor
  std::string_view filename, name;
  std::string_view qualname;  // empty before 3.11
  uint32_t first_line = 0;
  std::string_view line_table;  // co_linetable's bytes
};

template <class Out>
void encode_fields(Out& w, const PyCodePayload& c) {
  w.varint(c.id);
  w.varint(c.py_version);
  w.string(c.filename);
  w.string(c.name);
  w.string(c.qualname);
  w.varint(c.first_line);
  w.string(c.line_table);
}

inline bool decode(const uint8_t* p, size_t n, PyCodePayload* c, DecodeError* err) {
  FieldReader in(p, n);
  uint64_t id = in.varint("id");
  in.expect(id != 0 && id <= UINT32_MAX, "an id in [1, 2^32)", id);
  c->id = static_cast<uint32_t>(id);
  uint64_t version = in.varint("py_version");
  in.expect(version <= 0xffff, "py_version = (major << 8) | minor", version);
  c->py_version = static_cast<uint16_t>(version);
  c->filename = in.string("filename");
  c->name = in.string("name");
  c->qualname = in.string("qualname");
  uint64_t first_line = in.varint("first_line");
  in.expect(first_line <= INT32_MAX, "first_line < 2^31", first_line);
  c->first_line = static_cast<uint32_t>(first_line);
  c->line_table = in.string("line_table");
  return in.finish(err);
}

// --- ProcessInfo -----------------------------------------------------------------------------

struct ProcessInfoPayload {
  static constexpr RecordType kType = RecordType::ProcessInfo;
  uint64_t pid = 0, ppid = 0;
  std::string_view exe;
  std::span<const std::string_view> argv;
  std::string_view rank, local_rank, world_size;  // empty: the variable was not set
  std::string_view library_version;
  uint64_t chunk_size_hint = 0;
};

template <class Out>
void encode_fields(Out& w, const ProcessInfoPayload& i) {
  w.varint(i.pid);
  w.varint(i.ppid);
  w.string(i.exe);
  w.varint(i.argv.size());
  for (std::string_view a : i.argv) w.string(a);
  w.string(i.rank);
  w.string(i.local_rank);
  w.string(i.world_size);
  w.string(i.library_version);
  w.varint(i.chunk_size_hint);
}

// The arguments land in `argv_room` (kMaxArgs views hold any valid record).
inline bool decode(const uint8_t* p, size_t n, ProcessInfoPayload* i,
                   std::span<std::string_view> argv_room, DecodeError* err) {
  FieldReader in(p, n);
  i->pid = in.varint("pid");
  i->ppid = in.varint("ppid");
  i->exe = in.string("exe");
  uint64_t argc = in.count("argc", std::min<uint64_t>(kMaxArgs, argv_room.size()), 1);
  for (uint64_t a = 0; a < argc && in.ok(); ++a) argv_room[a] = in.string("argv string");
  i->argv = argv_room.first(argc);
  i->rank = in.string("rank");
  i->local_rank = in.string("local_rank");
  i->world_size = in.string("world_size");
  i->library_version = in.string("library_version");
  i->chunk_size_hint = in.varint("chunk_size_hint");
  return in.finish(err);
}

// --- ModulesBegin ----------------------------------------------------------------------------

struct ModulesBeginPayload {
  static constexpr RecordType kType = RecordType::ModulesBegin;
  uint64_t seq = 0;    // sequence number when the snapshot was taken
  uint64_t count = 0;  // Module records that follow
};

template <class Out>
void encode_fields(Out& w, const ModulesBeginPayload& b) {
  w.varint(b.seq);
  w.varint(b.count);
}

inline bool decode(const uint8_t* p, size_t n, ModulesBeginPayload* b, DecodeError* err) {
  FieldReader in(p, n);
  b->seq = in.varint("seq");
  b->count = in.count("count", kMaxModules, 0);  // the Module records follow, not items here
  return in.finish(err);
}

// --- Module ----------------------------------------------------------------------------------

// One PT_LOAD segment of a loaded object; vaddr is relative to the object's load bias.
struct Segment {
  uint64_t vaddr = 0;
  uint64_t memsz = 0;
  uint64_t flags = 0;  // PF_X = 1, PF_W = 2, PF_R = 4
};

struct ModulePayload {
  static constexpr RecordType kType = RecordType::Module;
  std::string_view path;
  std::string_view build_id;  // raw bytes, may be empty
  uint64_t load_bias = 0;
  std::span<const Segment> segments;
};

template <class Out>
void encode_fields(Out& w, const ModulePayload& m) {
  w.string(m.path);
  w.string(m.build_id);
  w.varint(m.load_bias);
  w.varint(m.segments.size());
  for (const Segment& s : m.segments) {
    w.varint(s.vaddr);
    w.varint(s.memsz);
    w.varint(s.flags);
  }
}

// The segments land in `segment_room` (kMaxSegments hold any valid record).
inline bool decode(const uint8_t* p, size_t n, ModulePayload* m, std::span<Segment> segment_room,
                   DecodeError* err) {
  FieldReader in(p, n);
  m->path = in.string("path");
  m->build_id = in.string("build_id");
  m->load_bias = in.varint("load_bias");
  uint64_t nsegs = in.count("nsegs", std::min<uint64_t>(kMaxSegments, segment_room.size()), 3);
  for (uint64_t i = 0; i < nsegs && in.ok(); ++i) {
    Segment& s = segment_room[i];
    s.vaddr = in.varint("segment vaddr");
    s.memsz = in.varint("segment memsz");
    s.flags = in.varint("segment flags");
  }
  m->segments = segment_room.first(nsegs);
  return in.finish(err);
}

// --- Note ------------------------------------------------------------------------------------

struct NotePayload {
  static constexpr RecordType kType = RecordType::Note;
  std::string_view text;
};

template <class Out>
void encode_fields(Out& w, const NotePayload& n) {
  w.string(n.text);
}

inline bool decode(const uint8_t* p, size_t n, NotePayload* note, DecodeError* err) {
  FieldReader in(p, n);
  note->text = in.string("text");
  return in.finish(err);
}

// --- NvmlSample ------------------------------------------------------------------------------

struct NvmlSamplePayload {
  static constexpr RecordType kType = RecordType::NvmlSample;
  NvmlReason reason = NvmlReason::Periodic;
  uint64_t seq = 0;
  uint64_t time_delta_ns = 0;  // since the process file's start
  int32_t device = 0;          // CUDA ordinal
  bool listed = false;         // this pid was in NVML's compute-process list
  uint64_t process_used = 0;
  uint64_t total = 0, used = 0;  // the whole device
};

template <class Out>
void encode_fields(Out& w, const NvmlSamplePayload& s) {
  w.zigzag(s.device);
  w.u8(static_cast<uint8_t>(s.reason));
  w.u8(s.listed ? 1 : 0);
  w.varint(s.seq);
  w.varint(s.time_delta_ns);
  w.varint(s.process_used);
  w.varint(s.total);
  w.varint(s.used);
}

inline bool decode(const uint8_t* p, size_t n, NvmlSamplePayload* s, DecodeError* err) {
  FieldReader in(p, n);
  int64_t device = in.zigzag("device");
  in.expect(device >= 0 && device <= INT32_MAX, "a device ordinal >= 0",
            static_cast<uint64_t>(device));
  s->device = static_cast<int32_t>(device);
  uint8_t reason = in.u8("reason");
  in.expect(reason >= static_cast<uint8_t>(NvmlReason::FirstCall) &&
                reason <= static_cast<uint8_t>(NvmlReason::Exit),
            "reason from 1 (first-call) to 5 (exit)", reason);
  s->reason = static_cast<NvmlReason>(reason);
  s->listed = in.flag("listed", "listed = 0 or 1");
  s->seq = in.varint("seq");
  s->time_delta_ns = in.varint("time_delta");
  s->process_used = in.varint("process_used");
  s->total = in.varint("total");
  s->used = in.varint("used");
  return in.finish(err);
}

// --- End -------------------------------------------------------------------------------------

struct EndPayload {
  static constexpr RecordType kType = RecordType::End;
  EndHow how = EndHow::Exit;
  int64_t status = 0;
  uint64_t last_seq = 0;
  uint64_t time_delta_ns = 0;  // since the process file's start
  bool cuda_used = false;
  // Version 3: what the recorder could not write (format.h).
  uint64_t not_recorded = 0;
  uint64_t first_lost_seq = 0;
  uint64_t write_error = 0;
};

template <class Out>
void encode_fields(Out& w, const EndPayload& e) {
  w.u8(static_cast<uint8_t>(e.how));
  w.zigzag(e.status);
  w.varint(e.last_seq);
  w.varint(e.time_delta_ns);
  w.u8(e.cuda_used ? 1 : 0);
  w.varint(e.not_recorded);
  w.varint(e.first_lost_seq);
  w.varint(e.write_error);
}

inline bool decode(const uint8_t* p, size_t n, EndPayload* e, DecodeError* err) {
  FieldReader in(p, n);
  uint8_t how = in.u8("how");
  in.expect(how >= static_cast<uint8_t>(EndHow::Exit) && how <= static_cast<uint8_t>(EndHow::Exec),
            "how = 1 (exit), 2 (_exit) or 3 (exec)", how);
  e->how = static_cast<EndHow>(how);
  e->status = in.zigzag("status");
  e->last_seq = in.varint("seq");
  e->time_delta_ns = in.varint("time_delta");
  e->cuda_used = in.flag("cuda_used", "cuda_used = 0 or 1");
  if (!in.at_end()) {  // version 3
    e->not_recorded = in.varint("not_recorded");
    e->first_lost_seq = in.varint("first_lost");
    e->write_error = in.varint("error");
  }
  return in.finish(err);
}

// --- Any of the records above ----------------------------------------------------------------

// The exact size of `p`'s payload: what a writer reserves before encoding it in place.
template <class Payload>
size_t payload_size(const Payload& p) {
  SizeCounter c;
  encode_fields(c, p);
  return c.size();
}

// Encodes `p` into out, which has room for payload_size(p) bytes; returns that size.
template <class Payload>
size_t encode(uint8_t* out, const Payload& p) {
  PayloadWriter w(out);
  encode_fields(w, p);
  return w.size();
}

}  // namespace gmemhook::format
