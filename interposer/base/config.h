// Settings read from the environment once, in the library constructor (see README "Environment").
#pragma once

#include <climits>
#include <cstddef>

namespace gmemhook {

struct alignas(64) Config {
  bool disabled = false;     // GMEMHOOK_DISABLE=1: pass every call through, record nothing
  int depth = 64;            // GMEMHOOK_DEPTH: native frames per stack (0 = no stacks)
  bool free_stacks = false;  // GMEMHOOK_FREE_STACKS=1: also unwind on frees/unmaps/releases
  bool quiet = false;        // GMEMHOOK_QUIET=1: no summary line on stderr at exit
  bool python = true;        // GMEMHOOK_PYTHON=0: no Python frames in stacks
  // GMEMHOOK_PYTHON_FORCE_UNSUPPORTED=1: treat a supported interpreter as unsupported (tests the
  // native-only fallback and its note on any machine).
  bool python_force_unsupported = false;
  bool nvml = true;  // GMEMHOOK_NVML=0: no nvidia-smi figures (NVML samples) in the log
  // GMEMHOOK_NVML_INTERVAL_MS: time between periodic NVML samples. 100 ms resolves the phases of
  // a training step's memory at about ten cheap driver queries a second (nvidia-smi's own loop
  // is 1 s); high-water marks in between are caught by the peak checks after allocations.
  int nvml_interval_ms = 100;
  // GMEMHOOK_TEST_DELAY_RECORD_US=N: the recorder waits N µs inside each record (a window for
  // tests to deliver a signal to a thread in the middle of recording).
  long test_delay_record_us = 0;
  // GMEMHOOK_STACK_STATS=1: one line on stderr at exit with the time stack capture took, native
  // and Python apart, and each recorded event (capture_stats.h). GMEMHOOK_STACK_STATS=events:
  // the events' time only, without the capture's own timing and counting in it (what recording
  // costs, as little disturbed by the measuring as may be).
  bool stack_stats = false;  // the capture's figures
  bool event_stats = false;  // the events' time
  // GMEMHOOK_FAST_UNWIND=0: every stack through libunwind, never the fast unwinder (an escape
  // hatch, and the "before" of bench/run_hook_bench.sh's comparison).
  bool fast_unwind = true;
  // GMEMHOOK_FULL_NATIVE_STACKS=1: an event with Python frames keeps its whole native stack. By
  // default its native walk ends at the innermost CPython interpreter-loop frame: the Python
  // frames say who called from there, and the interpreter's own frames above it were about half
  // of a PyTorch stack's frames and of its unwinding time.
  bool full_native_stacks = false;
  // GMEMHOOK_RECENT_WALKS=0: the fast unwinder walks every stack frame by frame instead of first
  // looking for it among the thread's recent walks (for measuring what they save; see README
  // "Performance").
  bool recent_walks = true;
  // GMEMHOOK_TSC=0: every event time from clock_gettime, not from the time-stamp counter
  // (event_time.h; an escape hatch, and the "before" of measuring what the counter saves).
  bool tsc = true;
  // Event times from CLOCK_MONOTONIC_COARSE, the kernel's clock as of its last tick (its
  // resolution, 1–4 ms), by default; GMEMHOOK_TIME=precise: to the ns (event_time.h; the counter
  // read and its encoding were ~27 ns of the ~70 an event cost on the GPU machine's host). The
  // events' order is their sequence numbers' either way.
  bool coarse_time = true;
  // Worked out by load_config from those above: whether an allocation, or a free, is recorded
  // the plain way, with no setting asking for more (the events' timing, a test delay, the
  // capture's counts; a free's stack) and, for an allocation, with a native stack taken by the
  // fast unwinder. One test on every event instead of four or five, each a load and a branch.
  bool plain_allocations = true;
  bool plain_frees = true;

  // The settings below are read once; the paths last. Every event reads those above, which then
  // share one cache line (ahead of the 4 KiB paths, which would push the stack settings and the
  // test delay onto a second one).
  // GMEMHOOK_TEST_DISK_FULL_AFTER=N: the log writer acts as if the disk filled up after N chunks
  // of this process (tests the write-failure path where no small file system can be mounted).
  long test_disk_full_after = -1;
  // GMEMHOOK_PAGE_THREAD=0: each thread maps its log's new pages itself, without the
  // "gmemhook-pages" thread (log_pages.h; for measuring what the thread takes off the program's).
  bool page_thread = true;
  // GMEMHOOK_TEST_PAGE_DELAY_US=N: that thread waits N µs after taking each request, before
  // mapping its pages (tests of the hand-over before a chunk is unmapped).
  long test_page_delay_us = 0;
  // GMEMHOOK_TEST_PROCESS_CHUNK_KIB=N: process.gmh's chunks are N KiB instead of 64 (tests that
  // fill process.gmh with the records of a short run: its module maps).
  long test_process_chunk_kib = 0;
  // GMEMHOOK_TEST_DELAY_OPEN_MS=N: the thread opening the process log takes N ms longer, and
  // GMEMHOOK_TEST_OPEN_WAIT_MS=M: other threads wait at most M ms for it (default 10 s).
  long test_delay_open_ms = 0;
  long open_wait_ms = 10000;
  char out_dir[PATH_MAX] = {};  // GMEMHOOK_OUT: run directory; empty = the working directory
  // GMEMHOOK_TEST_SWAP_DIR=DIR: right after making the process directory, the hook renames it
  // and puts a symlink to DIR in its place, as another user could (tests that files still land
  // in the directory made, never in DIR).
  char test_swap_dir[PATH_MAX] = {};
};

// The settings every event reads stay on the struct's first cache line.
static_assert(offsetof(Config, plain_frees) < 64);

inline constexpr int kMaxDepth = 256;

// Filled by load_config() before any hook records; read-only afterwards. Hidden in the
// declaration too: -fvisibility=hidden covers only definitions, and a plain extern is reached
// through its GOT entry, an address load before each of the event path's reads.
extern Config g_config __attribute__((visibility("hidden")));
void load_config();
// Prints what load_config() found wrong with the environment, once; malloc-free.
void print_config_warnings();

}  // namespace gmemhook
