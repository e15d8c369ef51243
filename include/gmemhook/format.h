// The gmemhook log format: what libgmemhook.so writes and the analyzer reads, written down once.
// A change to any layout here must bump kFormatVersion; readers refuse versions they don't know.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>


namespace gmemhook::format {

// ---------------------------------------------------------------------------------------------
// Layout on disk
//
//   <run>/<exe>.<pid>/process.gmh        process header, module maps, notes, end record
//   <run>/<exe>.<pid>/thread.<tid>.gmh   one per thread that called CUDA: stacks and events
//
// Every file starts with a FileHeader, followed by a stream of records. Files grow in chunks of
// FileHeader::chunk_size bytes (the header lives in the first chunk); a record never straddles a
// chunk boundary, and a writer that cannot fit the next record ends the chunk with a ChunkEnd
// record. Unwritten bytes are zero, so a zero record header means "nothing more was committed".
// From version 6 on chunks grow: the first is chunk_size bytes, each next one doubles up to
// max_chunk_size, and all later ones have that size (ChunkGeometry). A thread that records one
// event costs one small chunk, not a megabyte reserved up front, and a writer that
// finishes a file cuts it to the bytes it committed.
//
// Crash safety: the writer stores a record's payload first and its 2-byte header last (see
// RecordHeader). The file is a MAP_SHARED mapping, so whatever was stored before the process died
// is in the page cache; a record whose header was never stored reads as zero and ends the stream.
// A process that ended without an End record in process.gmh was killed or crashed.
//
// Chunk seals (version 7): a finished chunk ends with an 8-byte seal, so damage to
// committed bytes is found rather than read as other numbers. The seal is one little-endian u64,
// CRC32C (crc32c.h) of the chunk's bytes from its start up to the seal in the low half and
// kSealMarker in the high half, stored by one aligned 8-byte store after everything it covers:
// a reader sees either no seal (zero) or a whole one, never half of one. It sits in the chunk's
// last 8 bytes, which the writer keeps free (records and ChunkEnd end before them); when the
// writer cuts a finished file, the last chunk is cut to its records, zeros up to a multiple of 8
// bytes from the chunk's start, and the seal: then the seal is the file's last 8 bytes.
// A chunk whose seal is still zero (the live tail, a process killed mid-chunk) is read without a
// check; a chunk with a seal that does not match is damage and is not read. The writer seals a
// chunk before it allocates the next, so in a finished log only the last chunk may lack one.
// What a lost chunk costs: records never cross a boundary, so reading resumes at the next chunk.
// Process-file records stand alone. Thread-file events do not: nothing is restated at a chunk
// boundary, an event's seq, time, address, stream, allocator totals, device and (version 8) its
// api's fields are differences from earlier events (EventDeltas), so the events after a lost
// chunk can be framed and counted, not decoded. Stack and code ids are plain numbers.
// ---------------------------------------------------------------------------------------------

inline constexpr char kMagic[8] = {'G', 'M', 'E', 'M', 'H', 'O', 'O', 'K'};
// Version 2: the event's field mask is a varint with renumbered bits, allocator totals and a
// free marker (see "Event payload"). Version 3: the End record says how many events the recorder
// could not write and why, and an image replaced by exec ends with how = Exec. Version 4: events
// may carry a graph and flags (graph memory nodes, instantiation). Version 5: NvmlSample records
// in process.gmh (what nvidia-smi would show); older files simply have none. Version 6: chunks
// grow (FileHeader::max_chunk_size), and a file may end anywhere after its last record.
// Version 7: chunk seals (CRC32C, see "Chunk seals"). Version 8: compact events, at most 12 bytes
// an event on average (bench/log_size measures it): the record type carries the event's head,
// and what repeats or is implied is left out (see "Event payload"). Readers still accept
// versions 1 to 7 (their End records may lack the tail, their masks the new bits, their chunks
// are all chunk_size before 6 and carry no seal before 7, their events are the version-7 layout).
inline constexpr uint16_t kFormatVersion = 8;
inline constexpr uint16_t kFirstSealedVersion = 7;
inline constexpr uint16_t kFirstHeadVersion = 8;
inline constexpr uint16_t kOldestReadableVersion = 1;
inline constexpr const char* kProcessFileName = "process.gmh";
inline constexpr const char* kThreadFilePrefix = "thread.";
inline constexpr const char* kFileSuffix = ".gmh";

// Limits a reader enforces before trusting any length or count read from a file.
inline constexpr uint32_t kMaxChunkSize = 64u << 20;
inline constexpr uint32_t kMinChunkSize = 4096;
inline constexpr uint32_t kMaxBigRecord = 16u << 20;  // module maps of huge processes fit
inline constexpr uint32_t kMaxFrames = 1024;
inline constexpr uint32_t kMaxPyFrames = 1024;
inline constexpr uint32_t kMaxString = 64u << 10;
inline constexpr uint32_t kMaxModules = 1u << 16;
inline constexpr uint32_t kMaxSegments = 64;
inline constexpr uint32_t kMaxArgs = 4096;

enum class FileKind : uint16_t { Process = 1, Thread = 2 };

// Chunk seals (version 7).
inline constexpr size_t kSealSize = 8;
inline constexpr uint32_t kSealMarker = 0x4c414553;  // "SEAL" in the file's byte order
inline constexpr uint64_t seal_value(uint32_t crc) {
  return crc | static_cast<uint64_t>(kSealMarker) << 32;
}

// Fixed 64-byte little-endian header at offset 0 of every file. Every field starts at zero: a
// writer names the ones it knows (framing.h, put_file_header, adds magic and version).
struct FileHeader {
  char magic[8] = {};
  uint16_t version = 0;
  uint16_t kind = 0;                // FileKind
  uint32_t chunk_size = 0;          // bytes per chunk; records never cross a multiple of this
  uint64_t tid = 0;                 // kernel thread id (Thread files), 0 for the process file
  uint64_t start_monotonic_ns = 0;  // CLOCK_MONOTONIC when the file was created: base for deltas
  uint64_t start_realtime_ns = 0;   // CLOCK_REALTIME at the same instant (for wall-clock display)
  uint32_t pid = 0;
  uint32_t max_chunk_size = 0;  // version >= 6: chunks double up to this size; 0 = all chunk_size
  // The step of the events' times in ns: the coarse clock's resolution (4 ms on most kernels)
  // when events are timed by the kernel's tick (GMEMHOOK_TIME=coarse, the default), 1 when
  // each event reads the clock itself (=precise). 0 in files written before 2026-12-02 (then
  // still version 8, the field reserved and zero): read as precise. Reports show event times
  // no finer than this step.
  uint64_t time_step_ns = 0;
  uint64_t reserved1 = 0;
};
static_assert(sizeof(FileHeader) == 64);

// Where chunks begin and end: boundaries at first, 2·first, 4·first … max, then every max bytes.
// With max == first (every file before version 6) all chunks are `first` bytes. Both powers of
// two, so every boundary is a multiple of the page size and can be mapped.
struct ChunkGeometry {
  uint64_t first;
  uint64_t max;

  static ChunkGeometry of(const FileHeader& h) {
    return {h.chunk_size, h.max_chunk_size > h.chunk_size ? h.max_chunk_size : h.chunk_size};
  }
  uint64_t start_of(uint64_t offset) const {
    if (offset < first) return 0;
    if (offset >= max) return offset / max * max;
    uint64_t start = first;
    while (start * 2 <= offset) start *= 2;
    return start;
  }
  uint64_t end_of(uint64_t offset) const {
    uint64_t start = start_of(offset);
    return start == 0 ? first : start < max ? start * 2 : start + max;
  }
};

// ---------------------------------------------------------------------------------------------
// Record framing
//
// Small records: u16 header = type | (payload_len << 8), payload_len <= 255, type < 0x80.
// Big records:   u16 header = type | 0 << 8, type >= 0x80, then u32 payload_len, then payload.
// The header is stored last (it is the commit). Header 0 = end of committed data.
// ---------------------------------------------------------------------------------------------
enum class RecordType : uint8_t {
  // Small records.
  Event = 0x01,     // thread files, versions 1 to 7 (version 8: kEventTypeBase | head)
  End = 0x02,       // process file: the process ended through exit()/_exit()/exec
  ModulesBegin = 0x03,  // process file: a new snapshot of loaded objects follows
  NvmlSample = 0x04,    // process file: what NVML (nvidia-smi) said about one device (version 5)
  ChunkEnd = 0x7f,  // rest of this chunk is unused; continue at the next chunk boundary
  // Big records.
  Stack = 0x81,        // thread files: an interned call stack (native, then Python frames)
  PyCode = 0x82,       // thread files: a Python code object, written once, referred to by id
  ProcessInfo = 0x90,  // process file, first record
  Module = 0x91,       // process file: one loaded object of the snapshot begun before it
  Note = 0x92,         // either file: a human-readable remark (e.g. "CUDA was never used")
};

inline constexpr bool is_big(uint8_t type) { return type >= 0x80; }

// Version 8: an event's record type is kEventTypeBase | head, the head's five bits (EventHead)
// saying which of the event's leading parts are stored. Never zero, never another record's type.
inline constexpr uint8_t kEventTypeBase = 0x20;
inline constexpr uint8_t kEventHeadBits = 0x1f;
inline constexpr bool is_event_type(uint8_t type, uint16_t version) {
  return version >= kFirstHeadVersion ? (type & ~kEventHeadBits) == kEventTypeBase
                                      : type == static_cast<uint8_t>(RecordType::Event);
}
inline constexpr size_t kSmallHeaderSize = 2;
inline constexpr size_t kBigHeaderSize = 6;
inline constexpr size_t kMaxSmallPayload = 255;

// ---------------------------------------------------------------------------------------------
// Field encodings used inside payloads
//   varint  : unsigned LEB128, at most 10 bytes
//   zigzag  : signed value mapped to unsigned ((v << 1) ^ (v >> 63)), then varint
//   string  : varint length (<= kMaxString), then bytes (no terminator)
// ---------------------------------------------------------------------------------------------

inline constexpr uint64_t zigzag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline constexpr int64_t unzigzag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

// Writes v at p (which must have 10 bytes of room); returns bytes written.
inline size_t put_varint(uint8_t* p, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    p[n++] = static_cast<uint8_t>(v) | 0x80;
    v >>= 7;
  }
  p[n++] = static_cast<uint8_t>(v);
  return n;
}

// Reads a varint from [p, end); returns bytes consumed, or 0 when truncated or over 10 bytes.
inline size_t get_varint(const uint8_t* p, const uint8_t* end, uint64_t* out) {
  // Most fields (api, result, stack id, small deltas) fit in one byte: the analyzer's hot path.
  if (p < end && *p < 0x80) {
    *out = *p;
    return 1;
  }
  if (end - p >= 10) {  // room for the longest varint: no bounds check per byte
    uint64_t v = 0;
    for (size_t i = 0; i < 10; ++i) {
      uint8_t b = p[i];
      v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
      if (!(b & 0x80)) {
        *out = v;
        return i + 1;
      }
    }
    return 0;
  }
  uint64_t v = 0;
  for (size_t i = 0; i < 10; ++i) {
    if (p + i >= end) return 0;
    uint8_t b = p[i];
    v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *out = v;
      return i + 1;
    }
  }
  return 0;
}

// A varint of at most 8 bytes from the 8 bytes at p, with no branch per byte: its length, or 0
// when it is longer (then *out is meaningless). The byte loop's exits, unpredictable on random
// addresses and sizes, were a fifth of the reader's time.
inline size_t word_varint(const uint8_t* p, uint64_t* out) {
  uint64_t w;
  __builtin_memcpy(&w, p, sizeof w);                  // little-endian, as the whole format
  const uint64_t stops = ~w & 0x8080808080808080ull;  // bytes without a continuation bit
  // Keep the bytes up to the first stop, then close the gaps between their 7-bit groups.
  uint64_t x = w & (stops ^ (stops - 1)) & 0x7f7f7f7f7f7f7f7full;
  x = (x & 0x007f007f007f007full) | ((x & 0x7f007f007f007f00ull) >> 1);
  x = (x & 0x00003fff00003fffull) | ((x & 0x3fff00003fff0000ull) >> 2);
  x = (x & 0x000000000fffffffull) | ((x & 0x0fffffff00000000ull) >> 4);
  *out = x;
  const size_t n = static_cast<size_t>(__builtin_ctzll(stops | (1ull << 63)) >> 3) + 1;
  return stops ? n : 0;
}

// word_varint by BMI2's `pext`, which closes up the 7-bit groups in one instruction (the three
// shift steps above are ~12). Only for a CPU that has it and runs it fast (cpu_features.h in the
// analyzer chooses): it is an illegal instruction elsewhere, tens of cycles on AMD before Zen 3.
// Inline asm, not the intrinsic, so the function inlines into code compiled for any x86-64.
#if defined(__x86_64__)
// What the two pext readers below share: the 8 bytes at p's stop bits (the top bit of each byte
// that ends a varint) and the first varint's 7-bit groups closed up.
struct PextWord {
  uint64_t stops, value;
};
inline PextWord pext_word(const uint8_t* p) {
  uint64_t w;
  __builtin_memcpy(&w, p, sizeof w);
  const uint64_t stops = ~w & 0x8080808080808080ull;
  const uint64_t keep = (stops ^ (stops - 1)) & 0x7f7f7f7f7f7f7f7full;
  uint64_t x;
  __asm__("pextq %[keep], %[w], %[x]" : [x] "=r"(x) : [w] "r"(w), [keep] "r"(keep));
  return {stops, x};
}
#endif

inline size_t word_varint_pext(const uint8_t* p, uint64_t* out) {
#if defined(__x86_64__)
  const PextWord v = pext_word(p);
  *out = v.value;
  const size_t n = static_cast<size_t>(__builtin_ctzll(v.stops | (1ull << 63)) >> 3) + 1;
  return v.stops ? n : 0;
#else
  return word_varint(p, out);
#endif
}

// word_varint_pext for a decoder that reads several parts and tests them once: returns the bit
// number of the varint's stop bit (7, 15 ... 63; its length is stop / 8 + 1), or 64 when none of
// the 8 bytes ends it (then *out is meaningless). BMI1's tzcnt gives 64 for no bit at all, so a
// caller ors the stops together and tests bit 6 once. Only where word_varint_pext may run (a CPU
// with BMI2 has BMI1).
inline uint64_t word_varint_pext_stop(const uint8_t* p, uint64_t* out) {
#if defined(__x86_64__)
  const PextWord v = pext_word(p);
  uint64_t stop;
  __asm__("tzcntq %[stops], %[stop]" : [stop] "=r"(stop) : [stops] "r"(v.stops) : "cc");
  *out = v.value;
  return stop;
#else
  const size_t n = word_varint(p, out);
  return n ? 8 * n - 1 : 64;
#endif
}

// get_varint for a reader that may load up to 8 bytes from p even past `end` (a payload inside a
// mapped file: `readable` is where that memory ends). Anything word_varint does not take —
// longer, cut by `end`, too near `readable` — goes to get_varint, so both accept and reject
// exactly the same bytes.
inline size_t get_varint_from_word(const uint8_t* p, const uint8_t* end, const uint8_t* readable,
                                   uint64_t* out) {
  if (readable - p >= 8) {
    const size_t n = word_varint(p, out);
    if (n != 0 && n <= static_cast<size_t>(end - p)) return n;
  }
  return get_varint(p, end, out);
}

// ---------------------------------------------------------------------------------------------
// Event payload (thread files), version 8, in this order (the head is in the record type):
//   u8      api          ApiId (see api_table.h); kind and memory type follow from it
//   varint  seq_delta    (SeqGap) as below; absent: 1, the one thread's next number
//   varint  time         CLOCK_MONOTONIC in units of 2^kTimeShift = 32 ns, rounded up, minus
//                        the previous event's (first: minus start_monotonic_ns in the same
//                        units). A reader's times are these units << kTimeShift: at most 31 ns
//                        late, less than what a hooked call costs; order across threads comes
//                        from seq, never from time. (The writer may extrapolate it from the
//                        CPU's time-stamp counter: within a few ns, interposer/base/event_time.h.)
//   varint  result       (Failed) as below; absent: 0
//   varint  stack_id     (HasStackId) as below; absent: 0
//   varint  fields       (NewFields) EventField bits; absent: those of this file's previous
//                        event of the same api (none before the first), less kOneOffFields
//   scaled  address      (HasAddress) pointer minus the previous event's address in this file,
//                        signed (zigzag of the shifted value)
//   scaled  size         (HasSize) requested bytes
//   zigzag  stream       (HasStream) CUstream/cudaStream_t minus this file's previous stream
//   varint  pool, handle, offset   as below
//   zigzag  device       (HasDevice and NewDevice) device ordinal; HasDevice without NewDevice:
//                        the device this file's events last stored (0 before any)
//   u8 memory, zigzag allocated, zigzag reserved, varint graph, varint flags   as below
// A scaled number is varint(v >> kScaleShift[c] << 2 | c), c the largest class whose shift
// leaves no bits behind: shifts 0, 8 (CUDA's 256-byte alignment), 12 (pages), 21 (2 MiB, large
// cudaMalloc). With PlainNumbers in the fields (a number of 2^62 or more) address and size are
// stored as in version 7 instead.
//
// Versions 1 to 7 (record type Event), in this order:
//   u8      api          ApiId (see api_table.h); kind and memory type follow from it
//   varint  seq_delta    process-wide sequence number minus the previous event's in this file
//                        (first event: minus 0). Sequence numbers give a total order across
//                        threads: they are taken after the CUDA call returned.
//   varint  time_delta   CLOCK_MONOTONIC ns minus the previous event's (first: minus start)
//   varint  result       the CUresult / cudaError_t the call returned (0 = success)
//   varint  stack_id     interned stack in this file (0 = none recorded)
//   varint  fields       EventField bits saying which of the following are present
//   zigzag  address      (HasAddress) pointer minus the previous event's address in this file
//   varint  size         (HasSize) requested bytes
//   varint  stream       (HasStream) CUstream/cudaStream_t value
//   varint  pool         (HasPool) CUmemoryPool value
//   varint  handle       (HasHandle) CUmemGenericAllocationHandle
//   varint  offset       (HasOffset) cuMemMap offset into the handle
//   zigzag  device       (HasDevice) device ordinal; absent = unknown (resolved from the
//                        matching allocation by the analyzer)
//   u8      memory       (HasMemory) MemoryType overriding the api's default
//   zigzag  allocated    (AllocatedMoved) see "Allocator totals"
//   zigzag  reserved     (ReservedMoved) see "Allocator totals"
//   varint  graph        (HasGraph) cudaGraph_t / CUgraph a node, capture or instantiation is
//                        about (version 4)
//   varint  flags        (HasFlags) the call's flags, e.g. cudaGraphInstantiateFlagAutoFreeOnLaunch
//                        (version 4)
//
// The field bits are numbered so that the fields of frequent events (allocations, frees,
// stream-ordered calls, PyTorch's blocks) fit in the mask's first varint byte, bits 0-6; the
// payload order above does not follow the bit numbers.
//
// Allocator totals (HasTotals): what a framework's allocator says it holds after the call —
// PyTorch's total_allocated (bytes in blocks handed out) and total_reserved (bytes it got from
// CUDA). They move by exactly the block's size from one block event to the next, so they are
// stored as corrections to an expectation, against the previous HasTotals event of this file
// (the first one: against 0 and 0):
//   expected allocated = previous allocated + size, or - size with IsFree (size 0 without HasSize)
//   expected reserved  = previous reserved
// AllocatedMoved / ReservedMoved are set only when a total differs from its expectation, and
// then carry actual minus expected (mod 2^64). A typical block event stores no total at all; a
// block for which the allocator reserved a new segment, or one of another device or thread in
// between, adds a few bytes.
// Graph pool totals (HasTotals on a graph-launch, graph-upload or graph-mem-trim event, or an
// instantiation that uploads): the same two fields, stored the same way, carry the
// driver's figures for the device's graph memory pool after the call
// (cuDeviceGetGraphMemAttribute): allocated = bytes the allocation nodes hold
// (USED_MEM_CURRENT), reserved = physical memory the pool keeps (RESERVED_MEM_CURRENT).
// The pool reserves and releases that memory inside cuGraphLaunch, cuGraphUpload and the trim,
// where no hook sees a call of its own. Absent when the driver could not say.
// IsFree carries no value: the call gave the memory back (an allocator that reports both
// directions through one entry point, like c10's, with a negative size). See event_kind_of().
//
// Version 1 differs only in the mask: one byte, bits in payload order (address, size, stream,
// pool, handle, offset, device, memory = bits 0-7), no totals.
// ---------------------------------------------------------------------------------------------
// Version 8: an event's head, the low bits of its record type.
enum EventHead : uint8_t {
  kSeqGap = 1u << 0,
  kFailed = 1u << 1,
  kHasStackId = 1u << 2,
  kNewFields = 1u << 3,
  kNewDevice = 1u << 4,
};
inline constexpr unsigned kTimeShift = 5;

enum EventField : uint16_t {
  kHasAddress = 1u << 0,
  kHasSize = 1u << 1,
  kHasStream = 1u << 2,
  kHasDevice = 1u << 3,
  kHasTotals = 1u << 4,
  kIsFree = 1u << 5,
  kHasMemory = 1u << 6,
  kHasPool = 1u << 7,
  kHasHandle = 1u << 8,
  kHasOffset = 1u << 9,
  kAllocatedMoved = 1u << 10,
  kReservedMoved = 1u << 11,
  kHasGraph = 1u << 12,
  kHasFlags = 1u << 13,
  kPlainNumbers = 1u << 14,  // version 8: address and size stored unscaled (codec-internal)
};
inline constexpr uint16_t kMovedFields = kAllocatedMoved | kReservedMoved;  // codec-internal
// Version 8: bits that say how one event's numbers are stored, never carried to the next event
// of its api; an event with any of them stores its fields.
inline constexpr uint16_t kOneOffFields = kMovedFields | kPlainNumbers;
// A mask with any other bit is damage.
inline constexpr uint16_t kKnownFields = 0x7fff;
inline constexpr uint16_t kVersion7Fields = 0x3fff;  // versions 4 to 7 had no PlainNumbers
inline constexpr uint16_t kVersion3Fields = 0xfff;   // versions 2 and 3 had no graph or flags

// A version-1 mask byte in today's bits.
inline constexpr uint16_t fields_from_version1(uint8_t mask) {
  constexpr uint16_t kBits[8] = {kHasAddress, kHasSize,   kHasStream, kHasPool,
                                 kHasHandle,  kHasOffset, kHasDevice, kHasMemory};
  uint16_t fields = 0;
  for (int i = 0; i < 8; ++i)
    if (mask & (1u << i)) fields |= kBits[i];
  return fields;
}

// ---------------------------------------------------------------------------------------------
// Stack payload (thread files):
//   varint  id           1, 2, 3 ... in order of first use in this file
//   varint  count        frames, innermost first (<= kMaxFrames)
//   count × zigzag       return address minus the previous frame's (first: minus 0).
//                        Frame 0 is the call site of the CUDA entry point; the recorder's own
//                        frames are already removed.
//   varint  pycount      Python frames of the calling thread, innermost first (<= kMaxPyFrames;
//                        0 when the thread runs no Python or Python capture is off)
//   pycount × { varint code_id, varint where }
//                        code_id: a PyCode record of this file. where = instruction byte offset
//                        << 1 | is_entry. is_entry marks the outermost Python frame run by one
//                        native call of the interpreter loop (_PyEval_EvalFrameDefault): reports
//                        put each such group of Python frames in place of that native frame.
//                        The line is found offline from the code object's line table.
//
// PyCode payload (thread files):
//   varint  id           1, 2, 3 ... in order of first use in this file
//   varint  py_version   (major << 8) | minor of the interpreter, e.g. 0x030c for 3.12
//   string  filename, string name, string qualname (empty before 3.11)
//   varint  first_line
//   string  line_table   co_linetable's bytes, in that version's own encoding
//
// ProcessInfo payload (process file, first record):
//   varint pid, varint ppid, string exe (absolute path), varint argc, argc × string argv,
//   string rank, string local_rank, string world_size   (empty = variable not set),
//   string library_version, varint chunk_size_hint
//
// ModulesBegin payload (process file, small): varint seq (sequence number when the snapshot was
//   taken), varint count (Module records that follow, <= kMaxModules). A snapshot replaces the
//   previous one; snapshots are written at start and whenever the set of loaded objects changed.
// Module payload (process file):
//   string path, string build_id (raw bytes, may be empty), varint load_bias,
//   varint nsegs (<= kMaxSegments), nsegs × { varint vaddr, varint memsz, varint flags }
//   Segments are the PT_LOAD headers (vaddr relative to load_bias, flags = PF_R/PF_W/PF_X).
//
// Note payload: string text.
//
// NvmlSample payload (process file, small, version 5): what NVML, the library nvidia-smi is built
// on, reported for one device the process uses, sampled inside the process. Never an allocation.
//   zigzag  device       CUDA device ordinal (as the program numbers it, CUDA_VISIBLE_DEVICES
//                        applied)
//   u8      reason       NvmlReason: why the sample was taken
//   u8      listed       1 when NVML's compute-process list held this pid with a value
//   varint  seq          the last sequence number handed out when it was taken: the sample saw
//                        every allocation up to this event (allocations take theirs after the call)
//   varint  time_delta   ns since the process file's start
//   varint  process_used bytes NVML counts for this process on the device (0 when not listed)
//   varint  total        the device's memory, bytes
//   varint  used         the device's used memory, bytes, all processes (nvmlDeviceGetMemoryInfo)
//
// End payload (process file, small):
//   u8      how          EndHow
//   zigzag  status       exit status passed to exit()/_exit()
//   varint  seq          last sequence number handed out
//   varint  time_delta   ns since the process file's start
//   u8      cuda_used    1 if any CUDA allocation entry point was called
//   From version 3 on (absent before):
//   varint  not_recorded events that took a sequence number but could not be written (a write
//                        failed: disk full, quota ...); 0 for a complete log
//   varint  first_lost   sequence number of the first of them (0 when none)
//   varint  error        errno of the write failure that stopped recording (0 when none)
// ---------------------------------------------------------------------------------------------
// The words reports, dumps and JSON name an enum's values by: one table per enum below, in
// value order with no gaps (names_in_order), read by name_of. A value added to such an enum needs
// its word in the table: to_string gives "?" for a value without one.
template <class E>
struct EnumName {
  E value;
  const char* name;
};
// The word for `v`, or "?" for a value the table lacks (damage, or a later version's value).
template <class E, size_t N>
constexpr const char* name_of(E v, const EnumName<E> (&names)[N]) {
  for (const EnumName<E>& n : names)
    if (n.value == v) return n.name;
  return "?";
}
template <class E, size_t N>
constexpr bool names_in_order(const EnumName<E> (&names)[N]) {
  for (size_t i = 0; i < N; ++i)
    if (static_cast<size_t>(names[i].value) != static_cast<size_t>(names[0].value) + i)
      return false;
  return true;
}

enum class NvmlReason : uint8_t {
  FirstCall = 1,
  FirstAllocation = 2,
  Periodic = 3,
  Peak = 4,
  Exit = 5
};
inline constexpr EnumName<NvmlReason> kNvmlReasonNames[] = {
    {NvmlReason::FirstCall, "first-call"},
    {NvmlReason::FirstAllocation, "first-allocation"},
    {NvmlReason::Periodic, "periodic"},
    {NvmlReason::Peak, "peak"},
    {NvmlReason::Exit, "exit"}};
static_assert(names_in_order(kNvmlReasonNames));
inline const char* to_string(NvmlReason r) { return name_of(r, kNvmlReasonNames); }

// Exec: the image was replaced by exec; the new image, if it uses CUDA, has its own directory.
enum class EndHow : uint8_t { Exit = 1, UnderscoreExit = 2, Exec = 3 };

// Memory a record refers to. Pinned host memory and managed memory are kept apart from device
// memory in every report.
enum class MemoryType : uint8_t { Device = 0, HostPinned = 1, Managed = 2, None = 3 };

// What an entry point does to the live set.
enum class EventKind : uint8_t {
  Alloc = 1,        // address+size become live (failed when result != 0)
  Free = 2,         // address stops being live (stream-ordered frees count when issued)
  Create = 3,       // cuMemCreate: physical memory behind a handle
  Release = 4,      // cuMemRelease: handle dropped (memory freed once also unmapped)
  Reserve = 5,      // cuMemAddressReserve: virtual address range
  AddressFree = 6,  // cuMemAddressFree
  Map = 7,          // cuMemMap: handle mapped at address
  Unmap = 8,        // cuMemUnmap
  // CUDA graphs: not memory themselves, but they say which allocations a graph owns (made while
  // its stream was being captured) and that replays allocate nothing new.
  CaptureBegin = 9,  // cudaStreamBeginCapture: allocations on this stream now belong to a graph
  CaptureEnd = 10,   // cudaStreamEndCapture
  GraphLaunch = 11,  // cudaGraphLaunch: a replay
  // A framework allocator's blocks (PyTorch's tensors), carved out of memory it got through the
  // kinds above: a second layer, never to be counted on top of the segments they live in.
  BlockAlloc = 12,  // a block handed out
  BlockFree = 13,   // a block taken back: a BlockAlloc entry point's event with IsFree
  // CUDA graph memory nodes. A node's address is fixed when the node is made, its
  // memory only exists from the first launch that runs the node until a free node, cudaFree or
  // an auto-free relaunch gives it back; graphs and execs only say which nodes a launch runs.
  GraphAllocNode = 14,    // address+size (and graph) of an allocation node
  GraphFreeNode = 15,     // address (and graph) of a free node
  GraphInstantiate = 16,  // handle = the exec, graph, flags
  GraphExecDestroy = 17,  // handle = the exec; its live memory stays live
  GraphDestroy = 18,      // graph
  GraphMemTrim = 19,      // memory of freed graph allocations goes back to the OS: nothing live
  // Memory of another process or allocation made reachable here: mapped, never this process's
  // allocation.
  Import = 20,       // a handle (cuMemImportFromShareableHandle) or an address+size (IPC, pools)
  ImportClose = 21,  // address: cudaIpcCloseMemHandle
  Retain = 22,       // cuMemRetainAllocationHandle: one more reference to handle at address
  Export = 23,       // cuMemExportToShareableHandle: no new memory
  // Graphs made of other graphs. A kind is never stored in a log (it follows from the
  // api id), so new kinds need no new format version (but a word in kEventKindNames).
  GraphChild = 24,  // graph = the parent, handle = the child graph whose nodes it now runs
  GraphClone = 25,  // handle = the clone, graph = the original: same memory nodes
  // cudaGraphUpload: handle = the exec. Maps its memory ahead of the first launch (the pool
  // reserves); nothing is allocated until a launch runs the nodes.
  GraphUpload = 26,
};

// Runtime and Driver are CUDA's two APIs; Allocator is a framework's allocator reporting its
// blocks (c10's reportMemoryUsageToProfiler, exported by PyTorch's libc10.so).
enum class Layer : uint8_t { Runtime = 1, Driver = 2, Allocator = 3 };

// What one event did: its entry point's kind, except for entry points that do several things:
// c10's one entry point takes a block back when marked IsFree; the generic cudaGraphAddNode /
// cuGraphAddNode (kind GraphAllocNode) makes a free node when marked IsFree and a child graph
// node when it names the child as its handle.
inline constexpr EventKind event_kind_of(EventKind api_kind, uint16_t fields) {
  if (api_kind == EventKind::BlockAlloc && (fields & kIsFree)) return EventKind::BlockFree;
  if (api_kind == EventKind::GraphAllocNode) {
    if (fields & kIsFree) return EventKind::GraphFreeNode;
    if (fields & kHasHandle) return EventKind::GraphChild;
  }
  return api_kind;
}

inline constexpr EnumName<EventKind> kEventKindNames[] = {
    {EventKind::Alloc, "alloc"},
    {EventKind::Free, "free"},
    {EventKind::Create, "create"},
    {EventKind::Release, "release"},
    {EventKind::Reserve, "reserve"},
    {EventKind::AddressFree, "address-free"},
    {EventKind::Map, "map"},
    {EventKind::Unmap, "unmap"},
    {EventKind::CaptureBegin, "capture-begin"},
    {EventKind::CaptureEnd, "capture-end"},
    {EventKind::GraphLaunch, "graph-launch"},
    {EventKind::BlockAlloc, "block-alloc"},
    {EventKind::BlockFree, "block-free"},
    {EventKind::GraphAllocNode, "graph-alloc-node"},
    {EventKind::GraphFreeNode, "graph-free-node"},
    {EventKind::GraphInstantiate, "graph-instantiate"},
    {EventKind::GraphExecDestroy, "graph-exec-destroy"},
    {EventKind::GraphDestroy, "graph-destroy"},
    {EventKind::GraphMemTrim, "graph-mem-trim"},
    {EventKind::Import, "import"},
    {EventKind::ImportClose, "import-close"},
    {EventKind::Retain, "retain"},
    {EventKind::Export, "export"},
    {EventKind::GraphChild, "graph-child"},
    {EventKind::GraphClone, "graph-clone"},
    {EventKind::GraphUpload, "graph-upload"}};
static_assert(names_in_order(kEventKindNames) && kEventKindNames[0].value == EventKind::Alloc);
inline const char* to_string(EventKind k) { return name_of(k, kEventKindNames); }

inline constexpr EnumName<MemoryType> kMemoryTypeNames[] = {{MemoryType::Device, "device"},
                                                            {MemoryType::HostPinned, "host-pinned"},
                                                            {MemoryType::Managed, "managed"},
                                                            {MemoryType::None, "none"}};
static_assert(names_in_order(kMemoryTypeNames) && kMemoryTypeNames[0].value == MemoryType::Device);
inline const char* to_string(MemoryType m) { return name_of(m, kMemoryTypeNames); }

}  // namespace gmemhook::format
