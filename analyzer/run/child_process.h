// Running the traced command as a shell would: fork + execvp with stdin/stdout/stderr and the
// process group inherited, signals aimed at gmemhook passed on, and the child's fate handed back
// so gmemhook can end the same way.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace gmemhook::analysis {

// How the command ended: exactly one of exit_code / signal is set once it has been waited for.
struct ChildOutcome {
  int exit_code = -1;  // WEXITSTATUS, or -1 when it died by a signal
  int signal = 0;      // WTERMSIG, or 0 when it exited
};

class ChildProcess {
 public:
  // Starts argv[0] (searched in PATH) with `env` as its whole environment. Returns once the exec
  // has succeeded or failed: see exec_errno(). While the child runs, SIGINT/SIGTERM/SIGHUP sent to
  // gmemhook by another process are passed on to it; the terminal's Ctrl-C and Ctrl-\ already reach
  // it through the shared process group and are not sent twice.
  static ChildProcess start(const std::vector<std::string>& argv,
                            const std::vector<std::string>& env);

  pid_t pid() const { return pid_; }
  // 0 when the command is running; else why execvp failed (ENOENT: not found), and the child is
  // already reaped.
  int exec_errno() const { return exec_errno_; }

  // Waits for the child and puts the signal dispositions back.
  ChildOutcome wait();

 private:
  pid_t pid_ = -1;
  int exec_errno_ = 0;
};

// Ends gmemhook the way the child ended: the same exit code, or death by the same signal (so a
// shell reports 128+N and "Segmentation fault" for the traced program, not for gmemhook).
[[noreturn]] void exit_like(const ChildOutcome& outcome);

}  // namespace gmemhook::analysis
