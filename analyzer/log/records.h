// Decoded forms of the non-event records (format.h: ProcessInfo, Module, ModulesBegin, Note, End, NvmlSample,
// Stack, PyCode), owning what codec.h's decoders hand out as views. Events: decode_event.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/log/record_cursor.h"
#include "gmemhook/codec.h"

namespace gmemhook::analysis {

struct ProcessInfo {
  uint64_t pid = 0;
  uint64_t ppid = 0;
  std::string exe;
  std::vector<std::string> argv;
  std::string rank, local_rank, world_size;  // empty: the variable was not set
  std::string library_version;
  uint64_t chunk_size_hint = 0;
};

// Records made only of numbers need no owning copy: codec.h's payload structs serve as they are.
using Segment = format::Segment;
using ModulesBegin = format::ModulesBeginPayload;
using EndRecord = format::EndPayload;
using NvmlSample = format::NvmlSamplePayload;

struct Module {
  std::string path;
  std::string build_id;  // raw bytes
  uint64_t load_bias = 0;
  std::vector<Segment> segments;
};

struct Note {
  std::string text;
  uint64_t offset = 0;  // of the record, so a report can show notes in file order
};

// One Python frame of a stack: a PyCode record of the same file and where in it the frame was.
struct PyFrameRef {
  uint32_t code_id = 0;
  uint32_t offset = 0;    // instruction byte offset into the code object's bytecode
  bool is_entry = false;  // outermost frame of one _PyEval_EvalFrameDefault call (format.h)
  bool operator==(const PyFrameRef&) const = default;
};

// A Python code object as the recorder described it.
struct PyCode {
  uint32_t id = 0;
  uint16_t py_version = 0;  // (major << 8) | minor
  std::string filename, name;
  std::string qualname;  // empty before 3.11
  uint32_t first_line = 0;
  std::string line_table;  // co_linetable's raw bytes (python_lines.h decodes them)
};

// Each decoder runs codec.h's, which checks every length and count against format.h's limits
// before using it, and throws ReadError naming the record's offset in `file` and the field when
// the payload is malformed.
ProcessInfo decode_process_info(const Record& r, const std::string& file);
Module decode_module(const Record& r, const std::string& file);
ModulesBegin decode_modules_begin(const Record& r, const std::string& file);
Note decode_note(const Record& r, const std::string& file);
EndRecord decode_end(const Record& r, const std::string& file);
NvmlSample decode_nvml_sample(const Record& r, const std::string& file);
// Returns the stack's id and replaces `frames` with its return addresses and `py` with its Python
// frames, both innermost first. Code ids are not checked against the file's PyCode records here.
uint32_t decode_stack(const Record& r, const std::string& file, std::vector<uint64_t>& frames,
                      std::vector<PyFrameRef>& py);
PyCode decode_py_code(const Record& r, const std::string& file);

}  // namespace gmemhook::analysis
