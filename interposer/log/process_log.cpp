// The per-process log directory and process.gmh (see process_log.h). Malloc-free throughout:
// it runs in the library constructor, in hooks, in fork children and in exit handlers.
#include "interposer/log/process_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "gmemhook/codec.h"
#include "gmemhook/dir_trust.h"
#include "interposer/base/busy.h"
#include "interposer/base/config.h"
#include "interposer/base/event_time.h"
#include "interposer/base/text.h"
#include "interposer/log/log_file.h"
#include "interposer/log/module_map.h"

#ifndef GMEMHOOK_VERSION
#define GMEMHOOK_VERSION "unknown"
#endif

namespace gmemhook {

namespace {
// Small: every process under LD_PRELOAD gets one (also `sh -c`), and blocks are reserved up front.
constexpr uint32_t kProcessChunk = 64u << 10;

// ensure_process_log(): not tried, being opened, open, failed.
enum OpenState : int { kNotOpened, kOpening, kOpen, kFailed };

// The process log's state: its directory, process.gmh and what was written to it. Everything in
// it describes this process: a fork child resets it (on_fork_child).
struct ProcessState {
  std::atomic<bool> ready{false};
  std::atomic<int> open_state{kNotOpened};
  // Guards process.gmh. A spinlock rather than a mutex: a fork child simply resets it, and it is
  // only taken on cold paths (module changes, notes, exit). Lock order: glibc's loader lock (held
  // inside dl_iterate_phdr) may be taken before this one, never after.
  std::atomic_flag lock = ATOMIC_FLAG_INIT;
  int pid = 0;
  uint64_t start_ns = 0;  // the process's start on the events' clock
  char dir[PATH_MAX] = {};
  char display_dir[PATH_MAX] = {};
  char exe[PATH_MAX] = {};
  // The process directory, opened once with O_DIRECTORY | O_NOFOLLOW: every log file is created
  // relative to it (docs/security.md).
  int dir_fd = -1;
  dev_t dir_dev = 0;  // which directory dir_fd is (process_dir_fd checks it is still that one)
  ino_t dir_ino = 0;
  LogFile file;
  LoadCounters modules_written{~0ull, ~0ull};
  bool said_full = false;  // warn_if_process_file_full() has warned
};
constinit ProcessState g_process;

// ProcessInfo's argv, read from /proc and cut into views; guarded by the process lock. Apart from
// ProcessState: all zeros, it stays in .bss (96 KiB that would otherwise be file-backed .data).
struct ProcessArgv {
  char cmdline[kProcessChunk / 2] = {};  // ProcessInfo must fit in one chunk
  std::string_view argv[format::kMaxArgs];
};
constinit ProcessArgv g_process_argv;
__attribute__((tls_model("initial-exec"))) thread_local bool t_gave_up_waiting = false;

// The thread holding the lock may be interrupted by a signal handler that calls CUDA: BusyScope
// makes that call pass through instead of waiting here for its own thread (busy.h).
struct ProcessLock {
  ProcessLock() {
    while (g_process.lock.test_and_set(std::memory_order_acquire)) sched_yield_();
  }
  ~ProcessLock() { g_process.lock.clear(std::memory_order_release); }
  static void sched_yield_() { usleep(0); }
  BusyScope busy;  // constructed first: set before the lock is tried
};

// Notes are one-line remarks; a longer text is cut.
constexpr size_t kMaxNote = 1008;

bool make_dirs(const char* path) {
  char tmp[PATH_MAX];
  size_t n = std::strlen(path);
  if (n == 0 || n >= sizeof(tmp)) return false;
  std::memcpy(tmp, path, n + 1);
  for (size_t i = 1; i <= n; ++i) {
    if (tmp[i] != '/' && tmp[i] != '\0') continue;
    char saved = tmp[i];
    tmp[i] = '\0';
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return false;
    tmp[i] = saved;
  }
  struct stat st {};
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

// GMEMHOOK_TEST_SWAP_DIR (config.h): what another user could do to a directory they may rename
// entries in, done between creating our directory and creating files in it.
void test_swap_dir(const char* dir) {
  if (!g_config.test_swap_dir[0]) return;
  FixedString<PATH_MAX> moved;
  moved.append(dir).append(".moved");
  if (rename(dir, moved.c_str()) == 0) {
    int rc = symlink(g_config.test_swap_dir, dir);
    (void)rc;  // the test sees whether it worked
  }
}

void read_exe(char* out, size_t cap) {
  ssize_t n = readlink("/proc/self/exe", out, cap - 1);
  out[n > 0 ? n : 0] = '\0';
}

const char* base_name(const char* path) {
  const char* s = std::strrchr(path, '/');
  return s ? s + 1 : path;
}

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

void warn(const char* what, const char* path, int err) {
  FixedString<PATH_MAX + 256> m;
  m.append("gmemhook: ").append(what).append(" ").append(path).append(": ");
  append_errno(m, err);
  m.append("; GPU allocations of this process are not recorded\n");
  write_stderr(m.c_str(), m.size());
}

// Says once, when process.gmh could not grow, what is lost from then on. Called under the process
// lock after its writes.
void warn_if_process_file_full() {
  if (g_process.said_full || !g_process.file.full()) return;
  g_process.said_full = true;
  FixedString<PATH_MAX + 256> m;
  m.append("gmemhook: cannot write ")
      .append(g_process.display_dir)
      .append("/")
      .append(format::kProcessFileName)
      .append(": ");
  append_errno(m, g_process.file.error());
  m.append("; module maps, notes and NVML samples from here on are not recorded (the end record "
           "still is)\n");
  write_stderr(m.c_str(), m.size());
}

uint32_t process_chunk() {
  const long kib = g_config.test_process_chunk_kib;
  return kib >= 4 ? static_cast<uint32_t>(kib) << 10 : kProcessChunk;
}

// The largest End record there can be: room every chunk of process.gmh keeps for it.
size_t largest_end_record() {
  constexpr uint64_t kMax = ~uint64_t{0};
  return format::kSmallHeaderSize +
         format::payload_size(format::EndPayload{format::EndHow::Exit, INT64_MIN, kMax, kMax, true,
                                                 kMax, kMax, kMax});
}

void write_process_info() {
  // argv from /proc: the constructor runs before anyone hands us argc/argv.
  ssize_t len = 0;
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    len = read(fd, g_process_argv.cmdline, sizeof(g_process_argv.cmdline));
    close(fd);
  }
  if (len < 0) len = 0;
  size_t argc = 0;
  for (const char* p = g_process_argv.cmdline;
       p < g_process_argv.cmdline + len && argc < format::kMaxArgs; ++argc) {
    size_t n =
        strnlen(p, static_cast<size_t>(g_process_argv.cmdline + len - p));  // the last may be cut
    g_process_argv.argv[argc] = std::string_view(p, n);
    p += n + 1;
  }
  auto env = [](const char* var) {
    const char* v = getenv(var);
    return v ? std::string_view(v).substr(0, 64) : std::string_view();
  };
  g_process.file.append(format::ProcessInfoPayload{
      .pid = static_cast<uint64_t>(getpid()),
      .ppid = static_cast<uint64_t>(getppid()),
      .exe = g_process.exe,
      .argv = {g_process_argv.argv, argc},
      .rank = env("RANK"),
      .local_rank = env("LOCAL_RANK"),
      .world_size = env("WORLD_SIZE"),
      .library_version = GMEMHOOK_VERSION,
      .chunk_size_hint = process_chunk(),
  });
}

void write_note_locked(const char* text) {
  g_process.file.append(format::NotePayload{std::string_view(text).substr(0, kMaxNote)});
  warn_if_process_file_full();
}
}  // namespace

bool open_process_log(bool warn_on_failure) {
  g_process.ready.store(false, std::memory_order_release);
  g_process.pid = getpid();
  g_process.start_ns = event_clock_start_ns();
  read_exe(g_process.exe, sizeof(g_process.exe));

  FixedString<PATH_MAX> parent;
  FixedString<PATH_MAX> display;
  FixedString<256> leaf;
  if (g_config.out_dir[0]) {
    parent.append(g_config.out_dir);
    display.append(g_config.out_dir).append("/");
    if (!make_dirs(parent.c_str())) {
      if (warn_on_failure) warn("cannot create", parent.c_str(), errno);
      return false;
    }
  } else {
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof(cwd))) {
      if (warn_on_failure) warn("cannot find the working directory", ".", errno);
      return false;
    }
    parent.append(cwd);
    display.append("./");
    leaf.append("gmemhook.");
  }
  // Checked on the descriptor every file is then created through, so the directory checked is
  // the one used.
  const char* why = nullptr;
  int parent_fd = open_trusted_dir(AT_FDCWD, parent.c_str(), &why);
  if (parent_fd < 0) {
    if (!warn_on_failure) return false;
    if (!why) {
      warn("cannot open", parent.c_str(), errno);
      return false;
    }
    FixedString<PATH_MAX + 512> m;
    m.append("gmemhook: refusing to write into ").append(parent.c_str()).append(": it ");
    m.append(why).append(
        "; GPU allocations of this process are not recorded (give GMEMHOOK_OUT a directory of "
        "your own that other users cannot write: docs/security.md)\n");
    write_stderr(m.c_str(), m.size());
    return false;
  }
  leaf.append(g_process.exe[0] ? base_name(g_process.exe) : "unknown").append(".");
  leaf.append_uint(static_cast<uint64_t>(g_process.pid));

  // A leftover directory of an earlier process with the same pid is never reused.
  FixedString<PATH_MAX> dir;
  FixedString<256> name;
  int err = 0;
  for (int attempt = 0; attempt < 100; ++attempt) {
    name.clear();
    name.append(leaf.c_str());
    if (attempt) name.append(".").append_uint(static_cast<uint64_t>(attempt));
    dir.clear();
    dir.append(parent.c_str()).append("/").append(name.c_str());
    if (dir.truncated() || name.truncated()) break;
    if (mkdirat(parent_fd, name.c_str(), 0700) == 0) {
      err = 0;
      break;
    }
    err = errno;
    if (err != EEXIST) break;
  }
  if (err != 0 || dir.truncated() || name.truncated()) {
    close_fd(parent_fd);
    if (warn_on_failure)
      warn("cannot create a log directory in", parent.c_str(), err ? err : ENAMETOOLONG);
    return false;
  }
  // O_NOFOLLOW: the directory we just made, or nothing. Swapped for a symlink in between, this
  // fails (ELOOP); swapped for someone else's directory, the owner check below refuses it.
  close_fd(g_process.dir_fd);
  g_process.dir_fd = openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  err = errno;
  close_fd(parent_fd);
  struct stat st {};
  if (g_process.dir_fd >= 0 && (fstat(g_process.dir_fd, &st) != 0 || st.st_uid != geteuid())) {
    close_fd(g_process.dir_fd);
    err = EPERM;
  }
  g_process.dir_dev = st.st_dev;
  g_process.dir_ino = st.st_ino;
  if (g_process.dir_fd < 0) {
    if (warn_on_failure) warn("cannot open the log directory", dir.c_str(), err);
    return false;
  }
  std::memcpy(g_process.dir, dir.c_str(), dir.size() + 1);
  display.append(name.c_str());
  std::memcpy(g_process.display_dir, display.c_str(), display.size() + 1);
  test_swap_dir(g_process.dir);

  if (!g_process.file.create(g_process.dir_fd, g_process.dir, format::kProcessFileName,
                             format::FileKind::Process, 0, {process_chunk(), process_chunk()},
                             g_process.start_ns)) {
    if (warn_on_failure) warn("cannot write", g_process.dir, g_process.file.error());
    // Nothing in it: it would only read as a process that left no log.
    if (!g_config.test_swap_dir[0]) rmdir(g_process.dir);
    close_fd(g_process.dir_fd);
    return false;
  }
  // How the process ended and what was lost must reach the log even when nothing else can.
  g_process.file.keep_for_final(largest_end_record());
  {
    ProcessLock lock;
    write_process_info();
  }
  g_process.ready.store(true, std::memory_order_release);
  return true;
}

bool ensure_process_log() {
  int state = g_process.open_state.load(std::memory_order_acquire);
  if (state == kOpen) return true;
  if (state == kFailed) return false;
  if (state == kNotOpened && g_process.open_state.compare_exchange_strong(state, kOpening)) {
    print_config_warnings();
    if (g_config.test_delay_open_ms > 0) usleep(static_cast<useconds_t>(g_config.test_delay_open_ms * 1000));
    bool ok = open_process_log(true);
    g_process.open_state.store(ok ? kOpen : kFailed, std::memory_order_release);
    if (ok) refresh_modules_if_changed();
    return ok;
  }
  // Another thread is opening it: only the first CUDA calls of a process wait here, and never
  // without bound. The opener could be stopped by a signal handler waiting on us, or the process
  // could be stopped and resumed: after g_config.open_wait_ms (10 s: opening takes a few system
  // calls and a module snapshot, milliseconds even on a loaded machine) this thread gives up (its
  // event is counted as not recorded) and does not wait again; its later calls record once the
  // log is open.
  // The pause grows: dozens of threads polling every 50 µs starved the opener on a loaded machine.
  if (t_gave_up_waiting) return false;
  const uint64_t deadline = monotonic_ns() + static_cast<uint64_t>(g_config.open_wait_ms) * 1000000;
  useconds_t pause = 50;
  while ((state = g_process.open_state.load(std::memory_order_acquire)) == kOpening) {
    if (monotonic_ns() > deadline) {
      t_gave_up_waiting = true;
      return false;
    }
    usleep(pause);
    if (pause < 2000) pause *= 2;
  }
  return state == kOpen;
}

bool process_log_failed() {
  return g_process.open_state.load(std::memory_order_acquire) == kFailed;
}
bool process_log_ready() { return g_process.ready.load(std::memory_order_acquire); }
bool owns_process_log() { return process_log_ready() && getpid() == g_process.pid; }
const char* process_dir() { return g_process.dir; }
int process_dir_fd() {
  // A program may close descriptors it did not open (closefrom, daemons) and get our number
  // back for a directory of its own: never create a log file there.
  struct stat st {};
  if (g_process.dir_fd < 0 || fstat(g_process.dir_fd, &st) != 0 ||
      st.st_dev != g_process.dir_dev || st.st_ino != g_process.dir_ino)
    return -1;
  return g_process.dir_fd;
}
const char* process_dir_for_display() { return g_process.display_dir; }

void on_fork_child() {
  // Everything inherited describes the parent. The child starts afresh and opens its own
  // directory lazily, at its first CUDA call (a child that only execs never needs one).
  g_process.lock.clear();
  g_process.ready.store(false, std::memory_order_relaxed);
  g_process.open_state.store(kNotOpened, std::memory_order_relaxed);
  g_process.file = LogFile{};  // the parent's mapping is left alone: it is shared with the parent
  close_fd(g_process.dir_fd);  // the parent's directory: the child makes its own
  g_process.modules_written = LoadCounters{~0ull, ~0ull};
  g_process.said_full = false;
  g_seq_line.next.store(0, std::memory_order_relaxed);
  g_event_globals.fork_generation.fetch_add(1, std::memory_order_relaxed);
}

void refresh_modules_if_changed() {
  if (!process_log_ready()) return;
  LoadCounters now = current_load_counters();
  if (now == g_process.modules_written) return;
  ProcessLock lock;
  if (now == g_process.modules_written) return;
  write_module_snapshot(g_process.file, last_seq(), g_process.exe);
  g_process.modules_written = now;
  warn_if_process_file_full();
}

void write_process_note(const char* text) {
  if (!process_log_ready()) return;
  ProcessLock lock;
  write_note_locked(text);
}

void write_nvml_sample(format::NvmlSamplePayload sample, uint64_t now_ns) {
  if (!process_log_ready()) return;
  sample.time_delta_ns = now_ns > g_process.start_ns ? now_ns - g_process.start_ns : 0;
  ProcessLock lock;
  g_process.file.append(sample);
  warn_if_process_file_full();
}

void write_end_record(format::EndHow how, int status, bool cuda_used, const LossReport& loss) {
  if (!process_log_ready() || getpid() != g_process.pid) return;
  ProcessLock lock;
  if (!cuda_used) write_note_locked("CUDA was never used: no allocation entry point was called");
  g_process.file.append_final(
      format::EndPayload{how, status, last_seq(), monotonic_ns() - g_process.start_ns, cuda_used,
                         loss.not_recorded, loss.first_seq, static_cast<uint64_t>(loss.error)});
  // The file is complete now: seal it (a record written later, e.g. after a failed exec, maps
  // a fresh chunk).
  g_process.file.seal();
}

}  // namespace gmemhook
