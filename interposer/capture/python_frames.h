// The calling thread's Python frames, read straight from CPython's own structures (3.10–3.13) while
// the thread sits in a hooked CUDA call: no GIL, no interpreter calls, no malloc, no locks.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "interposer/base/event_globals.h"
#include "interposer/capture/mapped_table.h"

namespace gmemhook {

class LogFile;

// Deepest Python stack recorded (innermost frames are kept); the walk itself stops after
// kMaxPyWalk frames, skipped ones included, so a corrupt chain cannot loop.
inline constexpr size_t kMaxPyDepth = 256;
inline constexpr size_t kMaxPyWalk = 4096;

// What a walk found at one depth of the stack and the word it wrote there. A later walk that finds
// the same frame there, at the same instruction, with the same owner, running the same code object
// (same key as PyCodeTable's), writes the same word without reading the rest of the code object:
// training loops repeat stacks, so most frames of an event are where the previous event found them.
// Every field is compared, frame by frame: frames are reused at the same addresses by other calls
// (CPython's frame stack), and a caller below an unchanged top frame may be at another line.
struct PySeenFrame {
  uintptr_t frame = 0;  // 0: nothing seen at this depth
  uintptr_t code = 0;
  uintptr_t instr = 0;  // the instruction pointer (3.11+) or f_lasti (3.10)
  uintptr_t line_table = 0;
  int32_t first_line = 0;
  uint8_t flags = 0;  // owner, and is_entry in its top bit (3.11)
  uint64_t word = 0;  // py_frame_word, before a later frame marks it as its group's first
};

// The code objects one thread file has described so far (PyCode records): code object → id.
// Keyed by (address, co_linetable, co_firstlineno): a code object on a live frame cannot die,
// but a new one may later reuse a dead one's address. Memory comes from mmap (this runs in hooks).
class PyCodeTable {
 public:
  // The id of `code`, whose key fields are `line_table` and `first_line`, writing its PyCode
  // record to `log` first when it is new; 0 on failure.
  uint32_t id_of(const uint8_t* code, uintptr_t line_table, int64_t first_line, LogFile& log);
  // What the previous walk found at `depth` (< kMaxPyDepth); its words hold this table's ids.
  PySeenFrame& seen(size_t depth) { return seen_[depth]; }
  // How many frames the previous walk wrote (its first seen_count() entries are its own).
  size_t seen_count() const { return seen_count_; }
  void set_seen_count(size_t n) { seen_count_ = n; }
  void release();
  // Forgets every code object, keeping the memory as StackTable::reset does.
  void reset();

 private:
  struct Slot {
    uintptr_t code;  // 0 = empty
    uintptr_t line_table;
    int64_t first_line;
    uint32_t id;
    bool empty() const { return code == 0; }
    uint64_t home() const { return mix_hash(code, line_table); }
  };
  uint32_t write_record(const uint8_t* code, LogFile& log);

  MappedTable<Slot> slots_;
  uint32_t next_id_ = 1;
  PySeenFrame seen_[kMaxPyDepth] = {};
  size_t seen_count_ = 0;
};

// Finds the interpreter in this process (dlsym; call from the library constructor). A retry later
// (retry_python_detection) catches a libpython that an embedding program loads after start.
void init_python_frames();
// Cheap unless no interpreter was found and objects were loaded since the last look.
void retry_python_detection();

// The code of the supported interpreter's loop (_PyEval_EvalFrameDefault), [*lo, *hi); false
// when there is none or its extent is unknown. Native stacks of events with Python frames end at
// its innermost call: the Python frames carry the callers from there (GMEMHOOK_FULL_NATIVE_STACKS).
bool interpreter_loop_range(uint64_t* lo, uint64_t* hi);

// capture_python_frames's walk, out of line.
size_t walk_python_frames(PyCodeTable& codes, LogFile& log, uint64_t* out, size_t max);

// Fills `out` with the calling thread's Python frames, innermost first, as codec.h's
// py_frame_word(code_id, where) (format.h: where = instruction byte offset << 1 | is_entry),
// writing PyCode records for code objects `log` has not described yet. Returns the count; 0 when
// the thread runs no Python, capture is off, or the interpreter is not supported (then a process
// note says so, once).
// Inline: asked on every event, and most processes that call CUDA from C++ have no interpreter at
// all: then one load (event_globals.h, python_walk: an interpreter was found, supported or not)
// and a branch.
inline size_t capture_python_frames(PyCodeTable& codes, LogFile& log, uint64_t* out, size_t max) {
  if (!g_event_globals.python_walk.load(std::memory_order_acquire)) return 0;
  return walk_python_frames(codes, log, out, max);
}

}  // namespace gmemhook
