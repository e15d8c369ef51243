// What a text output may send to a terminal. Names in a log (symbols, files, modules, the
// executable and its argv, thread names, notes) are bytes the traced program chose: an ESC could
// recolour or rewrite the screen, a CR overwrite the line a reader trusts, a bidirectional
// override reorder it. Every text output passes its names or its whole text through here.
#pragma once

#include <string>
#include <string_view>

namespace gmemhook::analysis {

// `name` with every control shown as its escape: C0 controls (line breaks and tabs too), DEL and
// bytes that are not UTF-8 as \xNN, C1 controls and bidirectional controls as \uNNNN. Printable
// text, UTF-8 included, is unchanged: one line, safe to print.
std::string terminal_text(std::string_view name);

// The same for a document of lines: each '\n' stays a line break, everything else as above.
std::string terminal_lines(std::string_view text);

}  // namespace gmemhook::analysis
