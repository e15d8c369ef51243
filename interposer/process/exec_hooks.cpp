// The exec family: an image replaced by exec ends its log with how = Exec, so a report
// says "replaced by exec" rather than "killed or crashed". glibc's exec functions call its
// internal execve directly, so each public one is wrapped, not execve alone.
// <unistd.h> is left out on purpose: it declares `arg` nonnull, and a program may still pass
// a null argv[0]; these definitions must handle what callers really do.
#include <dlfcn.h>

#include <cerrno>
#include <cstdarg>
#include <cstddef>

extern "C" char** environ;

#include "interposer/process/lifecycle.h"

namespace gmemhook {
namespace {

using ExecveFn = int (*)(const char*, char* const[], char* const[]);
using ExecvFn = int (*)(const char*, char* const[]);
using FexecveFn = int (*)(int, char* const[], char* const[]);

// glibc's definitions, the ones after ours; resolved in the constructor.
struct RealExec {
  ExecveFn execve = nullptr, execvpe = nullptr;
  ExecvFn execv = nullptr, execvp = nullptr;
  FexecveFn fexecve = nullptr;
};
constinit RealExec g_real_exec;

// Keeps errno as the failed exec left it: the caller reads it.
struct AfterFailedExec {
  ~AfterFailedExec() {
    int saved = errno;
    exec_failed();
    errno = saved;
  }
};

// 1 + the variadic arguments before the terminating null pointer (`first` itself is not null).
size_t count_args(va_list ap) {
  size_t n = 1;
  while (va_arg(ap, char*)) ++n;
  return n;
}

}  // namespace

void init_exec_hooks() {
  // Through the dlsym trampoline with RTLD_NEXT: glibc's definitions, the ones after ours.
  g_real_exec.execve = reinterpret_cast<ExecveFn>(dlsym(RTLD_NEXT, "execve"));
  g_real_exec.execvpe = reinterpret_cast<ExecveFn>(dlsym(RTLD_NEXT, "execvpe"));
  g_real_exec.execv = reinterpret_cast<ExecvFn>(dlsym(RTLD_NEXT, "execv"));
  g_real_exec.execvp = reinterpret_cast<ExecvFn>(dlsym(RTLD_NEXT, "execvp"));
  g_real_exec.fexecve = reinterpret_cast<FexecveFn>(dlsym(RTLD_NEXT, "fexecve"));
}

}  // namespace gmemhook

#define GMEMHOOK_EXPORT extern "C" __attribute__((visibility("default")))

namespace gm = gmemhook;

GMEMHOOK_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  gm::before_exec();
  gm::AfterFailedExec after;
  if (!gm::g_real_exec.execve) return errno = ENOSYS, -1;
  return gm::g_real_exec.execve(path, argv, envp);
}

GMEMHOOK_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  gm::before_exec();
  gm::AfterFailedExec after;
  if (!gm::g_real_exec.execvpe) return errno = ENOSYS, -1;
  return gm::g_real_exec.execvpe(file, argv, envp);
}

GMEMHOOK_EXPORT int execv(const char* path, char* const argv[]) {
  gm::before_exec();
  gm::AfterFailedExec after;
  if (!gm::g_real_exec.execv) return errno = ENOSYS, -1;
  return gm::g_real_exec.execv(path, argv);
}

GMEMHOOK_EXPORT int execvp(const char* file, char* const argv[]) {
  gm::before_exec();
  gm::AfterFailedExec after;
  if (!gm::g_real_exec.execvp) return errno = ENOSYS, -1;
  return gm::g_real_exec.execvp(file, argv);
}

GMEMHOOK_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
  gm::before_exec();
  gm::AfterFailedExec after;
  if (!gm::g_real_exec.fexecve) return errno = ENOSYS, -1;
  return gm::g_real_exec.fexecve(fd, argv, envp);
}

// The list forms gather their arguments on the stack (no malloc) and go through the forms above.
#define GMEMHOOK_COLLECT_ARGS(FIRST, WITH_ENV)                  \
  va_list ap;                                                   \
  va_start(ap, FIRST);                                          \
  size_t n = FIRST ? gm::count_args(ap) : 0;                    \
  va_end(ap);                                                   \
  char* args[n + 1];                                            \
  char* const* env = environ;                                   \
  va_start(ap, FIRST);                                          \
  if (n) {                                                      \
    args[0] = const_cast<char*>(FIRST);                         \
    for (size_t i = 1; i < n; ++i) args[i] = va_arg(ap, char*); \
    (void)va_arg(ap, char*); /* the terminating null */         \
  }                                                             \
  args[n] = nullptr;                                            \
  if (WITH_ENV) env = va_arg(ap, char* const*);                 \
  va_end(ap);

GMEMHOOK_EXPORT int execl(const char* path, const char* arg, ...) {
  GMEMHOOK_COLLECT_ARGS(arg, false)
  (void)env;
  return execv(path, args);
}

GMEMHOOK_EXPORT int execlp(const char* file, const char* arg, ...) {
  GMEMHOOK_COLLECT_ARGS(arg, false)
  (void)env;
  return execvp(file, args);
}

GMEMHOOK_EXPORT int execle(const char* path, const char* arg, ...) {
  GMEMHOOK_COLLECT_ARGS(arg, true)
  return execve(path, args, env);
}
#undef GMEMHOOK_COLLECT_ARGS
