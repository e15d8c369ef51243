// The hook's own threads (the NVML sampler, the log pages thread): started the one way.
#pragma once

#include <cstddef>

namespace gmemhook {

// Starts a detached thread running `body`, with a stack of `stack_bytes` and every signal
// blocked (the program's signals must go to the program's own threads). Returns whether it
// started. No malloc of ours: callable from inside a hook.
bool start_hook_thread(void* (*body)(void*), size_t stack_bytes);

}  // namespace gmemhook
