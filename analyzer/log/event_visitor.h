// The callback interface through which ProcessReader hands out a process's events in sequence
// order, together with the stacks and notes of each thread file as they are met.
#pragma once

#include <cstdint>
#include <span>

#include "gmemhook/codec.h"

namespace gmemhook::analysis {

class ThreadFileReader;
struct Note;
struct PyCode;

class EventVisitor {
 public:
  virtual ~EventVisitor() = default;
  // Events arrive in increasing seq across all thread files of the process.
  virtual void on_event(const format::Event& ev, const ThreadFileReader& thread) = 0;
  // The same for a usual event (an allocation or a free of the usual shapes: nearly all of them),
  // instead of on_event: `thread.usual()` has its numbers, and `thread.current()` the whole Event,
  // filled when first asked for. The default hands that Event to on_event; a visitor that needs
  // only a few numbers of most events reads them without it (the Event's 128 bytes,
  // filled and read back, were a fifth of `summary`'s instructions).
  virtual void on_usual_event(const ThreadFileReader& thread);
  // The current event of `thread` (its current_seq, current_address, current_stack_id) just
  // decoded, whose on_event comes after other threads' events (a file's first event, and one that
  // another file's events overtake; never one delivered next): a hint to start loading what
  // on_event will touch, so the cache misses of several events overlap. Changes nothing shown.
  virtual void upcoming(const ThreadFileReader& /*thread*/) {}
  // Whether upcoming() does anything, asked once at the start of each pass: a visitor that says
  // no is merged without the announcing (a virtual call for each event another file overtakes:
  // 7 of 8 with eight threads taking turns).
  virtual bool wants_upcoming() const { return true; }
  // A stack record of `thread`, delivered after the events that precede it in its file and
  // before the first event that refers to it.
  virtual void on_stack(uint32_t /*id*/, std::span<const uint64_t> /*frames*/,
                        const ThreadFileReader& /*thread*/) {}
  virtual void on_note(const Note& /*note*/, const ThreadFileReader& /*thread*/) {}
  // A Python code object of `thread`, delivered before the first stack that refers to it.
  // Stacks' Python frames are read with ThreadFileReader::python_frames().
  virtual void on_py_code(const PyCode& /*code*/, const ThreadFileReader& /*thread*/) {}
};

}  // namespace gmemhook::analysis
