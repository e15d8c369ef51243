// gmemhook_pause_events (include/gmemhook/control.h): a program's switch for the recording of
// events, so that a benchmark can time the same process with recording on and off in turns (on
// the GPU machine a whole process runs fast or ~1.4x slower for its life, far more than the few
// per cent being measured between processes).
#include "gmemhook/control.h"
#include "interposer/record/recorder.h"

extern "C" __attribute__((visibility("default"))) int gmemhook_pause_events(int paused) {
  using namespace gmemhook;
  if (!recording_enabled()) return -1;
  const uint8_t before =
      paused ? g_event_globals.recording.fetch_or(kRecordingPaused, std::memory_order_relaxed)
             : g_event_globals.recording.fetch_and(static_cast<uint8_t>(~kRecordingPaused),
                                                   std::memory_order_relaxed);
  return (before & kRecordingPaused) != 0;
}
