// Python frames of the calling thread (see python_frames.h). Everything here reads the
// interpreter's memory by the offsets in python_layout.h; nothing calls into the interpreter
// except PyGILState_GetThisThreadState, a thread-specific-data lookup that is safe without the GIL
// in 3.10–3.13 (it checks that the key exists before pthread_getspecific).
#include "interposer/capture/python_frames.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <iterator>
#include <string_view>
#include <utility>

#include "gmemhook/codec.h"
#include "interposer/base/config.h"
#include "interposer/base/real_symbols.h"
#include "interposer/base/text.h"
#include "interposer/capture/python_layout.h"
#include "interposer/log/log_file.h"
#include "interposer/log/module_map.h"
#include "interposer/log/process_log.h"

namespace gmemhook {

namespace {

enum State : int { kNotTried, kDetecting, kAbsent, kSupported, kUnsupported, kOff };

struct Interpreter {
  const PyLayout* layout = nullptr;
  void* (*this_thread_state)() = nullptr;
  uintptr_t code_type = 0, unicode_type = 0, bytes_type = 0, frame_type = 0;
  uint64_t loop_lo = 0, loop_hi = 0;  // _PyEval_EvalFrameDefault's code; equal: unknown
};

// What this process knows of its interpreter.
struct PythonState {
  std::atomic<int> state{kNotTried};
  Interpreter py;  // written before `state` becomes kSupported (release), read-only afterwards
  LoadCounters checked_at{~0ull, ~0ull};  // the loader's counters at the last detection
  // The note for an unsupported interpreter. A plain array: detection runs in the library
  // constructor, possibly before this file's own dynamic initializers would have run.
  char reason[192] = {};
  std::atomic<uint64_t> noted_generation{~0ull};  // the fork generation the note was written in
};
constinit PythonState g_python;

// Every change of the state goes through here: the event line's python_walk
// (event_globals.h) follows it.
void set_state(State s) {
  g_python.state.store(s, std::memory_order_release);
  g_event_globals.python_walk.store(s == kSupported || s == kUnsupported,
                                    std::memory_order_release);
}

// PySeenFrame::flags: the frame's owner (0–3), and this bit for is_entry (3.11).
constexpr uint8_t kSeenEntry = 0x80;

// Longest filename/name/qualname written; longer ones are cut (they are labels, not keys).
constexpr size_t kMaxPyName = 4096;

template <typename T>
inline T load(const void* base, uint32_t offset) {
  T v;
  std::memcpy(&v, static_cast<const uint8_t*>(base) + offset, sizeof v);
  return v;
}
inline const uint8_t* load_ptr(const void* base, uint32_t offset) {
  return load<const uint8_t*>(base, offset);
}

// A pointer that could be an object or frame: aligned, not in the first page, in user space.
inline bool plausible(const void* p) {
  auto v = reinterpret_cast<uintptr_t>(p);
  return v >= 4096 && (v & 7) == 0 && v < (uintptr_t{1} << 47);
}

inline bool has_type(const uint8_t* obj, uintptr_t type) {
  return plausible(obj) && load<uintptr_t>(obj, kObType) == type;
}

// --- Finding the interpreter ----------------------------------------------------------------

void* symbol(const char* name) { return real_dlsym(RTLD_DEFAULT, name); }

int64_t basicsize(const void* type) { return load<int64_t>(type, kTpBasicsize); }

uint16_t version_from_string(const char* s) {
  // "3.10.13 (main, ...": Py_GetVersion() of 3.10, which has no Py_Version.
  if (!s || s[0] < '0' || s[0] > '9' || s[1] != '.') return 0;
  unsigned minor = 0;
  for (const char* p = s + 2; *p >= '0' && *p <= '9' && minor < 1000; ++p)
    minor = minor * 10 + static_cast<unsigned>(*p - '0');
  return static_cast<uint16_t>((s[0] - '0') << 8 | (minor & 0xff));
}

void unsupported(uint16_t version, const char* what) {
  FixedString<sizeof g_python.reason> m;
  m.append("python ");
  if (version) m.append_uint(version >> 8).append(".").append_uint(version & 0xff).append(" ");
  m.append(what).append(": native stacks only");
  std::memcpy(g_python.reason, m.c_str(), m.size() + 1);
  set_state(kUnsupported);
}

// 3.13 describes its own layout in _PyRuntime.debug_offsets (for out-of-process debuggers): a
// build whose offsets differ from our row (free-threaded, Py_TRACE_REFS, a patched interpreter)
// is refused rather than misread.
const char* check_debug_offsets_313(const PyLayout& L) {
  namespace d = debug_offsets_313;
  const auto* rt = static_cast<const uint8_t*>(symbol("_PyRuntime"));
  if (!rt) return "without _PyRuntime";
  if (std::memcmp(rt, d::kCookie, sizeof d::kCookie) != 0) return "with unknown debug offsets";
  if ((load<uint64_t>(rt, d::kVersion) >> 16) != 0x030d) return "with unknown debug offsets";
  if (load<uint64_t>(rt, d::kFreeThreaded) != 0) return "free-threaded build not supported";
  auto is = [rt](uint32_t at, int64_t expected) {
    return static_cast<int64_t>(load<uint64_t>(rt, at)) == expected;
  };
  bool same = is(d::kThreadCurrentFrame, L.tstate_frame) && is(d::kThreadId, L.tstate_thread_id) &&
              is(d::kFramePrevious, L.frame_previous) && is(d::kFrameExecutable, L.frame_code) &&
              is(d::kFrameInstrPtr, L.frame_instr) && is(d::kFrameOwner, L.frame_owner) &&
              is(d::kCodeFilename, L.code_filename) && is(d::kCodeName, L.code_name) &&
              is(d::kCodeQualname, L.code_qualname) && is(d::kCodeLinetable, L.code_linetable) &&
              is(d::kCodeFirstlineno, L.code_firstlineno) &&
              is(d::kCodeAdaptive, L.code_adaptive) && is(d::kObjectType, kObType) &&
              is(d::kBytesSval, kBytesData) && is(d::kUnicodeState, kUnicodeState) &&
              is(d::kUnicodeLength, kUnicodeLength) && is(d::kUnicodeAsciiSize, L.ascii_data);
  return same ? nullptr : "build with an unexpected layout not supported";
}

// The code of the interpreter loop, from the dynamic symbol table (CPython exports it for PEP
// 523 frame evaluators, so stripped builds keep it). Its .cold part, when GCC split one off, is
// a local symbol and not covered: a frame there is walked past, to the next loop call.
void find_interpreter_loop(Interpreter& py) {
  void* loop = symbol("_PyEval_EvalFrameDefault");
  Dl_info info{};
  ElfW(Sym)* sym = nullptr;
  if (!loop || !dladdr1(loop, &info, reinterpret_cast<void**>(&sym), RTLD_DL_SYMENT) || !sym ||
      sym->st_size == 0)
    return;
  py.loop_lo = reinterpret_cast<uint64_t>(loop);
  py.loop_hi = py.loop_lo + sym->st_size;
}

void detect() {
  g_python.checked_at = current_load_counters();
  auto get = reinterpret_cast<void* (*)()>(symbol("PyGILState_GetThisThreadState"));
  if (!get) {
    set_state(kAbsent);
    return;
  }
  uint16_t version = 0;
  if (const auto* hex = static_cast<const unsigned long*>(symbol("Py_Version")))  // 3.11+
    version = static_cast<uint16_t>(*hex >> 16);
  else if (auto fn = reinterpret_cast<const char* (*)()>(symbol("Py_GetVersion")))
    version = version_from_string(fn());  // a static string; formats without allocating
  if (version == 0) return unsupported(0, "of unknown version not supported");
  const PyLayout* layout = nullptr;
  for (const PyLayout& row : kPyLayouts)
    if (row.version == version) layout = &row;
  if (!layout) return unsupported(version, "not supported");
  const PyLayout& L = *layout;
  // Py_DEBUG implies Py_REF_DEBUG, whose refcount bookkeeping exports these.
  if (symbol("_Py_NegativeRefcount") || symbol("_Py_RefTotal"))
    return unsupported(version, "debug build not supported");

  Interpreter py;
  py.layout = layout;
  py.this_thread_state = get;
  py.code_type = reinterpret_cast<uintptr_t>(symbol("PyCode_Type"));
  py.unicode_type = reinterpret_cast<uintptr_t>(symbol("PyUnicode_Type"));
  py.bytes_type = reinterpret_cast<uintptr_t>(symbol("PyBytes_Type"));
  py.frame_type = reinterpret_cast<uintptr_t>(symbol("PyFrame_Type"));
  const auto type_type = reinterpret_cast<uintptr_t>(symbol("PyType_Type"));
  if (!py.code_type || !py.unicode_type || !py.bytes_type || !type_type ||
      (L.model == PyFrameModel::FrameObject && !py.frame_type))
    return unsupported(version, "without the expected type objects not supported");
  // The type objects themselves show whether the object header and our row fit this build.
  const auto* code_type = reinterpret_cast<const uint8_t*>(py.code_type);
  bool fits = load<uintptr_t>(code_type, kObType) == type_type &&
              basicsize(code_type) == L.code_basicsize &&
              basicsize(reinterpret_cast<const void*>(py.unicode_type)) == L.unicode_basicsize &&
              basicsize(reinterpret_cast<const void*>(py.bytes_type)) == kBytesBasicsize &&
              (L.frame_basicsize < 0 ||
               basicsize(reinterpret_cast<const void*>(py.frame_type)) == L.frame_basicsize);
  if (!fits) return unsupported(version, "build with an unexpected layout not supported");
  if (version == 0x030d)
    if (const char* why = check_debug_offsets_313(L)) return unsupported(version, why);
  find_interpreter_loop(py);
  g_python.py = py;
  set_state(kSupported);
}

void note_unsupported_once() {
  uint64_t gen = fork_generation();
  if (g_python.noted_generation.load(std::memory_order_relaxed) == gen) return;
  if (g_python.noted_generation.exchange(gen, std::memory_order_relaxed) == gen) return;
  write_process_note(g_python.reason);
}

// --- Reading str and bytes objects ------------------------------------------------------------

std::string_view read_str(const uint8_t* obj) {
  const PyLayout& L = *g_python.py.layout;
  if (!has_type(obj, g_python.py.unicode_type)) return {};
  uint32_t state = load<uint32_t>(obj, kUnicodeState);
  const char* data = nullptr;
  int64_t n = 0;
  if ((state & kStateCompact) && (state & kStateAscii)) {
    data = reinterpret_cast<const char*>(obj + L.ascii_data);
    n = load<int64_t>(obj, kUnicodeLength);
  } else {
    // Converting to UTF-8 would allocate: use the copy the interpreter cached, if any.
    data = reinterpret_cast<const char*>(load_ptr(obj, L.utf8));
    n = load<int64_t>(obj, L.utf8_length);
    if (!data) return "<non-ascii>";
  }
  if (n < 0) return {};
  return std::string_view(data, static_cast<size_t>(n) < kMaxPyName ? n : kMaxPyName);
}

std::string_view read_bytes(const uint8_t* obj, size_t limit) {
  if (!has_type(obj, g_python.py.bytes_type)) return {};
  int64_t n = load<int64_t>(obj, kObSize);
  if (n < 0 || static_cast<uint64_t>(n) > limit) return {};  // a partial table would mislead
  return std::string_view(reinterpret_cast<const char*>(obj + kBytesData), static_cast<size_t>(n));
}

}  // namespace

// --- PyCodeTable ----------------------------------------------------------------------------

uint32_t PyCodeTable::id_of(const uint8_t* code, uintptr_t line_table, int64_t first_line,
                            LogFile& log) {
  if (!slots_.reserve_one()) return 0;
  const auto key = reinterpret_cast<uintptr_t>(code);
  Slot& at = slots_.find(mix_hash(key, line_table), [&](const Slot& s) {
    return s.code == key && s.line_table == line_table && s.first_line == first_line;
  });
  if (!at.empty()) return at.id;
  const uint32_t id = write_record(code, log);
  if (id) slots_.fill(at, Slot{key, line_table, first_line, id});
  return id;
}

uint32_t PyCodeTable::write_record(const uint8_t* code, LogFile& log) {
  const PyLayout& L = *g_python.py.layout;
  int32_t first_line = load<int32_t>(code, L.code_firstlineno);
  format::PyCodePayload c{
      .id = next_id_,
      .py_version = L.version,
      .filename = read_str(load_ptr(code, L.code_filename)),
      .name = read_str(load_ptr(code, L.code_name)),
      .qualname =
          L.code_qualname >= 0 ? read_str(load_ptr(code, L.code_qualname)) : std::string_view(),
      .first_line = first_line > 0 ? static_cast<uint32_t>(first_line) : 0,
      .line_table = read_bytes(load_ptr(code, L.code_linetable), format::kMaxString),
  };
  if (!log.append(c)) return 0;
  return next_id_++;
}

void PyCodeTable::reset() {
  slots_.clear();
  next_id_ = 1;
  for (PySeenFrame& f : seen_) f = PySeenFrame{};
  seen_count_ = 0;
}

void PyCodeTable::release() {
  slots_.release();
  next_id_ = 1;
  for (PySeenFrame& f : seen_) f = PySeenFrame{};
  seen_count_ = 0;
}

// --- Detection entry points -------------------------------------------------------------------

void init_python_frames() {
  if (!g_config.python) {
    set_state(kOff);
    return;
  }
  int expected = kNotTried;
  if (!g_python.state.compare_exchange_strong(expected, kDetecting)) return;
  detect();
  if (g_config.python_force_unsupported && g_python.state.load() == kSupported)
    unsupported(g_python.py.layout->version, "refused (GMEMHOOK_PYTHON_FORCE_UNSUPPORTED)");
}

void retry_python_detection() {
  if (g_python.state.load(std::memory_order_acquire) != kAbsent) return;
  // An embedding program may dlopen libpython after start; look again once objects were loaded.
  if (current_load_counters() == g_python.checked_at) return;
  int expected = kAbsent;
  if (!g_python.state.compare_exchange_strong(expected, kDetecting)) return;
  detect();
  if (g_config.python_force_unsupported && g_python.state.load() == kSupported)
    unsupported(g_python.py.layout->version, "refused (GMEMHOOK_PYTHON_FORCE_UNSUPPORTED)");
}

bool interpreter_loop_range(uint64_t* lo, uint64_t* hi) {
  if (g_python.state.load(std::memory_order_acquire) != kSupported ||
      g_python.py.loop_lo == g_python.py.loop_hi)
    return false;
  *lo = g_python.py.loop_lo;
  *hi = g_python.py.loop_hi;
  return true;
}

// --- The walk ---------------------------------------------------------------------------------

namespace {

// Outcome of reading a frame the previous walk did not see at its depth.
enum class FrameRead { kWord, kSkip, kStop };

// The word of frame `f` (running `code` at `instr`, with `flags`), from the frame and its code
// object, with `seen` updated; kSkip for a frame that is not shown (incomplete), kStop where the
// chain cannot be ours or the log failed.
template <size_t kRow>
FrameRead read_frame(const uint8_t* f, const uint8_t* code, uintptr_t instr, uint8_t flags,
                     PySeenFrame& seen, PyCodeTable& codes, LogFile& log, uint64_t* word) {
  constexpr const PyLayout& L = kPyLayouts[kRow];
  if (!has_type(code, g_python.py.code_type)) return FrameRead::kStop;
  uint64_t offset = 0;
  bool entry = true;  // 3.10 runs every frame in its own _PyEval_EvalFrameDefault call
  if constexpr (L.model == PyFrameModel::FrameObject) {
    auto lasti = static_cast<int32_t>(instr);  // in code units, -1 before the first
    offset = lasti > 0 ? static_cast<uint64_t>(lasti) * 2 : 0;
  } else {
    entry = (flags & kSeenEntry) != 0;
    // Byte offset of the instruction pointer (prev_instr / instr_ptr) into co_code_adaptive.
    auto start = reinterpret_cast<uintptr_t>(code) + static_cast<uint32_t>(L.code_adaptive);
    auto at = static_cast<int64_t>(instr - start);
    int64_t first_traceable = load<int32_t>(code, static_cast<uint32_t>(L.code_firsttraceable));
    // Incomplete frames (still building cells or the generator before their first RESUME) are
    // skipped, as CPython's tracebacks do; their group boundary is kept.
    if ((flags & ~kSeenEntry) != kOwnedByGenerator && at < first_traceable * 2)
      return FrameRead::kSkip;
    int64_t units = load<int64_t>(code, kObSize);              // code units in co_code_adaptive
    if (units < 0 || at > units * 2) return FrameRead::kStop;  // not inside this code: not ours
    offset = at > 0 ? static_cast<uint64_t>(at) : 0;
  }
  if (offset >= (uint64_t{1} << 31)) return FrameRead::kStop;
  auto line_table = load<uintptr_t>(code, L.code_linetable);
  int32_t first_line = load<int32_t>(code, L.code_firstlineno);
  // The same code object as the one seen here last time (another instruction): its id is known.
  uint32_t id = seen.code == reinterpret_cast<uintptr_t>(code) && seen.line_table == line_table &&
                        seen.first_line == first_line
                    ? format::py_frame_code_id(seen.word)
                    : codes.id_of(code, line_table, first_line, log);
  if (!id) return FrameRead::kStop;
  *word = format::py_frame_word(id, static_cast<uint32_t>(offset << 1 | (entry ? 1 : 0)));
  seen = PySeenFrame{.frame = reinterpret_cast<uintptr_t>(f),
                     .code = reinterpret_cast<uintptr_t>(code),
                     .instr = instr,
                     .line_table = line_table,
                     .first_line = first_line,
                     .flags = flags,
                     .word = *word};
  return FrameRead::kWord;
}

// The calling thread's frames under one row of kPyLayouts: its offsets are constants here (read
// from the row in memory, a frame cost ~130 instructions), and a frame the previous walk saw
// (PySeenFrame) costs a few loads and compares.
template <size_t kRow>
size_t walk_frames(PyCodeTable& codes, LogFile& log, uint64_t* out, size_t max) {
  constexpr const PyLayout& L = kPyLayouts[kRow];
  // The walk follows the chain one dependent load at a time, and between two PyTorch tensor
  // events the step's own work pushes the frames out of the near caches (with them in memory a
  // frame cost ~200 ns here, bench/python_frames_bench.py with EVICT_KB): the lines the previous
  // walk read, most of which this one reads again, are asked for all at once first. A frame's
  // fields lie within 72 bytes from 3.11 on (two lines: its first and its last field's); the
  // code object's key fields are 68 bytes apart (two lines).
  constexpr uint32_t kFrameFirst = std::min({L.frame_previous, L.frame_code, L.frame_instr});
  constexpr uint32_t kFrameLast =
      std::max({L.frame_previous, L.frame_code, L.frame_instr,
                static_cast<uint32_t>(L.frame_owner >= 0 ? L.frame_owner : 0)});
  for (size_t i = 0, seen = codes.seen_count(); i < seen; ++i) {
    const auto* f = reinterpret_cast<const uint8_t*>(codes.seen(i).frame);
    const auto* code = reinterpret_cast<const uint8_t*>(codes.seen(i).code);
    __builtin_prefetch(f + kFrameFirst);
    __builtin_prefetch(f + kFrameLast);
    __builtin_prefetch(code + L.code_firstlineno);
    __builtin_prefetch(code + L.code_linetable);
  }
  const auto* ts = static_cast<const uint8_t*>(g_python.py.this_thread_state());
  // The thread state must be this thread's: a stale or foreign one has frames that move under us.
  if (!plausible(ts) || load<unsigned long>(ts, L.tstate_thread_id) != pthread_self()) return 0;
  const uint8_t* f = load_ptr(ts, L.tstate_frame);
  if constexpr (L.cframe_frame >= 0) {
    if (!plausible(f)) return 0;
    f = load_ptr(f, static_cast<uint32_t>(L.cframe_frame));
  }
  if (max > kMaxPyDepth) max = kMaxPyDepth;  // the depths PyCodeTable remembers

  size_t n = 0;
  bool group_open = false;  // frames were written since the last is_entry mark
  // always_inline: GCC kept it out of line, and `n` in memory for it on every frame.
  auto close_group = [&]() __attribute__((always_inline)) {
    if (group_open) out[n - 1] |= 1;
    group_open = false;
  };
  for (size_t steps = 0; f && steps < kMaxPyWalk && n < max;
       ++steps, f = load_ptr(f, L.frame_previous)) {
    if (!plausible(f)) break;
    const uint8_t* code = load_ptr(f, L.frame_code);
    uintptr_t instr = 0;
    uint8_t flags = 0;
    if constexpr (L.model == PyFrameModel::FrameObject) {
      if (!has_type(f, g_python.py.frame_type)) break;
      instr = static_cast<uint32_t>(load<int32_t>(f, L.frame_instr));
    } else {
      flags = load<uint8_t>(f, static_cast<uint32_t>(L.frame_owner));
      if constexpr (L.model == PyFrameModel::CStackShim) {
        if (flags == kOwnedByCStack) {
          close_group();  // the frame inside the shim is the first of its loop call
          continue;
        }
      } else if (load<uint8_t>(f, static_cast<uint32_t>(L.frame_is_entry))) {
        flags |= kSeenEntry;
      }
      instr = load<uintptr_t>(f, L.frame_instr);
    }
    PySeenFrame& seen = codes.seen(n);
    uint64_t word = seen.word;
    // The code object is read only once the frame matched: then it is the one seen, alive.
    bool same = seen.frame == reinterpret_cast<uintptr_t>(f) &&
                seen.code == reinterpret_cast<uintptr_t>(code) && seen.instr == instr &&
                seen.flags == flags && seen.line_table == load<uintptr_t>(code, L.code_linetable) &&
                seen.first_line == load<int32_t>(code, L.code_firstlineno);
    if (!same) {
      FrameRead r = read_frame<kRow>(f, code, instr, flags, seen, codes, log, &word);
      if (r == FrameRead::kStop) break;
      if (r == FrameRead::kSkip) {
        if (flags & kSeenEntry) close_group();  // the boundary stays where the frame was
        continue;
      }
    }
    out[n++] = word;
    group_open = (word & 1) == 0;
  }
  codes.set_seen_count(n);
  return n;
}

using WalkFn = size_t (*)(PyCodeTable&, LogFile&, uint64_t*, size_t);
template <size_t... kRows>
constexpr std::array<WalkFn, sizeof...(kRows)> walks_of(std::index_sequence<kRows...>) {
  return {&walk_frames<kRows>...};
}
// One walk per row of kPyLayouts, in its order.
constexpr auto kWalks = walks_of(std::make_index_sequence<std::size(kPyLayouts)>());

}  // namespace

size_t walk_python_frames(PyCodeTable& codes, LogFile& log, uint64_t* out, size_t max) {
  int state = g_python.state.load(std::memory_order_acquire);
  if (state != kSupported) {
    if (state == kUnsupported) note_unsupported_once();
    return 0;
  }
  return kWalks[static_cast<size_t>(g_python.py.layout - kPyLayouts)](codes, log, out, max);
}

}  // namespace gmemhook
