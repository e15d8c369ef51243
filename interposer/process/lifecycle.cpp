// Start-up (library constructor), fork children, and the end record at exit — including
// os._exit(), which skips exit handlers and so is hooked directly.
#include "interposer/process/lifecycle.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "interposer/base/config.h"
#include "interposer/base/event_time.h"
#include "interposer/base/real_symbols.h"
#include "interposer/base/text.h"
#include "interposer/capture/capture_stats.h"
#include "interposer/capture/python_frames.h"
#include "interposer/capture/unload_watch.h"
#include "interposer/capture/unwinder.h"
#include "interposer/log/log_pages.h"
#include "interposer/log/process_log.h"
#include "interposer/log/record_loss.h"
#include "interposer/record/nvml_sampler.h"
#include "interposer/record/recorder.h"

namespace gmemhook {
namespace {

using ExitFn = void (*)(int);

// How the process's log ends.
struct ProcessEnd {
  std::atomic<bool> ended{false};  // the end record is written (once; again after a failed exec)
  // glibc's _exit, the definition after ours: the _exit and _Exit wrappers end with it.
  ExitFn real_exit = nullptr;
};
constinit ProcessEnd g_end;

void print_summary() {
  Totals t = totals();
  if (!t.cuda_used || g_config.quiet || !process_log_ready()) return;
  FixedString<PATH_MAX + 256> m;
  m.append("gmemhook: ").append_uint(t.allocations).append(" allocations, ");
  m.append_uint(t.frees).append(" frees");
  if (t.failed) m.append(", ").append_uint(t.failed).append(" failed allocations");
  if (t.blocks) m.append(", ").append_uint(t.blocks).append(" PyTorch blocks");
  m.append(" recorded in ").append(process_dir_for_display());
  if (LossReport loss = loss_report(); loss.not_recorded) {
    // Said on the same line: a reader of the summary must not take the counts as complete.
    m.append("; log incomplete: ").append_uint(loss.not_recorded);
    m.append(" events not recorded from event ").append_uint(loss.first_seq).append(" on (");
    // No error: calls passed through unrecorded (a signal handler inside the recorder, a
    // first call that could not wait for the log to open), not a failed write.
    const char* name = loss.error ? strerrorname_np(loss.error) : "passed through";
    m.append(name ? name : "write failed").append(")");
  }
  m.append(" (run: gmemhook summary ").append(process_dir_for_display()).append(")\n");
  write_stderr(m.c_str(), m.size());
}

}  // namespace

void finish(format::EndHow how, int status) {
  // Only once, and only in the process that owns the log: a vfork child shares our memory and
  // must not mark the parent's log as ended.
  if (!owns_process_log() || g_end.ended.exchange(true)) return;
  nvml_at_exit();
  seal_thread_logs();
  write_end_record(how, status, totals().cuda_used, loss_report());
  print_summary();
  if (g_config.stack_stats || g_config.event_stats) print_capture_stats();
}

void before_exec() {
  if (recording_enabled()) finish(format::EndHow::Exec, 0);
}

// The reader keeps the last End record, so the one written at the real exit replaces this one.
void exec_failed() {
  if (owns_process_log()) g_end.ended.store(false);
}

namespace {

void at_exit(int status, void*) { finish(format::EndHow::Exit, status); }

// LD_PRELOAD names two files of the hook (one by hand, one added by a tool): the copy loaded
// first records; this later one keeps recording off, so its wrappers pass every call on to the
// next definition, and says so once. Said at start, not at the first CUDA call as the settings'
// warnings are: the first copy's wrappers call CUDA past this copy (find_real_symbol skips
// copies of the hook), so this one never hears of a CUDA call.
bool forwarding_to_earlier_copy() {
  const char* first = earlier_hook_copy();
  if (!first) return false;
  if (g_config.quiet) return true;
  Dl_info mine{};
  dladdr(reinterpret_cast<void*>(&forwarding_to_earlier_copy), &mine);
  FixedString<2 * PATH_MAX + 128> m;
  m.append("gmemhook: two copies of the hook are loaded: ").append(first).append(" records, ");
  m.append(mine.dli_fname ? mine.dli_fname : "this one").append(" records nothing");
  m.append(" (name one of them in LD_PRELOAD)\n");
  write_stderr(m.c_str(), m.size());
  return true;
}

void fork_child() {
  page_requests_fork_child();
  on_fork_child();
  recorder_fork_child();
  nvml_fork_child();
  g_end.ended.store(false);
}

__attribute__((constructor)) void start() {
  load_config();
  // Through the trampoline with RTLD_NEXT: glibc's _exit, the definition after ours.
  g_end.real_exit = reinterpret_cast<ExitFn>(dlsym(RTLD_NEXT, "_exit"));
  init_exec_hooks();
  init_unload_watch();
  if (g_config.disabled || forwarding_to_earlier_copy()) return;
  init_unwinder();
  init_event_time(g_config.tsc, g_config.coarse_time);
  init_recorder();
  // No directory yet: it is made at the first CUDA call (process_log.h, ensure_process_log).
  init_python_frames();
  pthread_atfork(nullptr, nullptr, fork_child);
  on_exit(at_exit, nullptr);
  g_event_globals.recording.fetch_or(kRecordingOn, std::memory_order_release);
}

}  // namespace

}  // namespace gmemhook

// _exit() skips atexit/on_exit handlers (Python's os._exit uses it): record the end, then exit.
// _Exit is the C99 name of the same call.
#define GMEMHOOK_DEFINE_EXIT(NAME)                                                    \
  extern "C" __attribute__((visibility("default"), noreturn)) void NAME(int status) { \
    if (gmemhook::recording_enabled())                                                \
      gmemhook::finish(gmemhook::format::EndHow::UnderscoreExit, status);             \
    if (gmemhook::g_end.real_exit) gmemhook::g_end.real_exit(status);                 \
    syscall(SYS_exit_group, status);                                                  \
    __builtin_unreachable();                                                          \
  }
GMEMHOOK_DEFINE_EXIT(_exit)
GMEMHOOK_DEFINE_EXIT(_Exit)
#undef GMEMHOOK_DEFINE_EXIT
