// Processes written event by event for the replay and report tests: each test states the calls a
// program made, in order, and so knows the true answers by construction.
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analyzer/model/graph_pool.h"
#include "analyzer/model/graph_tracker.h"
#include "analyzer/model/peak_sites.h"
#include "analyzer/model/pool_tracker.h"
#include "analyzer/model/replay.h"
#include "log_builder.h"
#include "sample_logs.h"

namespace gmemhook::test_logs {

class Scenario {
 public:
  static constexpr uint64_t kModuleBias = 0x400000;  // frames are offsets into /nonexistent/app

  Scenario(uint32_t pid, std::string exe_name = "app", std::string rank = "");

  // Interns `frames` (and Python frames) in thread `tid`'s file; returns the id to pass to events.
  uint32_t stack(uint64_t tid, const std::vector<uint64_t>& frames,
                 const std::vector<analysis::PyFrameRef>& python = {});
  // Describes a Python code object in thread `tid`'s file; returns its id there.
  uint32_t py_code(uint64_t tid, const analysis::PyCode& code);

  // Appends one event on thread `tid`. Sequence numbers count 1, 2, 3 ...; the event's time is
  // the process start plus `seq` milliseconds unless `time_ms` is given.
  format::Event& event(uint64_t tid, format::ApiId api, uint32_t stack = 0);
  void set_time_ms(uint64_t ms) { time_ms_ = ms; }
  // The time step the process file's header gives (format.h; 0: not said, as in older logs).
  void set_time_step_ns(uint64_t ns) { time_step_ns_ = ns; }
  // Where the module was loaded (kModuleBias unless set): frames are bias + offset.
  void set_module_bias(uint64_t bias) { module_bias_ = bias; }
  // A library loaded besides the executable (its path is all that is recorded).
  void add_library(const std::string& path) { libraries_.push_back(path); }

  // Common calls. `device` < -1 leaves the device field out (frees never carry one).
  void alloc(uint64_t tid, format::ApiId api, uint64_t address, uint64_t size, int32_t device = 0,
             uint32_t stack = 0, uint32_t result = 0);
  void free(uint64_t tid, format::ApiId api, uint64_t address, uint32_t stack = 0);
  void create(uint64_t tid, uint64_t handle, uint64_t size, int32_t device = 0, uint32_t stack = 0,
              bool host = false, uint32_t result = 0);
  void release(uint64_t tid, uint64_t handle);
  void reserve(uint64_t tid, uint64_t address, uint64_t size, int32_t device = 0);
  void address_free(uint64_t tid, uint64_t address, uint64_t size);
  void map(uint64_t tid, uint64_t address, uint64_t size, uint64_t handle);
  void unmap(uint64_t tid, uint64_t address, uint64_t size);
  // A graph call on exec `exec` (launch, upload, trim) that recorded the graph pool's figures
  // (format.h, "Graph pool totals"); returns its sequence number.
  uint64_t graph_pool_call(uint64_t tid, format::ApiId api, uint64_t exec, uint64_t used,
                           uint64_t reserved, int32_t device = 0);

  // What NVML said (an NvmlSample record in process.gmh), written in the order given.
  void nvml(const format::NvmlSamplePayload& sample) { nvml_.push_back(sample); }

  // Hands out `n` sequence numbers no file records: events the recorder could not write.
  void skip_events(uint64_t n) { seq_ += n; }
  uint64_t last_seq() const { return seq_; }
  // The logs, with an End record (exit status `status`) or without one (killed).
  ProcessLogs build(bool with_end, int64_t status = 0) const;
  // build() written as <run>/<exe>.<pid>/.
  std::filesystem::path write(const std::filesystem::path& run, bool with_end,
                              int64_t status = 0) const;

 private:
  uint32_t pid_;
  std::string exe_name_, rank_;
  struct ThreadRecords {
    std::vector<analysis::PyCode> codes;  // by id - 1, written first
    std::vector<std::pair<std::vector<uint64_t>, std::vector<analysis::PyFrameRef>>> stacks;
  };
  std::map<uint64_t, ThreadRecords> threads_;
  std::deque<std::pair<uint64_t, format::Event>> events_;  // (tid, event), in seq order
  uint64_t seq_ = 0;
  uint64_t time_ms_ = 0;
  uint64_t time_step_ns_ = 0;
  uint64_t module_bias_ = kModuleBias;
  std::vector<std::string> libraries_;
  std::vector<format::NvmlSamplePayload> nvml_;
};

// A process replayed in one pass, with every observer the model tests look at.
struct Replayed {
  analysis::StackInterner stacks;
  analysis::Replay replay{stacks};
  analysis::PoolTracker pools;
  analysis::GraphTracker graphs;
  analysis::GraphPoolFigures graph_pool;
  analysis::PeakSites peaks;
};
std::unique_ptr<Replayed> replay(const Scenario& s, bool with_end = true);

// The gmemhook binary run as a user would: exit status, stdout and stderr.
struct CliResult {
  int status = -1;
  std::string out, err;
};
CliResult run_cli(const std::string& args);
// Everything written to `f` (rewound first): what a report printed to a tmpfile().
std::string file_contents(std::FILE* f);

std::string quote(const std::filesystem::path& p);

}  // namespace gmemhook::test_logs
