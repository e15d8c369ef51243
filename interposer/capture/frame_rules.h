// How an x86_64 frame gets back to its caller, read from the DWARF call-frame information
// (.eh_frame) of the object that holds its code: the input of the fast unwinder.
#pragma once

#include <cstdint>

namespace gmemhook {

// Nearly all compiled code unwinds the same simple way: the canonical frame address (CFA, the
// caller's rsp) is rsp or rbp plus a constant, the return address is saved at CFA + ra_offset,
// and rbp is either untouched or saved at CFA + rbp_offset. Anything else — DWARF expressions,
// a CFA in another register (stack realignment through r10), signal frames, code without CFI —
// is kUnsupported and left to libunwind. One DWARF expression is understood, the one GCC writes
// for a frame that realigns its stack and also has a variable size (DRAP): CFA = *(rbp + N),
// rbp saved at rbp + M (kDerefRbp, rbp_offset = M relative to the frame's own rbp).
struct FrameRule {
  enum Kind : uint8_t {
    kUnknown = 0,  // not looked up yet (a zeroed cache entry)
    kFromRsp,      // CFA = rsp + cfa_offset
    kFromRbp,      // CFA = rbp + cfa_offset
    kOutermost,    // the return address is undefined: the first frame of the thread
    kUnsupported,
    kDerefRbp,  // CFA = *(rbp + cfa_offset); the caller's rbp is at rbp + rbp_offset
  };
  Kind kind = kUnknown;
  int8_t ra_offset = 0;    // the return address is at CFA + ra_offset
  int16_t rbp_offset = 0;  // rbp is saved at CFA + rbp_offset; 0: rbp is the caller's rbp
  int32_t cfa_offset = 0;
};

// The loaded objects' address spans and unwind tables (.eh_frame_hdr), remembered between rule
// lookups: a torch process has hundreds of objects, and checking every one's program headers on
// each lookup cost microseconds. The table is trusted while the loader's counts of objects added
// and removed (dl_phdr_info's dlpi_adds / dlpi_subs) are those it was made at, checked under the
// loader's lock at each lookup, so an object that was dlclose'd is never read (and a change of
// dlpi_subs seen there moves the unload generation, unload_watch.h). Plain memory
// (zeroed = not made yet); one per thread, inside its rule cache.
struct ObjectTable {
  struct Object {
    uint64_t lo, hi;              // from the first PT_LOAD segment's start to the last one's end
    const uint8_t* eh_frame_hdr;  // null: the object has none
    uint64_t eh_frame_hdr_size;
  };
  static constexpr int kMaxObjects = 2048;
  bool valid = false;  // false: not made yet, or more objects than fit (every lookup scans)
  unsigned long long adds = 0, subs = 0;
  int count = 0;
  uint64_t made = 0;            // times the table was made (for GMEMHOOK_STACK_STATS)
  Object objects[kMaxObjects];  // sorted by lo
};

// The rule at code address `pc`: for a caller's frame, its return address minus one (the call
// may be the last instruction of a function). Finds the object with dl_iterate_phdr (through
// `objects` when given) and parses its .eh_frame_hdr, CIE and FDE while the loader's lock is
// held: never allocates, reads only the object's own mapped unwind tables. Slow (a microsecond
// or more): the unwinder caches what it returns. For a kUnsupported rule, *why (when given) says
// in a few words what did not fit (GMEMHOOK_STACK_STATS prints it). In object_table.cpp.
FrameRule find_frame_rule(uint64_t pc, const char** why = nullptr, ObjectTable* objects = nullptr);

// The rule at `pc` from the unwind tables of the object that holds it: its .eh_frame_hdr of
// `size` bytes (null: it has none). *why as for find_frame_rule (null for a supported rule).
FrameRule rule_in_unwind_tables(const uint8_t* eh_frame_hdr, uint64_t size, uint64_t pc,
                                const char** why);

}  // namespace gmemhook
