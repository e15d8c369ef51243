// Every file the CLI writes (the page and its other formats, run.json) holds stacks or argv: it
// is created 0600 whatever the umask, through a temporary file and rename(), and never written
// through a symlink someone else could have put in its place (docs/security.md).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace gmemhook::analysis {

// Writes `text` to the file `path` names. A new or regular file is replaced by a new 0600 one (a
// reader sees the old or the new file, never half of one). Where users other than us and root
// may create entries (/tmp), a symlink, or any entry of another user, is refused; elsewhere a
// symlink is followed and a FIFO or device (/dev/null) written into. Throws std::runtime_error
// with a message for the user, naming the path.
void write_private_file(const std::filesystem::path& path, std::string_view text);

// The same for `name` in the directory open as `dir_fd`, which `dir` names in messages.
void write_private_file_at(int dir_fd, const std::filesystem::path& dir, const std::string& name,
                           std::string_view text);

}  // namespace gmemhook::analysis
