// Reads GMEMHOOK_* variables. Runs in the library constructor, before the program's main. A value
// that makes no sense is replaced by the default and said once; the warning waits for the
// process's first CUDA call, so a process that never uses CUDA prints nothing.
#include "interposer/base/config.h"

#include <strings.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "interposer/base/text.h"

namespace gmemhook {

constinit Config g_config;

namespace {
// What load_config() found wrong, said at the first CUDA call. Constant-initialized: a dynamic
// initializer's turn would follow the link order, and load_config() might write here first.
constinit FixedString<2048> g_config_warnings;

void warn(const char* name, const char* value, const char* expected, const char* used) {
  FixedString<2048>& w = g_config_warnings;
  w.append("gmemhook: ").append(name).append("=").append(value).append(": expected ");
  w.append(expected).append("; using ").append(used).append("\n");
}

// 1/0, true/false, yes/no, on/off. Unset or empty: `def`.
bool env_flag(const char* name, bool def = false) {
  const char* v = getenv(name);
  if (!v || !*v) return def;
  for (const char* t : {"1", "true", "yes", "on"})
    if (strcasecmp(v, t) == 0) return true;
  for (const char* f : {"0", "false", "no", "off"})
    if (strcasecmp(v, f) == 0) return false;
  warn(name, v, "1 or 0", def ? "1" : "0");
  return def;
}

// A whole decimal number in [lo, hi], else `def` with a warning.
long env_number(const char* name, long lo, long hi, long def, const char* expected) {
  const char* v = getenv(name);
  if (!v || !*v) return def;
  char* end = nullptr;
  long n = strtol(v, &end, 10);
  if (end && *end == '\0' && n >= lo && n <= hi) return n;
  FixedString<24> used;
  used.append_int(def);
  warn(name, v, expected, used.c_str());
  return def;
}

// GMEMHOOK_OUT, made absolute here and handed down: a child that changed directory must still
// write into the same run (a relative path split runs in two).
void load_out_dir() {
  const char* o = getenv("GMEMHOOK_OUT");
  if (!o || !*o) return;
  FixedString<PATH_MAX> abs;
  if (o[0] != '/') {
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof(cwd))) {
      warn("GMEMHOOK_OUT", o, "a directory reachable from the working directory",
           "the working directory");
      return;
    }
    abs.append(cwd).append("/");
  }
  abs.append(o);
  // Trailing slashes would only double up in the paths shown to the user.
  size_t n = abs.size();
  while (n > 1 && abs.c_str()[n - 1] == '/') --n;
  if (abs.truncated() || n >= sizeof(g_config.out_dir)) {
    warn("GMEMHOOK_OUT", "...", "a path shorter than PATH_MAX", "the working directory");
    return;
  }
  std::memcpy(g_config.out_dir, abs.c_str(), n);
  g_config.out_dir[n] = '\0';
  if (std::strcmp(g_config.out_dir, o) != 0) setenv("GMEMHOOK_OUT", g_config.out_dir, 1);
}
}  // namespace

void load_config() {
  g_config.disabled = env_flag("GMEMHOOK_DISABLE");
  g_config.free_stacks = env_flag("GMEMHOOK_FREE_STACKS");
  g_config.quiet = env_flag("GMEMHOOK_QUIET");
  g_config.python = env_flag("GMEMHOOK_PYTHON", true);
  g_config.python_force_unsupported = env_flag("GMEMHOOK_PYTHON_FORCE_UNSUPPORTED");
  g_config.depth = static_cast<int>(
      env_number("GMEMHOOK_DEPTH", 0, kMaxDepth, 64, "a number of frames from 0 to 256"));
  g_config.nvml = env_flag("GMEMHOOK_NVML", true);
  g_config.nvml_interval_ms = static_cast<int>(env_number(
      "GMEMHOOK_NVML_INTERVAL_MS", 10, 60000, 100, "milliseconds from 10 to 60000"));
  if (const char* v = getenv("GMEMHOOK_STACK_STATS"); v && strcasecmp(v, "events") == 0) {
    g_config.event_stats = true;
  } else {
    g_config.stack_stats = env_flag("GMEMHOOK_STACK_STATS");
    g_config.event_stats = g_config.stack_stats;
  }
  g_config.fast_unwind = env_flag("GMEMHOOK_FAST_UNWIND", true);
  g_config.full_native_stacks = env_flag("GMEMHOOK_FULL_NATIVE_STACKS");
  g_config.recent_walks = env_flag("GMEMHOOK_RECENT_WALKS", true);
  g_config.tsc = env_flag("GMEMHOOK_TSC", true);
  if (const char* v = getenv("GMEMHOOK_TIME"); v && *v) {
    if (strcasecmp(v, "precise") == 0)
      g_config.coarse_time = false;
    else if (strcasecmp(v, "coarse") != 0)
      warn("GMEMHOOK_TIME", v, "coarse or precise", "coarse");
  }
  g_config.test_disk_full_after =
      env_number("GMEMHOOK_TEST_DISK_FULL_AFTER", -1, 1L << 30, -1, "a number of chunks");
  g_config.page_thread = env_flag("GMEMHOOK_PAGE_THREAD", true);
  g_config.test_page_delay_us =
      env_number("GMEMHOOK_TEST_PAGE_DELAY_US", 0, 10000000, 0, "microseconds");
  g_config.test_process_chunk_kib =
      env_number("GMEMHOOK_TEST_PROCESS_CHUNK_KIB", 0, 64, 0, "KiB from 4 to 64");
  g_config.test_delay_record_us =
      env_number("GMEMHOOK_TEST_DELAY_RECORD_US", 0, 10000000, 0, "microseconds");
  g_config.test_delay_open_ms =
      env_number("GMEMHOOK_TEST_DELAY_OPEN_MS", 0, 600000, 0, "milliseconds");
  g_config.open_wait_ms =
      env_number("GMEMHOOK_TEST_OPEN_WAIT_MS", 0, 600000, 10000, "milliseconds");
  const bool plain =
      !g_config.event_stats && !g_config.stack_stats && g_config.test_delay_record_us == 0;
  g_config.plain_allocations = plain && g_config.depth > 0 && g_config.fast_unwind;
  g_config.plain_frees = plain && !(g_config.free_stacks && g_config.depth > 0);
  if (const char* swap = getenv("GMEMHOOK_TEST_SWAP_DIR"); swap && std::strlen(swap) < PATH_MAX)
    std::strcpy(g_config.test_swap_dir, swap);
  load_out_dir();
}

void print_config_warnings() {
  if (g_config_warnings.size() == 0) return;
  write_stderr(g_config_warnings.c_str(), g_config_warnings.size());
  g_config_warnings.clear();
}

}  // namespace gmemhook
