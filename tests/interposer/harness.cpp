// Test harness: child processes under the hook, and logs read back with the analyzer's reader.
#include "harness.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace gmemhook::test {

namespace fs = std::filesystem;

namespace {
// The gpu-labelled run of these tests (and scripts/gpu-check.sh, which carries the binaries to a
// GPU machine) points them elsewhere: GMEMHOOK_TEST_CUDA_LIB_DIR=system means the real CUDA
// libraries the dynamic loader finds, instead of the simulated device.
std::string env_or(const char* name, const char* fallback) {
  const char* v = getenv(name);
  return v && *v ? v : fallback;
}
}  // namespace

std::string scenario_path() { return env_or("GMEMHOOK_TEST_SCENARIO", GMEMHOOK_TEST_SCENARIO); }
std::string hook_path() { return env_or("GMEMHOOK_TEST_HOOK", GMEMHOOK_TEST_HOOK); }
bool on_real_gpu() { return env_or("GMEMHOOK_TEST_CUDA_LIB_DIR", "") == "system"; }

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

fs::path temp_dir(const std::string& name) {
  static int counter = 0;
  fs::path p = fs::temp_directory_path() / ("gmemhook-test-" + std::to_string(getpid()) + "-" +
                                            std::to_string(counter++) + "-" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

std::map<std::string, std::string> traced_env(const fs::path& out_dir) {
  std::string libs = env_or("GMEMHOOK_TEST_CUDA_LIB_DIR", GMEMHOOK_TEST_FAKECUDA_DIR);
  std::map<std::string, std::string> env{{"LD_PRELOAD", hook_path()},
                                         {"GMEMHOOK_OUT", out_dir.string()}};
  if (libs != "system") env["LD_LIBRARY_PATH"] = libs;
  return env;
}

TracedProcess::TracedProcess(const std::vector<std::string>& argv,
                             const std::map<std::string, std::string>& env) {
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) merged[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (auto& [k, v] : env) {
    if (v.empty())
      merged.erase(k);
    else
      merged[k] = v;
  }
  std::vector<std::string> env_strings;
  for (auto& [k, v] : merged) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  static int counter = 0;
  err_path_ = fs::temp_directory_path() /
              ("gmemhook-stderr-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
  int pipefd[2];
  if (pipe(pipefd) != 0) throw std::runtime_error("pipe");
  pid_ = fork();
  if (pid_ == 0) {
    dup2(pipefd[1], 1);
    int err = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(err, 2);
    close(pipefd[0]);
    close(pipefd[1]);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  close(pipefd[1]);
  out_fd_ = pipefd[0];
  deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(240);
}

TracedProcess::~TracedProcess() {
  if (status_ < 0 && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) close(out_fd_);
  std::error_code ec;
  fs::remove(err_path_, ec);
}

std::optional<std::string> TracedProcess::read_line() {
  for (;;) {
    auto nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    // Never wait forever on a child that hangs (a deadlock is a failure, not a stuck test).
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline_ - std::chrono::steady_clock::now());
    pollfd pfd{out_fd_, POLLIN, 0};
    if (left.count() <= 0 || poll(&pfd, 1, static_cast<int>(left.count())) == 0) {
      ::kill(pid_, SIGKILL);
      return std::nullopt;
    }
    char buf[4096];
    ssize_t n = read(out_fd_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (buffer_.empty()) return std::nullopt;
      std::string rest = buffer_;
      buffer_.clear();
      return rest;
    }
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

std::string TracedProcess::read_all() {
  std::string all;
  while (auto l = read_line()) all += *l + "\n";
  return all;
}

void TracedProcess::kill(int sig) { ::kill(pid_, sig); }

int TracedProcess::wait(int timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int st = 0;
  for (;;) {
    pid_t r = waitpid(pid_, &st, WNOHANG);
    if (r == pid_) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, &st, 0);
      status_ = st;
      throw std::runtime_error("child did not finish within the timeout (deadlock?)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  status_ = st;
  return st;
}

std::string TracedProcess::stderr_text() const {
  std::ifstream in(err_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool RunResult::exited(int code) const { return WIFEXITED(status) && WEXITSTATUS(status) == code; }
bool RunResult::signaled(int sig) const { return WIFSIGNALED(status) && WTERMSIG(status) == sig; }

RunResult run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
  TracedProcess p(argv, env);
  RunResult r;
  r.out = p.read_all();
  r.status = p.wait();
  r.err = p.stderr_text();
  return r;
}

std::vector<fs::path> process_dirs(const fs::path& run) { return analysis::find_process_dirs(run); }

LoggedProcess read_process(const fs::path& dir) {
  LoggedProcess out;
  out.dir = dir;
  auto reader = analysis::ProcessReader::open(dir);
  out.info = reader.info();
  out.end = reader.end();
  out.start_ns = reader.start_ns();
  out.time_step_ns = reader.time_step_ns();
  if (!reader.module_snapshots().empty()) out.modules = reader.module_snapshots().back().modules;
  out.thread_files = reader.thread_count();
  for (const auto& n : reader.notes()) out.notes.push_back(n.text);
  out.nvml = reader.nvml_samples();
  reader.for_each_event([&](const format::Event& ev, const analysis::ThreadFileReader& t) {
    const format::ApiInfo* api = format::find_api(ev.api);
    LoggedEvent le{
        api ? api->name : "?", api ? api->kind : format::EventKind::Alloc, ev, t.tid(), {}};
    auto frames = t.stack(ev.stack_id);
    if (ev.stack_id) le.stack.assign(frames.begin(), frames.end());
    out.events.push_back(std::move(le));
  });
  for (size_t i = 0; i < reader.thread_count(); ++i)
    out.committed_bytes += reader.thread(i).data_end();
  return out;
}

const analysis::Module* module_of(const LoggedProcess& p, uint64_t address) {
  for (const auto& m : p.modules)
    for (const auto& s : m.segments)
      if (address >= m.load_bias + s.vaddr && address < m.load_bias + s.vaddr + s.memsz) return &m;
  return nullptr;
}

}  // namespace gmemhook::test
