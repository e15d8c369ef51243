// run.json: serialising a RunRecord, signal names and the killed/crashed verdict.
#include "analyzer/run/run_record.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include "analyzer/output/json_writer.h"
#include "analyzer/output/text_format.h"

namespace gmemhook::analysis {

namespace fs = std::filesystem;

std::string run_record_json(const RunRecord& r) {
  std::string out;
  JsonWriter j(out);
  j.begin_object();
  j.key("command");
  j.begin_array();
  for (const std::string& arg : r.command) j.value(arg);
  j.end_array();
  j.field("cwd", r.cwd);
  j.field("library", r.library);
  j.key("pid").value(r.pid ? std::optional<int64_t>(*r.pid) : std::nullopt);
  j.key("exit_code").value(r.exit_code ? std::optional<int64_t>(*r.exit_code) : std::nullopt);
  j.key("signal").value(r.signal ? std::optional<int64_t>(*r.signal) : std::nullopt);
  j.key("signal_name").value(r.signal ? std::optional(signal_name(*r.signal)) : std::nullopt);
  j.field("start_time", utc_time(r.start_realtime_ns));
  j.key("end_time")
      .value(r.end_realtime_ns ? std::optional(utc_time(*r.end_realtime_ns)) : std::nullopt);
  j.end_object();
  return out;
}

void write_run_record(const fs::path& run_dir, const RunRecord& r) {
  const std::string text = run_record_json(r);
  const fs::path tmp = run_dir / "run.json.tmp";
  const fs::path final_path = run_dir / "run.json";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    throw std::runtime_error("cannot write " + tmp.string() + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      close(fd);
      throw std::runtime_error("cannot write " + tmp.string() + ": " + std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  close(fd);
  if (rename(tmp.c_str(), final_path.c_str()) != 0)
    throw std::runtime_error("cannot write " + final_path.string() + ": " + std::strerror(errno));
}

std::string signal_name(int sig) {
  // A table rather than sigabbrev_np(): that needs glibc 2.32 and the CLI is copied to older
  // machines.
  static const struct {
    int sig;
    const char* name;
  } kNames[] = {
      {SIGHUP, "SIGHUP"},       {SIGINT, "SIGINT"},       {SIGQUIT, "SIGQUIT"},
      {SIGILL, "SIGILL"},       {SIGTRAP, "SIGTRAP"},     {SIGABRT, "SIGABRT"},
      {SIGBUS, "SIGBUS"},       {SIGFPE, "SIGFPE"},       {SIGKILL, "SIGKILL"},
      {SIGUSR1, "SIGUSR1"},     {SIGSEGV, "SIGSEGV"},     {SIGUSR2, "SIGUSR2"},
      {SIGPIPE, "SIGPIPE"},     {SIGALRM, "SIGALRM"},     {SIGTERM, "SIGTERM"},
      {SIGSTKFLT, "SIGSTKFLT"}, {SIGCHLD, "SIGCHLD"},     {SIGCONT, "SIGCONT"},
      {SIGSTOP, "SIGSTOP"},     {SIGTSTP, "SIGTSTP"},     {SIGTTIN, "SIGTTIN"},
      {SIGTTOU, "SIGTTOU"},     {SIGURG, "SIGURG"},       {SIGXCPU, "SIGXCPU"},
      {SIGXFSZ, "SIGXFSZ"},     {SIGVTALRM, "SIGVTALRM"}, {SIGPROF, "SIGPROF"},
      {SIGWINCH, "SIGWINCH"},   {SIGIO, "SIGIO"},         {SIGPWR, "SIGPWR"},
      {SIGSYS, "SIGSYS"},
  };
  for (const auto& n : kNames)
    if (n.sig == sig) return n.name;
  if (sig >= SIGRTMIN && sig <= SIGRTMAX)
    return sig == SIGRTMIN ? "SIGRTMIN" : "SIGRTMIN+" + std::to_string(sig - SIGRTMIN);
  return "signal " + std::to_string(sig);
}

std::optional<std::string> signal_verdict(int sig) {
  switch (sig) {
    case SIGKILL:
    case SIGTERM:
    case SIGINT:
    case SIGHUP:
      return "killed";
    case SIGSEGV:
    case SIGBUS:
    case SIGABRT:
    case SIGFPE:
    case SIGILL:
      return "crashed";
    default:
      return std::nullopt;
  }
}

uint64_t realtime_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace gmemhook::analysis
