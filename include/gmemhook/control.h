// What a traced program may call in libgmemhook.so, looked up at run time so that the program
// runs the same without the hook: e.g. from Python,
//   ctypes.CDLL(None).gmemhook_pause_events(1)   (AttributeError when the hook is not loaded)
// or from C with dlsym(RTLD_DEFAULT, "gmemhook_pause_events").
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

// For overhead benchmarks: with `paused` non-zero, calls pass straight through and no event is
// recorded, on any thread, until the next call with 0; a paused stretch costs what the hook
// costs loaded but idle. Such a run's reports are not the program's: what was allocated or
// freed while paused is missing, so frees show as unknown and allocations as leaks. Everything
// else carries on (the NVML sampler, the end of the log at exit). Returns whether events were
// paused before the call, or -1 while the hook is not set up (disabled, or before its start).
int gmemhook_pause_events(int paused);

#ifdef __cplusplus
}
#endif
