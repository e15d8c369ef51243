// Reads GMEMHOOK_* variables. Runs in the library constructor, before the program's main.
#include "config.h"

#include <cstdlib>
#include <cstring>

namespace gmemhook {

Config g_config;

namespace {
bool env_flag(const char* name) {
  const char* v = getenv(name);
  return v && *v && std::strcmp(v, "0") != 0 && std::strcmp(v, "false") != 0;
}
}  // namespace

void load_config() {
  g_config.disabled = env_flag("GMEMHOOK_DISABLE");
  g_config.free_stacks = env_flag("GMEMHOOK_FREE_STACKS");
  g_config.quiet = env_flag("GMEMHOOK_QUIET");
  if (const char* p = getenv("GMEMHOOK_PYTHON"); p && *p)
    g_config.python = env_flag("GMEMHOOK_PYTHON");
  g_config.python_force_unsupported = env_flag("GMEMHOOK_PYTHON_FORCE_UNSUPPORTED");
  if (const char* d = getenv("GMEMHOOK_DEPTH"); d && *d) {
    char* end = nullptr;
    long v = strtol(d, &end, 10);
    if (end && *end == '\0' && v >= 0) g_config.depth = v > kMaxDepth ? kMaxDepth : static_cast<int>(v);
  }
  if (const char* o = getenv("GMEMHOOK_OUT"); o && *o && std::strlen(o) < sizeof(g_config.out_dir))
    std::strcpy(g_config.out_dir, o);
}

}  // namespace gmemhook
