// run.json: serialising a RunRecord, signal names and the killed/crashed verdict.
#include "analyzer/run/run_record.h"

#include <signal.h>

#include <ctime>

#include "analyzer/output/json_writer.h"
#include "analyzer/output/private_file.h"
#include "analyzer/output/text_format.h"
#include "analyzer/run/new_run_dir.h"

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
  const RunDirHandle dir(run_dir);
  write_private_file_at(dir.fd(), run_dir, "run.json", run_record_json(r));
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
