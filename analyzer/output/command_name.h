// How hint lines name gmemhook: by the path the user invoked it by ("./build/bin/gmemhook"), so a
// suggested command can be pasted as it is even where gmemhook is not on PATH.
#pragma once

#include <string>

namespace gmemhook::analysis {

// Remembers argv[0] (main calls this first); "gmemhook" until then.
void set_invoked_as(const std::string& argv0);
// argv[0] quoted for a shell where needed: the first word of a pasteable command.
std::string command_name();
// `s` quoted for a shell when needed (a run directory as typed).
std::string shell_word(const std::string& s);

}  // namespace gmemhook::analysis
