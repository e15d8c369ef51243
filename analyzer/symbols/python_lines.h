// Line numbers of Python instructions, decoded offline from the raw line table the recorder copied
// out of each code object (PyCode records), in the encoding of the interpreter that wrote it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "analyzer/log/records.h"

namespace gmemhook::analysis {

// Whether line tables of this (major << 8 | minor) version can be decoded: 3.10 to 3.13.
bool python_lines_supported(uint16_t py_version);

// The line of the instruction at byte `offset`, as CPython's PyCode_Addr2Line reports it (which
// is what a frame's f_lineno shows while the frame waits in a call). nullopt when the table says
// the instruction has no line, when `offset` lies past the table, when the version is not
// supported, or when the table is malformed.
//   3.10: PEP 626 co_linetable, pairs of (unsigned byte delta, signed line delta; -128 = no line).
//   3.11+: the location table: entries of a header byte (1, code:4, code units - 1:3) and
//          code-specific varints / column bytes; code 15 = no location.
std::optional<uint32_t> python_line(uint16_t py_version, std::string_view line_table,
                                    uint32_t first_line, uint32_t offset);
inline std::optional<uint32_t> python_line(const PyCode& code, uint32_t offset) {
  return python_line(code.py_version, code.line_table, code.first_line, offset);
}

}  // namespace gmemhook::analysis
