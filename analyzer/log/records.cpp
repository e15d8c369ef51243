// The analyzer's side of codec.h's decoders: owning copies of what they decode, and a ReadError
// that names the field when they refuse a payload, because "payload malformed" alone does not tell
// a user (or the writer's author) what went wrong.
#include "analyzer/log/records.h"

#include <array>

#include "analyzer/log/read_error.h"
#include "gmemhook/codec.h"

namespace gmemhook::analysis {

namespace {

std::string expectation(const format::DecodeError& e) {
  using Kind = format::DecodeError::Kind;
  using Shape = format::DecodeError::Shape;
  const std::string field = e.field ? e.field : "";
  switch (e.kind) {
    case Kind::Missing:
      switch (e.shape) {
        case Shape::Varint:
          return field + " (a varint)";
        case Shape::Zigzag:
          return field + " (a zigzag varint)";
        case Shape::Byte:
          return field + " (a byte)";
        case Shape::String:
          return field + " (a string of at most " + std::to_string(format::kMaxString) +
                 " bytes inside the payload)";
      }
      break;
    case Kind::OverLimit:
      return field + " <= " + std::to_string(e.limit) + ", got " + std::to_string(e.value);
    case Kind::DoesNotFit:
      return field + " items to fit the payload: " + std::to_string(e.value) + " items, " +
             std::to_string(e.limit) + " bytes left";
    case Kind::Unexpected:
      return field + ", got " + std::to_string(e.value);
    case Kind::LeftOver:
      return "the payload to end here, " + std::to_string(e.value) + " bytes are left over";
    case Kind::None:
      break;
  }
  return "a well-formed payload";
}

// Decodes r's payload with codec.h's decoder for `Payload`; `room` lends the decoder space for
// the record's lists.
template <class Payload, class... Room>
Payload decode_or_throw(const Record& r, const std::string& file, Room... room) {
  Payload p;
  format::DecodeError err;
  if (!format::decode(r.payload.data(), r.payload.size(), &p, room..., &err))
    throw ReadError(file, r.offset,
                    record_type_name(r.type) + " record: expected " + expectation(err));
  return p;
}

}  // namespace

ProcessInfo decode_process_info(const Record& r, const std::string& file) {
  std::vector<std::string_view> argv_room(format::kMaxArgs);
  auto in = decode_or_throw<format::ProcessInfoPayload>(r, file, std::span(argv_room));
  ProcessInfo p;
  p.pid = in.pid;
  p.ppid = in.ppid;
  p.exe = in.exe;
  p.argv.assign(in.argv.begin(), in.argv.end());
  p.rank = in.rank;
  p.local_rank = in.local_rank;
  p.world_size = in.world_size;
  p.library_version = in.library_version;
  p.chunk_size_hint = in.chunk_size_hint;
  return p;
}

Module decode_module(const Record& r, const std::string& file) {
  std::array<Segment, format::kMaxSegments> segment_room;
  auto in = decode_or_throw<format::ModulePayload>(r, file, std::span(segment_room));
  return Module{std::string(in.path),
                std::string(in.build_id),
                in.load_bias,
                {in.segments.begin(), in.segments.end()}};
}

ModulesBegin decode_modules_begin(const Record& r, const std::string& file) {
  return decode_or_throw<format::ModulesBeginPayload>(r, file);
}

Note decode_note(const Record& r, const std::string& file) {
  auto in = decode_or_throw<format::NotePayload>(r, file);
  return Note{std::string(in.text), r.offset};
}

EndRecord decode_end(const Record& r, const std::string& file) {
  return decode_or_throw<format::EndPayload>(r, file);
}

NvmlSample decode_nvml_sample(const Record& r, const std::string& file) {
  return decode_or_throw<format::NvmlSamplePayload>(r, file);
}

uint32_t decode_stack(const Record& r, const std::string& file, std::vector<uint64_t>& frames,
                      std::vector<PyFrameRef>& py) {
  // 16 KiB on the stack rather than two allocations for every stack of a file.
  std::array<uint64_t, format::kMaxFrames> frame_room;
  std::array<uint64_t, format::kMaxPyFrames> py_room;
  auto in =
      decode_or_throw<format::StackPayload>(r, file, std::span(frame_room), std::span(py_room));
  frames.assign(in.frames.begin(), in.frames.end());
  py.clear();
  for (uint64_t w : in.python) {
    uint32_t where = format::py_frame_where(w);
    py.push_back({format::py_frame_code_id(w), where >> 1, (where & 1) != 0});
  }
  return in.id;
}

PyCode decode_py_code(const Record& r, const std::string& file) {
  auto in = decode_or_throw<format::PyCodePayload>(r, file);
  PyCode c;
  c.id = in.id;
  c.py_version = in.py_version;
  c.filename = in.filename;
  c.name = in.name;
  c.qualname = in.qualname;
  c.first_line = in.first_line;
  c.line_table = in.line_table;
  return c;
}

}  // namespace gmemhook::analysis
