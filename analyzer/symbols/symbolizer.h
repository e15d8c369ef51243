// Turns recorded native return addresses into function, file:line and inlined frames, using the
// binaries (and their debug files) named by a process's module snapshot. Built on elfutils libdwfl.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyzer/symbols/frame.h"
#include "analyzer/log/records.h"

namespace gmemhook::analysis {

class Symbolizer {
 public:
  // modules: the latest module snapshot of one process (the process's own addresses, so one
  // Symbolizer per process). Binaries are opened lazily, on the first address that needs them.
  explicit Symbolizer(std::vector<Module> modules);
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // The frames for one recorded return address: innermost inlined frame first, the real function
  // last. Never throws and never returns an empty vector: an address it cannot name gives one
  // Frame with function nullopt and module/module_offset filled in where a module contains it.
  // The reference stays valid for the Symbolizer's lifetime.
  const std::vector<Frame>& symbolize(uint64_t return_address);

  // Produced so far, at most one per module: binary missing, binary changed since the run
  // (build-id differs), no debug info (names only, no file:line).
  const std::vector<std::string>& warnings() const { return warnings_; }
  // The modules (paths) of the "no debug info" warnings: reports say these in one line.
  const std::vector<std::string>& modules_without_debug_info() const { return no_debug_info_; }
  // The warning about `path` having no debug info, as warnings() words it.
  static std::string no_debug_info_warning(const std::string& path);

  // True for libgmemhook.so itself: its frames are the recorder's, never shown in reports.
  static bool is_recorder_module(const std::string& path);

 private:
  struct Binary;  // one module's opened ELF/DWARF, or why it could not be used
  struct Range {
    uint64_t start, end;  // absolute addresses of one PT_LOAD segment
    size_t module;
  };

  const Module* module_at(uint64_t address, size_t* index) const;
  Binary& binary(size_t index);
  std::vector<Frame> lookup(uint64_t return_address);

  std::vector<Module> modules_;
  std::vector<std::unique_ptr<Binary>> binaries_;  // parallel to modules_, opened on demand
  std::vector<Range> ranges_;                      // sorted by start
  // Keyed by the absolute address: within one process it names exactly one (module, offset).
  std::unordered_map<uint64_t, std::vector<Frame>> cache_;
  std::vector<std::string> warnings_;
  std::vector<std::string> no_debug_info_;
};

}  // namespace gmemhook::analysis
