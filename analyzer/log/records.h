// Decoded forms of the non-event records (format.h: ProcessInfo, Module, ModulesBegin, Note, End,
// Stack, PyCode) and their decoders. Events: codec.h's decode_event, shared with the writer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/log/record_cursor.h"
#include "gmemhook/format.h"

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

// One PT_LOAD segment of a loaded object; vaddr is relative to the object's load bias.
struct Segment {
  uint64_t vaddr = 0;
  uint64_t memsz = 0;
  uint64_t flags = 0;  // PF_X = 1, PF_W = 2, PF_R = 4
};

struct Module {
  std::string path;
  std::string build_id;  // raw bytes
  uint64_t load_bias = 0;
  std::vector<Segment> segments;
};

struct ModulesBegin {
  uint64_t seq = 0;    // sequence number when the snapshot was taken
  uint64_t count = 0;  // Module records that follow
};

struct Note {
  std::string text;
  uint64_t offset = 0;  // of the record, so a report can show notes in file order
};

struct EndRecord {
  format::EndHow how = format::EndHow::Exit;
  int64_t status = 0;
  uint64_t last_seq = 0;
  uint64_t time_delta_ns = 0;  // since the process file's start
  bool cuda_used = false;
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

// Each decoder checks every length and count against format.h's limits before using it, and
// throws ReadError naming the record's offset in `file` when the payload is malformed.
ProcessInfo decode_process_info(const Record& r, const std::string& file);
Module decode_module(const Record& r, const std::string& file);
ModulesBegin decode_modules_begin(const Record& r, const std::string& file);
Note decode_note(const Record& r, const std::string& file);
EndRecord decode_end(const Record& r, const std::string& file);
// Returns the stack's id and replaces `frames` with its return addresses and `py` with its Python
// frames, both innermost first. Code ids are not checked against the file's PyCode records here.
uint32_t decode_stack(const Record& r, const std::string& file, std::vector<uint64_t>& frames,
                      std::vector<PyFrameRef>& py);
PyCode decode_py_code(const Record& r, const std::string& file);

}  // namespace gmemhook::analysis
