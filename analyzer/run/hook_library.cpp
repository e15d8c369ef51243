// Finding libgmemhook.so next to the gmemhook binary (see hook_library.h).
#include "analyzer/run/hook_library.h"

#include <system_error>

namespace gmemhook::analysis {

namespace fs = std::filesystem;

fs::path self_executable() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : p;
}

std::vector<fs::path> hook_library_candidates(const fs::path& exe) {
  // The build tree and `cmake --install` both put the CLI in bin/ and the hook in lib/; packagers
  // move private libraries to lib/gmemhook/ or use lib64/.
  const fs::path prefix = exe.parent_path().parent_path();
  std::vector<fs::path> out;
  for (const char* libdir : {"lib", "lib64"}) {
    out.push_back((prefix / libdir / "libgmemhook.so").lexically_normal());
    out.push_back((prefix / libdir / "gmemhook" / "libgmemhook.so").lexically_normal());
  }
  return out;
}

std::optional<fs::path> find_hook_library(const fs::path& exe) {
  for (const fs::path& p : hook_library_candidates(exe)) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p;
  }
  return std::nullopt;
}

}  // namespace gmemhook::analysis
