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
    kDerefRbp,     // CFA = *(rbp + cfa_offset); the caller's rbp is at rbp + rbp_offset
  };
  Kind kind = kUnknown;
  int8_t ra_offset = 0;    // the return address is at CFA + ra_offset
  int16_t rbp_offset = 0;  // rbp is saved at CFA + rbp_offset; 0: rbp is the caller's rbp
  int32_t cfa_offset = 0;
};

// The rule at code address `pc`: for a caller's frame, its return address minus one (the call
// may be the last instruction of a function). Looks the object up with dl_iterate_phdr and
// parses its .eh_frame_hdr, CIE and FDE: never allocates, reads only the object's own mapped
// unwind tables. Slow (microseconds): the unwinder caches what it returns. For a kUnsupported
// rule, *why (when given) says in a few words what did not fit (GMEMHOOK_STACK_STATS prints it).
FrameRule find_frame_rule(uint64_t pc, const char** why = nullptr);

}  // namespace gmemhook
