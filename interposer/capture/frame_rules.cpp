// Reads one frame's unwind rule out of .eh_frame (see frame_rules.h). A small, deliberately
// partial reader of DWARF call-frame information: every construct it does not fully understand
// makes the rule kUnsupported, so the worst a surprise can do is send a frame to libunwind.
// tests/interposer/fast_unwind_test.cpp checks its results against libunwind's walk.
#include "interposer/capture/frame_rules.h"

#include <cstring>

namespace gmemhook {

namespace {

// DWARF register numbers on x86_64 (System V psABI, figure 3.36).
constexpr uint64_t kRegRbp = 6;
constexpr uint64_t kRegRsp = 7;
constexpr uint64_t kRegReturnAddress = 16;

// Pointer encodings (DW_EH_PE_*) as .eh_frame uses them.
constexpr uint8_t kPeOmit = 0xff;
constexpr uint8_t kPePcRel = 0x10;
constexpr uint8_t kPeDataRel = 0x30;
constexpr uint8_t kPeIndirect = 0x80;
constexpr uint8_t kTableDataRelSdata4 = 0x3b;  // the only search-table layout we binary-search

// Bounded reads from an unwind table: a malformed length or encoding sets `ok` false instead of
// reading past the record.
struct Reader {
  const uint8_t* p;
  const uint8_t* end;
  bool ok = true;

  bool has(size_t n) {
    if (static_cast<size_t>(end - p) < n) ok = false;
    return ok;
  }
  template <typename T>
  T fixed() {
    T v{};
    if (!has(sizeof(T))) return v;
    std::memcpy(&v, p, sizeof(T));
    p += sizeof(T);
    return v;
  }
  uint64_t uleb() {
    uint64_t v = 0;
    for (unsigned shift = 0; has(1); shift += 7) {
      uint8_t b = *p++;
      if (shift < 64) v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    return 0;
  }
  int64_t sleb() {
    uint64_t v = 0;
    unsigned shift = 0;
    while (has(1)) {
      uint8_t b = *p++;
      if (shift < 64) v |= static_cast<uint64_t>(b & 0x7f) << shift;
      shift += 7;
      if (!(b & 0x80)) {
        if (shift < 64 && (b & 0x40)) v |= ~uint64_t{0} << shift;
        return static_cast<int64_t>(v);
      }
    }
    return 0;
  }
  // A pointer in encoding `enc`; `data_base` is what DW_EH_PE_datarel is relative to.
  uint64_t encoded(uint8_t enc, uint64_t data_base) {
    const uint64_t field = reinterpret_cast<uint64_t>(p);
    uint64_t v = 0;
    switch (enc & 0x0f) {
      case 0x00: v = fixed<uint64_t>(); break;
      case 0x01: v = uleb(); break;
      case 0x02: v = fixed<uint16_t>(); break;
      case 0x03: v = fixed<uint32_t>(); break;
      case 0x04: v = fixed<uint64_t>(); break;
      case 0x09: v = static_cast<uint64_t>(sleb()); break;
      case 0x0a: v = static_cast<uint64_t>(static_cast<int64_t>(fixed<int16_t>())); break;
      case 0x0b: v = static_cast<uint64_t>(static_cast<int64_t>(fixed<int32_t>())); break;
      case 0x0c: v = fixed<uint64_t>(); break;
      default: ok = false; return 0;
    }
    switch (enc & 0x70) {
      case 0x00: break;
      case kPePcRel: v += field; break;
      case kPeDataRel: v += data_base; break;
      default: ok = false; return 0;  // textrel, funcrel, aligned: never seen on x86_64 Linux
    }
    return v;
  }
};

// One register's rule in a CFI row, for the two registers the fast unwinder restores.
struct RegisterRule {
  // kAtRbp: saved at the frame's own rbp + offset (DW_CFA_expression DW_OP_breg6 offset).
  enum Kind : uint8_t { kSame, kOffset, kUndefined, kOther, kAtRbp } kind = kSame;
  int64_t offset = 0;
};

struct Row {
  uint64_t cfa_register = kRegRsp;
  int64_t cfa_offset = 8;
  bool cfa_expression = false;  // an expression other than the one below
  bool cfa_deref_rbp = false;   // CFA = *(rbp + cfa_offset), GCC's DRAP
  RegisterRule rbp, ra;
  bool bad = false;  // an instruction we do not model touched rsp, rbp or the return address
};

struct Cie {
  uint64_t code_align = 1;
  int64_t data_align = -8;
  uint8_t fde_encoding = 0;
  bool has_augmentation_data = false;
  const uint8_t* instructions = nullptr;
  const uint8_t* end = nullptr;
};

// Whether the expression block [p, end) is exactly DW_OP_breg6 (rbp) N, followed by DW_OP_deref
// when `deref`; sets *offset to N.
bool is_rbp_plus(const uint8_t* p, const uint8_t* end, bool deref, int64_t* offset) {
  constexpr uint8_t kOpBregRbp = 0x76, kOpDeref = 0x06;
  Reader e{p, end};
  if (e.fixed<uint8_t>() != kOpBregRbp) return false;
  *offset = e.sleb();
  if (deref && e.fixed<uint8_t>() != kOpDeref) return false;
  return e.ok && e.p == end;
}

RegisterRule* rule_of(Row& row, uint64_t reg) {
  if (reg == kRegRbp) return &row.rbp;
  if (reg == kRegReturnAddress) return &row.ra;
  if (reg == kRegRsp) row.bad = true;  // rsp restored other than as the CFA
  return nullptr;
}

void set_offset(Row& row, uint64_t reg, int64_t offset) {
  if (RegisterRule* r = rule_of(row, reg)) *r = {RegisterRule::kOffset, offset};
}

void set_kind(Row& row, uint64_t reg, RegisterRule::Kind kind) {
  if (RegisterRule* r = rule_of(row, reg)) *r = {kind, 0};
}

// Runs CFA instructions [r.p, r.end) from `loc` until the row for `pc` is complete (pc ==
// UINT64_MAX: all of them, for a CIE's initial row). `initial` is what DW_CFA_restore goes back
// to. False when the program uses something this reader does not know.
bool run_cfa_program(Reader r, const Cie& cie, uint64_t loc, uint64_t pc, const Row& initial,
                     Row& row) {
  constexpr int kMaxRemembered = 8;
  Row remembered[kMaxRemembered];
  int depth = 0;
  while (r.ok && r.p < r.end) {
    uint8_t op = *r.p++;
    uint64_t advance = 0;
    switch (op >> 6) {
      case 1:  // DW_CFA_advance_loc
        advance = op & 0x3f;
        break;
      case 2:  // DW_CFA_offset
        set_offset(row, op & 0x3f, static_cast<int64_t>(r.uleb()) * cie.data_align);
        continue;
      case 3: {  // DW_CFA_restore
        uint64_t reg = op & 0x3f;
        if (RegisterRule* rr = rule_of(row, reg))
          *rr = reg == kRegRbp ? initial.rbp : initial.ra;
        continue;
      }
      default:
        break;
    }
    if (op >> 6 == 0) {
      switch (op) {
        case 0x00: continue;  // DW_CFA_nop
        case 0x01: {          // DW_CFA_set_loc
          uint64_t to = r.encoded(cie.fde_encoding, 0);
          if (to > pc) return r.ok;
          loc = to;
          continue;
        }
        case 0x02: advance = r.fixed<uint8_t>(); break;   // DW_CFA_advance_loc1
        case 0x03: advance = r.fixed<uint16_t>(); break;  // DW_CFA_advance_loc2
        case 0x04: advance = r.fixed<uint32_t>(); break;  // DW_CFA_advance_loc4
        case 0x05: {                                      // DW_CFA_offset_extended
          uint64_t reg = r.uleb();
          set_offset(row, reg, static_cast<int64_t>(r.uleb()) * cie.data_align);
          continue;
        }
        case 0x06: {  // DW_CFA_restore_extended
          uint64_t reg = r.uleb();
          if (RegisterRule* rr = rule_of(row, reg))
            *rr = reg == kRegRbp ? initial.rbp : initial.ra;
          continue;
        }
        case 0x07: set_kind(row, r.uleb(), RegisterRule::kUndefined); continue;  // undefined
        case 0x08: set_kind(row, r.uleb(), RegisterRule::kSame); continue;       // same_value
        case 0x09: {  // DW_CFA_register: a value kept in another register
          uint64_t reg = r.uleb();
          r.uleb();
          set_kind(row, reg, RegisterRule::kOther);
          continue;
        }
        case 0x0a:  // DW_CFA_remember_state
          if (depth == kMaxRemembered) return false;
          remembered[depth++] = row;
          continue;
        case 0x0b:  // DW_CFA_restore_state
          if (depth == 0) return false;
          row = remembered[--depth];
          continue;
        case 0x0c:  // DW_CFA_def_cfa
          row.cfa_register = r.uleb();
          row.cfa_offset = static_cast<int64_t>(r.uleb());
          row.cfa_expression = row.cfa_deref_rbp = false;
          continue;
        case 0x0d:  // DW_CFA_def_cfa_register (meaningless after an expression)
          row.cfa_register = r.uleb();
          row.cfa_expression |= row.cfa_deref_rbp;
          continue;
        case 0x0e:  // DW_CFA_def_cfa_offset (likewise)
          row.cfa_offset = static_cast<int64_t>(r.uleb());
          row.cfa_expression |= row.cfa_deref_rbp;
          continue;
        case 0x0f: {  // DW_CFA_def_cfa_expression
          uint64_t len = r.uleb();
          if (!r.has(len)) return false;
          int64_t offset = 0;
          row.cfa_deref_rbp = is_rbp_plus(r.p, r.p + len, true, &offset);
          row.cfa_expression = !row.cfa_deref_rbp;
          row.cfa_register = kRegRbp;
          row.cfa_offset = offset;
          r.p += len;
          continue;
        }
        case 0x10:    // DW_CFA_expression
        case 0x16: {  // DW_CFA_val_expression
          uint64_t reg = r.uleb();
          uint64_t len = r.uleb();
          if (!r.has(len)) return false;
          int64_t offset = 0;
          if (op == 0x10 && reg == kRegRbp && is_rbp_plus(r.p, r.p + len, false, &offset))
            row.rbp = {RegisterRule::kAtRbp, offset};
          else
            set_kind(row, reg, RegisterRule::kOther);
          r.p += len;
          continue;
        }
        case 0x11: {  // DW_CFA_offset_extended_sf
          uint64_t reg = r.uleb();
          set_offset(row, reg, r.sleb() * cie.data_align);
          continue;
        }
        case 0x12:  // DW_CFA_def_cfa_sf
          row.cfa_register = r.uleb();
          row.cfa_offset = r.sleb() * cie.data_align;
          row.cfa_expression = row.cfa_deref_rbp = false;
          continue;
        case 0x13:  // DW_CFA_def_cfa_offset_sf
          row.cfa_offset = r.sleb() * cie.data_align;
          row.cfa_expression |= row.cfa_deref_rbp;
          continue;
        case 0x14:                                                         // DW_CFA_val_offset
          set_kind(row, r.uleb(), RegisterRule::kOther);
          r.uleb();
          continue;
        case 0x15:  // DW_CFA_val_offset_sf
          set_kind(row, r.uleb(), RegisterRule::kOther);
          r.sleb();
          continue;
        case 0x2e: r.uleb(); continue;  // DW_CFA_GNU_args_size: no effect on the CFA
        case 0x2f: {                    // DW_CFA_GNU_negative_offset_extended
          uint64_t reg = r.uleb();
          set_offset(row, reg, -static_cast<int64_t>(r.uleb()) * cie.data_align);
          continue;
        }
        default: return false;
      }
    }
    loc += advance * cie.code_align;
    if (loc > pc) return r.ok;
  }
  return r.ok;
}

// Parses the CIE at `at` (a pointer into .eh_frame).
bool parse_cie(const uint8_t* at, Cie& cie) {
  Reader r{at, at + 8};
  uint32_t length = r.fixed<uint32_t>();
  if (!r.ok || length == 0 || length == 0xffffffffu) return false;  // 64-bit DWARF: not in .eh_frame
  r.end = at + 4 + length;
  if (r.fixed<uint32_t>() != 0) return false;  // a CIE's id is 0 in .eh_frame
  uint8_t version = r.fixed<uint8_t>();
  if (version != 1 && version != 3) return false;
  const char* augmentation = reinterpret_cast<const char*>(r.p);
  size_t aug_len = strnlen(augmentation, static_cast<size_t>(r.end - r.p));
  if (!r.has(aug_len + 1)) return false;
  r.p += aug_len + 1;
  cie.code_align = r.uleb();
  cie.data_align = r.sleb();
  uint64_t ra_register = version == 1 ? r.fixed<uint8_t>() : r.uleb();
  if (!r.ok || ra_register != kRegReturnAddress) return false;
  if (augmentation[0] == 'z') {
    cie.has_augmentation_data = true;
    uint64_t len = r.uleb();
    if (!r.has(len)) return false;
    Reader data{r.p, r.p + len};
    r.p += len;
    for (const char* a = augmentation + 1; *a; ++a) {
      switch (*a) {
        case 'R': cie.fde_encoding = data.fixed<uint8_t>(); break;
        case 'L': data.fixed<uint8_t>(); break;
        case 'P': {
          // The personality routine: skipped, never followed (indirect is only an address).
          uint8_t enc = data.fixed<uint8_t>();
          data.encoded(static_cast<uint8_t>(enc & ~kPeIndirect), 0);
          break;
        }
        default: return false;  // 'S' (a signal frame) and anything unknown: libunwind's job
      }
    }
    if (!data.ok) return false;
  } else if (augmentation[0]) {
    return false;  // "eh" and other pre-'z' forms
  }
  cie.instructions = r.p;
  cie.end = r.end;
  return r.ok;
}

// The rule for `pc` from the FDE at `fde` (a pointer into .eh_frame).
FrameRule rule_from_fde(const uint8_t* fde, uint64_t pc, const char** why) {
  FrameRule unsupported{FrameRule::kUnsupported};
  *why = "unreadable FDE or CIE";
  Reader r{fde, fde + 8};
  uint32_t length = r.fixed<uint32_t>();
  if (!r.ok || length == 0 || length == 0xffffffffu) return unsupported;
  r.end = fde + 4 + length;
  const uint8_t* id_field = r.p;
  uint32_t cie_offset = r.fixed<uint32_t>();
  if (!r.ok || cie_offset == 0) return unsupported;  // a CIE, not an FDE
  Cie cie;
  if (!parse_cie(id_field - cie_offset, cie)) return unsupported;
  uint64_t begin = r.encoded(cie.fde_encoding, 0);
  uint64_t range = r.encoded(cie.fde_encoding & 0x0f, 0);
  if (!r.ok || pc < begin || pc - begin >= range) {
    *why = "no FDE covers it";
    return unsupported;
  }
  if (cie.has_augmentation_data) {
    uint64_t len = r.uleb();
    if (!r.has(len)) return unsupported;
    r.p += len;
  }
  *why = "CFA instruction not modelled";
  Row initial;
  if (!run_cfa_program(Reader{cie.instructions, cie.end}, cie, 0, UINT64_MAX, initial, initial))
    return unsupported;
  Row row = initial;
  if (!run_cfa_program(Reader{r.p, r.end}, cie, begin, pc, initial, row)) return unsupported;

  *why = row.bad               ? "rsp, rbp or return address kept elsewhere"
         : row.cfa_expression  ? "CFA is a DWARF expression"
         : row.cfa_register != kRegRsp && row.cfa_register != kRegRbp ? "CFA in another register"
                                                                      : "CFA offset";
  if (row.bad || row.cfa_expression) return unsupported;
  if (row.cfa_register != kRegRsp && row.cfa_register != kRegRbp) return unsupported;
  // A DRAP frame's CFA slot sits below rbp (a negative offset); any other CFA lies above.
  if (row.cfa_deref_rbp ? row.cfa_offset < INT32_MIN || row.cfa_offset > INT32_MAX
                        : row.cfa_offset <= 0 || row.cfa_offset > INT32_MAX)
    return unsupported;
  *why = "return address or rbp rule";
  FrameRule rule;
  rule.kind = row.cfa_deref_rbp            ? FrameRule::kDerefRbp
              : row.cfa_register == kRegRsp ? FrameRule::kFromRsp
                                            : FrameRule::kFromRbp;
  rule.cfa_offset = static_cast<int32_t>(row.cfa_offset);
  if (row.ra.kind == RegisterRule::kUndefined) return {FrameRule::kOutermost};
  if (row.ra.kind != RegisterRule::kOffset || row.ra.offset >= 0 || row.ra.offset < INT8_MIN)
    return unsupported;
  rule.ra_offset = static_cast<int8_t>(row.ra.offset);
  if (rule.kind == FrameRule::kDerefRbp) {
    // Only with rbp saved relative to itself: the walk reads it from the frame's own rbp.
    if (row.rbp.kind != RegisterRule::kAtRbp || row.rbp.offset < INT16_MIN ||
        row.rbp.offset > INT16_MAX)
      return unsupported;
    rule.rbp_offset = static_cast<int16_t>(row.rbp.offset);
  } else if (row.rbp.kind == RegisterRule::kOffset) {
    if (row.rbp.offset >= 0 || row.rbp.offset < INT16_MIN) return unsupported;
    rule.rbp_offset = static_cast<int16_t>(row.rbp.offset);
  } else if (row.rbp.kind != RegisterRule::kSame) {
    return unsupported;
  }
  return rule;
}

// The FDE covering `pc` through the binary-search table of .eh_frame_hdr at `hdr`.
const uint8_t* find_fde(const uint8_t* hdr, uint64_t size, uint64_t pc) {
  Reader r{hdr, hdr + size};
  const uint64_t base = reinterpret_cast<uint64_t>(hdr);
  uint8_t version = r.fixed<uint8_t>();
  uint8_t frame_enc = r.fixed<uint8_t>();
  uint8_t count_enc = r.fixed<uint8_t>();
  uint8_t table_enc = r.fixed<uint8_t>();
  if (!r.ok || version != 1 || table_enc != kTableDataRelSdata4 || count_enc == kPeOmit)
    return nullptr;
  r.encoded(frame_enc, base);
  uint64_t count = r.encoded(count_enc, base);
  if (!r.ok || count == 0 || count > static_cast<uint64_t>(r.end - r.p) / 8) return nullptr;
  struct Entry {
    int32_t start;
    int32_t fde;
  };
  const auto* table = reinterpret_cast<const Entry*>(r.p);
  const int64_t target = static_cast<int64_t>(pc - base);
  // The last entry that starts at or before pc.
  uint64_t lo = 0, hi = count;
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    (table[mid].start <= target ? lo : hi) = mid;
  }
  if (table[lo].start > target) return nullptr;
  return hdr + table[lo].fde;
}

}  // namespace

FrameRule rule_in_unwind_tables(const uint8_t* eh_frame_hdr, uint64_t size, uint64_t pc,
                                const char** why) {
  *why = eh_frame_hdr ? "not in .eh_frame_hdr's table" : "no .eh_frame_hdr";
  const uint8_t* fde = eh_frame_hdr ? find_fde(eh_frame_hdr, size, pc) : nullptr;
  if (!fde) return {FrameRule::kUnsupported};
  const FrameRule rule = rule_from_fde(fde, pc, why);
  if (rule.kind != FrameRule::kUnsupported) *why = nullptr;
  return rule;
}

}  // namespace gmemhook
