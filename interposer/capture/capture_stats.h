// Where the time of stack capture goes, for GMEMHOOK_STACK_STATS=1: the cost of recording in a
// real program, measured inside it rather than guessed from probes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gmemhook {

// One stack captured: time spent unwinding native frames and walking Python frames, and how many
// frames of each came back. Lock-free; from any thread.
void note_capture(uint64_t native_ns, size_t native_frames, uint64_t python_ns,
                  size_t python_frames);

// How one native stack was walked (unwinder.cpp), and for a walk the fast unwinder gave up on,
// where and why (the first such frame of the process is kept for the line below). A recent walk
// is found either as the hinted one (the one that came next last time: fast_unwinder.h) or
// looked up among the recent walks (kRecentLookedUp): in a real program the first is a few
// loads, the second reads more lines.
enum class Walk { kStepped, kFast, kShadow, kLibunwind, kRecent, kRecentLookedUp };
void note_walk(Walk how);
void note_gave_up(uint64_t pc, const char* why);
// Where a captured stack's id came from (recorder.cpp): the note on its recent walk, the memo
// of ids by walk and Python frames, or the stack table (kNew: a stack met for the first time).
enum class StackIdFrom { kNote, kMemo, kTable, kNew };
void note_stack_id(StackIdFrom from);
// Rules the fast unwinder learnt in one walk, and times it made its table of objects again.
void note_rules_learnt(uint64_t rules, uint64_t object_tables);

// One event recorded, and the time record_event took for it (recorder.cpp): its stack capture,
// encoding and append, everything the recorder adds after the real call returned except the
// exported wrapper around it. Events over 100 us (a log opened, a chunk mapped) are counted
// apart. With the captures' share above, what recording costs the traced
// thread, measured inside the program (torch_loop_bench.py's in-process figure).
void note_event(uint64_t ns);

// One line on stderr with the process's totals (at exit, when the setting is on). Malloc-free.
void print_capture_stats();

}  // namespace gmemhook
