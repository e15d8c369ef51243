// The name hint lines give gmemhook (see command_name.h).
#include "analyzer/output/command_name.h"

namespace gmemhook::analysis {

namespace {

std::string& invoked_as() {
  static std::string name = "gmemhook";
  return name;
}

}  // namespace

void set_invoked_as(const std::string& argv0) {
  if (!argv0.empty()) invoked_as() = argv0;
}

std::string shell_word(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789-_./=:+,@%") == std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string command_name() { return shell_word(invoked_as()); }

}  // namespace gmemhook::analysis
