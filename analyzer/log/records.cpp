// Decoders for the non-event records. Every failure names the field that was expected, because
// "payload malformed" alone does not tell a user (or the writer's author) what went wrong.
#include "analyzer/log/records.h"

#include "analyzer/log/read_error.h"
#include "gmemhook/codec.h"

namespace gmemhook::analysis {

namespace {

// PayloadReader with errors that name the record and the field.
class FieldReader {
 public:
  FieldReader(const Record& r, const std::string& file)
      : r_(r), file_(file), in_(r.payload.data(), r.payload.size()) {}

  uint64_t varint(const char* field) {
    uint64_t v;
    if (!in_.varint(&v)) fail(std::string("expected ") + field + " (a varint)");
    return v;
  }
  int64_t zigzag(const char* field) {
    int64_t v;
    if (!in_.zigzag(&v)) fail(std::string("expected ") + field + " (a zigzag varint)");
    return v;
  }
  uint8_t u8(const char* field) {
    uint8_t v;
    if (!in_.u8(&v)) fail(std::string("expected ") + field + " (a byte)");
    return v;
  }
  std::string string(const char* field) {
    std::string_view s;
    if (!in_.string(&s))
      fail(std::string("expected ") + field + " (a string of at most " +
           std::to_string(format::kMaxString) + " bytes inside the payload)");
    return std::string(s);
  }
  // A count that bounds a later allocation: checked against the format's limit and against the
  // bytes left (each counted item takes at least `min_item_bytes`) before anyone reserves.
  uint64_t count(const char* field, uint64_t limit, uint64_t min_item_bytes) {
    uint64_t n = varint(field);
    if (n > limit)
      fail(std::string("expected ") + field + " <= " + std::to_string(limit) + ", got " +
           std::to_string(n));
    if (n * min_item_bytes > in_.remaining())
      fail(std::string("expected ") + field + " items to fit the payload: " + std::to_string(n) +
           " items, " + std::to_string(in_.remaining()) + " bytes left");
    return n;
  }
  void finish() {
    if (!in_.at_end())
      fail("expected the payload to end here, " + std::to_string(in_.remaining()) +
           " bytes are left over");
  }
  [[noreturn]] void fail(const std::string& expected) const {
    throw ReadError(file_, r_.offset, record_type_name(r_.type) + " record: " + expected);
  }

 private:
  const Record& r_;
  const std::string& file_;
  format::PayloadReader in_;
};

}  // namespace

ProcessInfo decode_process_info(const Record& r, const std::string& file) {
  FieldReader in(r, file);
  ProcessInfo p;
  p.pid = in.varint("pid");
  p.ppid = in.varint("ppid");
  p.exe = in.string("exe");
  uint64_t argc = in.count("argc", format::kMaxArgs, 1);
  p.argv.reserve(argc);
  for (uint64_t i = 0; i < argc; ++i) p.argv.push_back(in.string("argv string"));
  p.rank = in.string("rank");
  p.local_rank = in.string("local_rank");
  p.world_size = in.string("world_size");
  p.library_version = in.string("library_version");
  p.chunk_size_hint = in.varint("chunk_size_hint");
  in.finish();
  return p;
}

Module decode_module(const Record& r, const std::string& file) {
  FieldReader in(r, file);
  Module m;
  m.path = in.string("path");
  m.build_id = in.string("build_id");
  m.load_bias = in.varint("load_bias");
  uint64_t nsegs = in.count("nsegs", format::kMaxSegments, 3);
  m.segments.reserve(nsegs);
  for (uint64_t i = 0; i < nsegs; ++i) {
    Segment s;
    s.vaddr = in.varint("segment vaddr");
    s.memsz = in.varint("segment memsz");
    s.flags = in.varint("segment flags");
    m.segments.push_back(s);
  }
  in.finish();
  return m;
}

ModulesBegin decode_modules_begin(const Record& r, const std::string& file) {
  FieldReader in(r, file);
  ModulesBegin b;
  b.seq = in.varint("seq");
  b.count = in.varint("count");
  if (b.count > format::kMaxModules)
    in.fail("expected count <= " + std::to_string(format::kMaxModules) + ", got " +
            std::to_string(b.count));
  in.finish();
  return b;
}

Note decode_note(const Record& r, const std::string& file) {
  FieldReader in(r, file);
  Note n;
  n.text = in.string("text");
  n.offset = r.offset;
  in.finish();
  return n;
}

EndRecord decode_end(const Record& r, const std::string& file) {
  FieldReader in(r, file);
  EndRecord e;
  uint8_t how = in.u8("how");
  if (how != static_cast<uint8_t>(format::EndHow::Exit) &&
      how != static_cast<uint8_t>(format::EndHow::UnderscoreExit))
    in.fail("expected how = 1 (exit) or 2 (_exit), got " + std::to_string(how));
  e.how = static_cast<format::EndHow>(how);
  e.status = in.zigzag("status");
  e.last_seq = in.varint("seq");
  e.time_delta_ns = in.varint("time_delta");
  uint8_t used = in.u8("cuda_used");
  if (used > 1) in.fail("expected cuda_used = 0 or 1, got " + std::to_string(used));
  e.cuda_used = used == 1;
  in.finish();
  return e;
}

uint32_t decode_stack(const Record& r, const std::string& file, std::vector<uint64_t>& frames,
                      std::vector<PyFrameRef>& py) {
  FieldReader in(r, file);
  uint64_t id = in.varint("id");
  if (id == 0 || id > UINT32_MAX) in.fail("expected an id in [1, 2^32), got " + std::to_string(id));
  uint64_t count = in.count("frame count", format::kMaxFrames, 1);
  frames.clear();
  frames.reserve(count);
  uint64_t address = 0;
  for (uint64_t i = 0; i < count; ++i) {
    address += static_cast<uint64_t>(in.zigzag("frame address delta"));
    frames.push_back(address);
  }
  uint64_t pycount = in.count("python frame count", format::kMaxPyFrames, 2);
  py.clear();
  py.reserve(pycount);
  for (uint64_t i = 0; i < pycount; ++i) {
    uint64_t code_id = in.varint("python frame code_id");
    if (code_id == 0 || code_id > UINT32_MAX)
      in.fail("expected a python frame code_id in [1, 2^32), got " + std::to_string(code_id));
    uint64_t where = in.varint("python frame where");
    if (where > UINT32_MAX)
      in.fail("expected a python frame where < 2^32, got " + std::to_string(where));
    py.push_back(
        {static_cast<uint32_t>(code_id), static_cast<uint32_t>(where >> 1), (where & 1) != 0});
  }
  in.finish();
  return static_cast<uint32_t>(id);
}

PyCode decode_py_code(const Record& r, const std::string& file) {
  FieldReader in(r, file);
  PyCode c;
  uint64_t id = in.varint("id");
  if (id == 0 || id > UINT32_MAX) in.fail("expected an id in [1, 2^32), got " + std::to_string(id));
  c.id = static_cast<uint32_t>(id);
  uint64_t version = in.varint("py_version");
  if (version > 0xffff)
    in.fail("expected py_version = (major << 8) | minor, got " + std::to_string(version));
  c.py_version = static_cast<uint16_t>(version);
  c.filename = in.string("filename");
  c.name = in.string("name");
  c.qualname = in.string("qualname");
  uint64_t first_line = in.varint("first_line");
  if (first_line > INT32_MAX)
    in.fail("expected first_line < 2^31, got " + std::to_string(first_line));
  c.first_line = static_cast<uint32_t>(first_line);
  c.line_table = in.string("line_table");
  in.finish();
  return c;
}

}  // namespace gmemhook::analysis
