// fork + execvp of the traced command, signal forwarding while it runs, and exit_like() after.
#include "analyzer/run/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace gmemhook::analysis {

namespace {

volatile sig_atomic_t g_child_pid = 0;

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP};
// Like system(3): the terminal delivers Ctrl-\ to the child; gmemhook must outlive it to write
// run.json and the summary.
constexpr int kIgnoredWhileRunning[] = {SIGQUIT};

struct sigaction g_saved[NSIG];

void forward_signal(int sig, siginfo_t* info, void*) {
  // SI_KERNEL: sent by the terminal to the whole foreground process group, which includes the
  // child; passing it on would deliver a second Ctrl-C (Python would raise KeyboardInterrupt again,
  // in the middle of its cleanup).
  if (info && info->si_code == SI_KERNEL) return;
  if (g_child_pid > 0) kill(g_child_pid, sig);
}

void block_signals(sigset_t* old) {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kForwarded) sigaddset(&set, s);
  for (int s : kIgnoredWhileRunning) sigaddset(&set, s);
  sigprocmask(SIG_BLOCK, &set, old);
}

void install_handlers() {
  struct sigaction sa {};
  sa.sa_sigaction = forward_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int s : kForwarded) sigaction(s, &sa, &g_saved[s]);
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  for (int s : kIgnoredWhileRunning) sigaction(s, &ign, &g_saved[s]);
}

void restore_handlers() {
  for (int s : kForwarded) sigaction(s, &g_saved[s], nullptr);
  for (int s : kIgnoredWhileRunning) sigaction(s, &g_saved[s], nullptr);
  g_child_pid = 0;
}

// Only async-signal-safe calls from here on: the child of a fork.
[[noreturn]] void exec_child(char* const* argv, char* const* envp, const sigset_t& mask,
                             int report_fd) {
  sigprocmask(SIG_SETMASK, &mask, nullptr);
  execvpe(argv[0], argv, envp);
  int err = errno;
  // The parent reads errno from the pipe; the write end closes itself on a successful exec.
  ssize_t ignored = write(report_fd, &err, sizeof err);
  (void)ignored;
  _exit(127);
}

}  // namespace

ChildProcess ChildProcess::start(const std::vector<std::string>& argv,
                                 const std::vector<std::string>& env) {
  // Pointers are built before fork(): the child must not allocate.
  std::vector<char*> args, envp;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  std::fflush(nullptr);  // or buffered output would be written twice

  // Signals stay blocked from before fork() until the handlers know the child's pid.
  sigset_t old_mask;
  block_signals(&old_mask);
  pid_t pid = fork();
  if (pid == 0) {
    close(report[0]);
    exec_child(args.data(), envp.data(), old_mask, report[1]);
  }
  int fork_errno = errno;
  close(report[1]);
  ChildProcess c;
  if (pid < 0) {
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    close(report[0]);
    throw std::runtime_error(std::string("fork failed: ") + std::strerror(fork_errno));
  }
  c.pid_ = pid;
  g_child_pid = pid;
  install_handlers();
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);

  int err = 0;
  ssize_t n;
  do n = read(report[0], &err, sizeof err);
  while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n == static_cast<ssize_t>(sizeof err)) {
    c.exec_errno_ = err;
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    restore_handlers();
  }
  return c;
}

ChildOutcome ChildProcess::wait() {
  ChildOutcome out;
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) {
      restore_handlers();
      throw std::runtime_error(std::string("waitpid failed: ") + std::strerror(errno));
    }
  }
  restore_handlers();
  if (WIFSIGNALED(status))
    out.signal = WTERMSIG(status);
  else
    out.exit_code = WEXITSTATUS(status);
  return out;
}

void exit_like(const ChildOutcome& outcome) {
  std::fflush(nullptr);
  if (outcome.signal > 0) {
    int sig = outcome.signal;
    // The child already dumped its core if it was going to; one of gmemhook would only mislead.
    struct rlimit no_core {
      0, 0
    };
    setrlimit(RLIMIT_CORE, &no_core);
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, nullptr);
    raise(sig);
    // Only reached if the signal's default action is not to terminate, which a signal that
    // ended the child always has; kept so the function never returns.
    _exit(128 + sig);
  }
  std::exit(outcome.exit_code);
}

}  // namespace gmemhook::analysis
