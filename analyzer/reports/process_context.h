// One process as the report driver hands it to a report: its log, its stacks (interned once for
// every pass, turned into frames only when a renderer shows them), and passes over its events —
// the replay set-up every report and each side of a diff would otherwise repeat.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/log/reader.h"
#include "analyzer/model/replay.h"
#include "analyzer/model/stack_interner.h"
#include "analyzer/output/report_model.h"
#include "analyzer/reports/report_common.h"
#include "analyzer/symbols/stack_resolver.h"

namespace gmemhook::analysis {

// The frames of a process's interned stacks, for a model to hand its renderers: resolved (and
// their symbolizer warnings raised) only for the stacks a renderer shows.
class FrameLookup {
 public:
  FrameLookup(StackResolver& resolver, const StackInterner& interned)
      : resolver_(&resolver), interned_(&interned) {}
  const std::vector<Frame>& operator()(uint32_t stack) const {
    return resolver_->resolve(*interned_, stack);
  }
  const StackResolver& resolver() const { return *resolver_; }

 private:
  StackResolver* resolver_;
  const StackInterner* interned_;
};

// The model a report fills from one process (summary, leaks, peak, fragmentation): the options it
// ran with, the process's header, the frames of its stacks, and its JSON object — the process's
// fields, then what the report found (members()), then the warnings.
class ProcessModel : public ReportModel {
 public:
  ProcessModel(const ReportOptions& options, ProcessHeader header, FrameLookup frames)
      : options_(options), h_(std::move(header)), frames_(frames) {}

  void json(JsonWriter& json) const final {
    json.begin_object();
    write_process_fields(json, h_);
    members(json);
    write_warnings(json, h_.facts, frames_.resolver());
    json.end_object();
  }

  const ReportOptions& options_;
  ProcessHeader h_;
  FrameLookup frames_;

 private:
  virtual void members(JsonWriter& json) const = 0;
};

class ProcessContext {
 public:
  // `only_apis`: --api (empty: every entry point).
  ProcessContext(ProcessReader& reader, const std::vector<std::string>& only_apis);
  ProcessContext(const ProcessContext&) = delete;
  ProcessContext& operator=(const ProcessContext&) = delete;

  ProcessReader& reader() { return reader_; }

  // One pass over the events: a new Replay watched by `observers`, which must be new too, so
  // nothing of an earlier pass carries over. A pass an observer cuts short (Replay::Stop) ends
  // there. The first pass must read every event: it tells how the process ended (header()).
  Replay pass(std::initializer_list<ReplayObserver*> observers = {});

  // After the first pass.
  const ProcessHeader& header() const { return *header_; }
  // Python frames are read back from the thread files, so stacks are resolved after a pass.
  FrameLookup frames() { return FrameLookup(resolver_, interned_); }
  const StackResolver& stacks() const { return resolver_; }

 private:
  ProcessReader& reader_;
  const std::vector<std::string>& only_apis_;
  StackInterner interned_;
  StackResolver resolver_;
  std::optional<ProcessHeader> header_;
};

}  // namespace gmemhook::analysis
