// Passes over one process for a report (see process_context.h).
#include "analyzer/reports/process_context.h"

namespace gmemhook::analysis {

ProcessContext::ProcessContext(ProcessReader& reader, const std::vector<std::string>& only_apis)
    : reader_(reader), only_apis_(only_apis), resolver_(reader) {
  interned_.set_epochs(&resolver_.epochs());
}

Replay ProcessContext::pass(std::initializer_list<ReplayObserver*> observers) {
  Replay replay(interned_, only_apis_);
  for (ReplayObserver* o : observers) replay.observe(*o);
  try {
    reader_.read_events(replay);
    replay.finish();
  } catch (const Replay::Stop&) {
    // An observer has every moment it wanted: the rest of the log cannot change them.
  }
  if (!header_) header_ = describe_process(reader_, replay);
  return replay;
}

}  // namespace gmemhook::analysis
