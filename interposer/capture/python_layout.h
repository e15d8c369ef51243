// Where CPython 3.10–3.13 keep the fields the recorder reads to walk a thread's Python frames:
// raw byte offsets for x86-64 release builds (GIL enabled, no Py_TRACE_REFS), one row per version.
#pragma once

#include <cstdint>

namespace gmemhook {

// How a version links its frames and marks the first frame of each interpreter-loop call.
enum class PyFrameModel : uint8_t {
  FrameObject,  // 3.10: PyFrameObject chain; every frame has its own _PyEval_EvalFrameDefault call
  EntryFlag,    // 3.11: _PyInterpreterFrame chain with an is_entry byte
  CStackShim,   // 3.12, 3.13: each loop call pushes a shim frame owned by the C stack
};

// _PyInterpreterFrame.owner values (enum _frameowner, Include/internal/pycore_frame.h).
inline constexpr uint8_t kOwnedByGenerator = 1;
inline constexpr uint8_t kOwnedByCStack = 3;  // 3.12+

// Offsets common to every supported version (Include/object.h, bytesobject.h, unicodeobject.h).
inline constexpr uint32_t kObType = 8;              // PyObject.ob_type
inline constexpr uint32_t kObSize = 16;             // PyVarObject.ob_size
inline constexpr uint32_t kTpBasicsize = 32;        // PyTypeObject.tp_basicsize
inline constexpr uint32_t kBytesData = 32;          // PyBytesObject.ob_sval
inline constexpr uint32_t kUnicodeLength = 16;      // PyASCIIObject.length
inline constexpr uint32_t kUnicodeState = 32;       // PyASCIIObject.state (bit field, first word)
inline constexpr uint32_t kStateCompact = 1u << 5;  // state.compact
inline constexpr uint32_t kStateAscii = 1u << 6;    // state.ascii
inline constexpr int64_t kBytesBasicsize = 33;      // bytes.__basicsize__ (offsetof ob_sval + 1)

struct PyLayout {
  uint16_t version;  // (major << 8) | minor
  PyFrameModel model;
  // PyThreadState (Include/cpython/pystate.h; 3.13: also _Py_DebugOffsets.thread_state).
  uint32_t tstate_thread_id;  // unsigned long thread_id: pthread_self() of the owning thread
  uint32_t tstate_frame;      // 3.10 frame, 3.11/3.12 cframe, 3.13 current_frame
  int32_t cframe_frame;       // _PyCFrame.current_frame, or -1 when tstate_frame is the frame
  // The frame: PyFrameObject (3.10) or _PyInterpreterFrame (3.11+).
  uint32_t frame_previous;  // f_back / previous
  uint32_t frame_code;      // f_code / f_executable
  uint32_t frame_instr;     // 3.10: int f_lasti (code units); 3.11+: prev_instr / instr_ptr
  int32_t frame_owner;      // char owner, -1 in 3.10
  int32_t frame_is_entry;   // bool is_entry (3.11 only), else -1
  // PyCodeObject (Include/cpython/code.h).
  uint32_t code_filename, code_name;
  int32_t code_qualname;        // -1 before 3.11
  uint32_t code_firstlineno;    // int
  uint32_t code_linetable;      // bytes
  int32_t code_adaptive;        // co_code_adaptive (3.11+), -1 in 3.10
  int32_t code_firsttraceable;  // int _co_firsttraceable (3.11+), -1 in 3.10
  // Expected tp_basicsize of the types we read: a cheap check that the interpreter really has
  // this layout (a Py_TRACE_REFS build shifts every object field by 16 bytes).
  int64_t code_basicsize, frame_basicsize /* 3.10 only, else -1 */, unicode_basicsize;
  // str (Include/cpython/unicodeobject.h): compact ASCII data follows PyASCIIObject; other
  // compact strings keep a cached UTF-8 copy behind PyCompactUnicodeObject.utf8.
  uint32_t ascii_data, utf8_length, utf8;
};

// Measured with tests/python/layout_probe.c (offsetof/sizeof against each version's own headers,
// pyenv builds 3.10.13, 3.11.7, 3.12.1, 3.13.0) and cross-checked with the __basicsize__ of code,
// frame and str, also of Debian's /usr/bin/python3.11 (3.11.2). tests/python runs every row end to
// end. At start-up the recorder checks the type objects against the row, and for 3.13 the
// interpreter's own _PyRuntime.debug_offsets (python_frames.cpp).
// One row per version, fields grouped by the structure they belong to.
// clang-format off
inline constexpr PyLayout kPyLayouts[] = {
    // 3.10: tstate->frame → PyFrameObject{f_back, f_code, f_lasti}.
    {.version = 0x030a, .model = PyFrameModel::FrameObject,
     .tstate_thread_id = 176, .tstate_frame = 24, .cframe_frame = -1,
     .frame_previous = 24, .frame_code = 32, .frame_instr = 96, .frame_owner = -1,
     .frame_is_entry = -1,
     .code_filename = 104, .code_name = 112, .code_qualname = -1, .code_firstlineno = 40,
     .code_linetable = 120, .code_adaptive = -1, .code_firsttraceable = -1,
     .code_basicsize = 176, .frame_basicsize = 360, .unicode_basicsize = 80,
     .ascii_data = 48, .utf8_length = 48, .utf8 = 56},
    // 3.11: tstate->cframe->current_frame → _PyInterpreterFrame{f_code, previous, prev_instr,
    // is_entry, owner}.
    {.version = 0x030b, .model = PyFrameModel::EntryFlag,
     .tstate_thread_id = 152, .tstate_frame = 56, .cframe_frame = 8,
     .frame_previous = 48, .frame_code = 32, .frame_instr = 56, .frame_owner = 69,
     .frame_is_entry = 68,
     .code_filename = 112, .code_name = 120, .code_qualname = 128, .code_firstlineno = 72,
     .code_linetable = 136, .code_adaptive = 184, .code_firsttraceable = 168,
     .code_basicsize = 184, .frame_basicsize = -1, .unicode_basicsize = 80,
     .ascii_data = 48, .utf8_length = 48, .utf8 = 56},
    // 3.12: tstate->cframe->current_frame → _PyInterpreterFrame{f_code, previous, prev_instr,
    // owner}; no is_entry: each loop call links a FRAME_OWNED_BY_CSTACK shim instead.
    {.version = 0x030c, .model = PyFrameModel::CStackShim,
     .tstate_thread_id = 136, .tstate_frame = 56, .cframe_frame = 0,
     .frame_previous = 8, .frame_code = 0, .frame_instr = 56, .frame_owner = 70,
     .frame_is_entry = -1,
     .code_filename = 112, .code_name = 120, .code_qualname = 128, .code_firstlineno = 68,
     .code_linetable = 136, .code_adaptive = 192, .code_firsttraceable = 176,
     .code_basicsize = 192, .frame_basicsize = -1, .unicode_basicsize = 64,
     .ascii_data = 40, .utf8_length = 40, .utf8 = 48},
    // 3.13: tstate->current_frame → _PyInterpreterFrame{f_executable, previous, instr_ptr,
    // owner}, shims as in 3.12.
    {.version = 0x030d, .model = PyFrameModel::CStackShim,
     .tstate_thread_id = 152, .tstate_frame = 72, .cframe_frame = -1,
     .frame_previous = 8, .frame_code = 0, .frame_instr = 56, .frame_owner = 70,
     .frame_is_entry = -1,
     .code_filename = 112, .code_name = 120, .code_qualname = 128, .code_firstlineno = 68,
     .code_linetable = 136, .code_adaptive = 200, .code_firsttraceable = 184,
     .code_basicsize = 200, .frame_basicsize = -1, .unicode_basicsize = 64,
     .ascii_data = 40, .utf8_length = 40, .utf8 = 48},
};
// clang-format on

// 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h), the first member of _PyRuntime:
// byte positions of the entries the recorder checks its 3.13 row against.
namespace debug_offsets_313 {
inline constexpr char kCookie[8] = {'x', 'd', 'e', 'b', 'u', 'g', 'p', 'y'};
inline constexpr uint32_t kVersion = 8, kFreeThreaded = 16;
inline constexpr uint32_t kThreadCurrentFrame = 184, kThreadId = 192;
inline constexpr uint32_t kFramePrevious = 232, kFrameExecutable = 240, kFrameInstrPtr = 248,
                          kFrameOwner = 264;
inline constexpr uint32_t kCodeFilename = 280, kCodeName = 288, kCodeQualname = 296,
                          kCodeLinetable = 304, kCodeFirstlineno = 312, kCodeAdaptive = 344;
inline constexpr uint32_t kObjectType = 360, kBytesSval = 528, kUnicodeState = 544,
                          kUnicodeLength = 552, kUnicodeAsciiSize = 560;
}  // namespace debug_offsets_313

}  // namespace gmemhook
