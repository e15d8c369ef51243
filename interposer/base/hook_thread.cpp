// See hook_thread.h.
#include "interposer/base/hook_thread.h"

#include <pthread.h>
#include <signal.h>

namespace gmemhook {

bool start_hook_thread(void* (*body)(void*), size_t stack_bytes) {
  // The new thread inherits the creator's mask: block everything around the create only.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, stack_bytes);
  pthread_t thread;
  const bool ok = pthread_create(&thread, &attr, body, nullptr) == 0;
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

}  // namespace gmemhook
