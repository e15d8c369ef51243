// Building the traced command's environment (see traced_environment.h).
#include "analyzer/run/traced_environment.h"

#include <string_view>

extern char** environ;

namespace gmemhook::analysis {

namespace fs = std::filesystem;

namespace {

std::string_view name_of(std::string_view entry) { return entry.substr(0, entry.find('=')); }

// Sets NAME=value in `env`, replacing an earlier definition.
void set(std::vector<std::string>& env, std::string_view name, const std::string& value) {
  for (std::string& e : env)
    if (name_of(e) == name) {
      e = std::string(name) + "=" + value;
      return;
    }
  env.push_back(std::string(name) + "=" + value);
}

std::optional<std::string> get(const std::vector<std::string>& env, std::string_view name) {
  for (const std::string& e : env)
    if (name_of(e) == name && e.size() > name.size()) return e.substr(name.size() + 1);
  return std::nullopt;
}

}  // namespace

// ld.so splits LD_PRELOAD at colons and spaces.
std::optional<fs::path> hook_in_preload(const std::string& preload, const fs::path& lib) {
  size_t start = 0;
  while (start <= preload.size()) {
    size_t end = preload.find_first_of(": ", start);
    if (end == std::string::npos) end = preload.size();
    const fs::path entry = preload.substr(start, end - start);
    std::error_code ec;
    if (!entry.empty() && (entry.filename() == lib.filename() || fs::equivalent(entry, lib, ec)))
      return entry;
    start = end + 1;
  }
  return std::nullopt;
}

std::vector<std::string> traced_environment(const std::vector<std::string>& base,
                                            const TraceSettings& s) {
  std::vector<std::string> env = base;
  const std::string lib = s.library.string();
  std::string preload = get(env, "LD_PRELOAD").value_or("");
  if (preload.empty())
    preload = lib;
  else if (!hook_in_preload(preload, s.library))
    preload = lib + ":" + preload;
  set(env, "LD_PRELOAD", preload);
  set(env, "GMEMHOOK_OUT", s.run_dir.string());
  set(env, "GMEMHOOK_QUIET", "1");
  if (s.depth) set(env, "GMEMHOOK_DEPTH", std::to_string(*s.depth));
  if (s.no_python) set(env, "GMEMHOOK_PYTHON", "0");
  if (s.free_stacks) set(env, "GMEMHOOK_FREE_STACKS", "1");
  // JAX's default pool is one allocation of 75% of the GPU; "platform" makes one driver
  // allocation per buffer, each with its own stack.
  if (s.jax_buffers) set(env, "XLA_PYTHON_CLIENT_ALLOCATOR", "platform");
  return env;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

}  // namespace gmemhook::analysis
