// The thread that maps log pages ahead of their writers (see log_pages.h). Nothing here
// allocates or locks on the writer's side: a request is a slot of a fixed array, taken and handed
// back with compare-and-swap; the thread sleeps on a futex.
#include "interposer/log/log_pages.h"

#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <ctime>

#include "interposer/base/config.h"
#include "interposer/base/hook_thread.h"

namespace gmemhook {

namespace {
// One slot per thread writing at a time is enough; a writer that finds none maps its pages itself.
constexpr int kSlots = 64;
constexpr size_t kThreadStack = 64u << 10;  // madvise and futex only

// A slot's life: Idle -> Claimed (the writer fills it) -> Posted -> Working (the thread took it)
// -> Done -> Idle (the writer collected it). A writer cancels a Posted request (-> Idle); before
// unmapping it waits for a Working one, marking it Waited so the thread wakes it when done.
enum SlotState : uint32_t { kIdle, kClaimed, kPosted, kWorking, kWaited, kDone };

struct alignas(64) Slot {
  std::atomic<uint32_t> state{kIdle};  // also a futex word (kWaited)
  uint8_t* at = nullptr;
  size_t len = 0;
};
enum PagesThreadState : int { kNotStarted, kStarting, kRunning, kUnavailable };

// The requests and the thread that serves them.
struct PageThread {
  Slot slots[kSlots];
  std::atomic<uint32_t> generation{0};
  std::atomic<uint32_t> next_slot{0};  // where writers start looking for a free slot
  std::atomic<int> thread{kNotStarted};
  std::atomic<uint32_t> wake{0};  // futex word: bumped for every posted request
};
constinit PageThread g_pages;

long futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout = nullptr) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

// GMEMHOOK_TEST_PAGE_DELAY_US: a slow thread, for the tests of the hand-over.
void test_delay() {
  const long us = g_config.test_page_delay_us;
  if (us <= 0) return;
  timespec t{static_cast<time_t>(us / 1000000), (us % 1000000) * 1000};
  while (nanosleep(&t, &t) != 0) {
  }
}

// Takes each posted request and maps its pages; sleeps when there are none. Never ends: exit and
// exec end it with the process (it holds no lock, and touches nothing but the slots and the
// pages it was asked for, which their writer keeps mapped until it has the request back).
void* pages_main(void*) {
  prctl(PR_SET_NAME, "gmemhook-pages");  // what top, ps -L and py-spy show for it
  for (;;) {
    const uint32_t word = g_pages.wake.load(std::memory_order_acquire);
    bool took = false;
    for (Slot& s : g_pages.slots) {
      uint32_t posted = kPosted;
      if (!s.state.compare_exchange_strong(posted, kWorking, std::memory_order_acquire)) continue;
      took = true;
      test_delay();
      // Errors are ignored: the writer's own writes then fault the pages in. A kernel older than
      // 5.14 knows no MADV_POPULATE_WRITE (EINVAL): writers then map their pages themselves.
      if (madvise(s.at, s.len, MADV_POPULATE_WRITE) != 0 && errno == EINVAL)
        g_pages.thread.store(kUnavailable, std::memory_order_relaxed);
      if (s.state.exchange(kDone, std::memory_order_release) == kWaited)
        futex(&s.state, FUTEX_WAKE_PRIVATE, 1);
    }
    if (!took) futex(&g_pages.wake, FUTEX_WAIT_PRIVATE, word);
  }
  return nullptr;
}

bool start_thread() {
  int state = g_pages.thread.load(std::memory_order_acquire);
  if (state == kRunning) return true;
  if (state != kNotStarted || !g_pages.thread.compare_exchange_strong(state, kStarting))
    return false;
  const bool ok = start_hook_thread(pages_main, kThreadStack);
  g_pages.thread.store(ok ? kRunning : kUnavailable, std::memory_order_release);
  return ok;
}
}  // namespace

bool page_thread_usable() {
  return g_config.page_thread && g_pages.thread.load(std::memory_order_relaxed) != kUnavailable;
}

PageRequest post_page_request(uint8_t* at, size_t len) {
  if (!g_config.page_thread || !start_thread()) return {};
  const uint32_t first = g_pages.next_slot.fetch_add(1, std::memory_order_relaxed);
  for (uint32_t i = 0; i < kSlots; ++i) {
    const int n = static_cast<int>((first + i) % kSlots);
    Slot& s = g_pages.slots[n];
    uint32_t idle = kIdle;
    if (!s.state.compare_exchange_strong(idle, kClaimed, std::memory_order_acquire)) continue;
    s.at = at;
    s.len = len;
    s.state.store(kPosted, std::memory_order_release);
    g_pages.wake.fetch_add(1, std::memory_order_release);
    futex(&g_pages.wake, FUTEX_WAKE_PRIVATE, 1);
    return {n, g_pages.generation.load(std::memory_order_relaxed)};
  }
  return {};
}

PageRequestState finish_page_request(PageRequest& r, bool wait) {
  if (!r.held()) return PageRequestState::Cancelled;
  if (r.generation != g_pages.generation.load(std::memory_order_relaxed)) {
    r = {};  // posted before a fork, in the parent: this process has no thread working on it
    return PageRequestState::Cancelled;
  }
  Slot& s = g_pages.slots[r.slot];
  uint32_t state = kPosted;
  if (s.state.compare_exchange_strong(state, kIdle, std::memory_order_acquire)) {
    r = {};
    return PageRequestState::Cancelled;
  }
  while (state == kWorking || state == kWaited) {
    if (!wait) return PageRequestState::Working;
    if (state == kWorking &&
        !s.state.compare_exchange_strong(state, kWaited, std::memory_order_acquire))
      continue;  // it became Done meanwhile (state holds it)
    // Bounded by one madvise of a window; the timeout only guards against a lost wake.
    const timespec tick{0, 10 * 1000 * 1000};
    futex(&s.state, FUTEX_WAIT_PRIVATE, kWaited, &tick);
    state = s.state.load(std::memory_order_acquire);
  }
  if (state == kDone) s.state.store(kIdle, std::memory_order_release);
  r = {};
  return PageRequestState::Done;
}

void page_requests_fork_child() {
  // The slots stay as copied (a Working one would never be Done here): no request of an older
  // generation is looked at again, and the child posts none.
  g_pages.thread.store(kUnavailable, std::memory_order_relaxed);
  g_pages.generation.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace gmemhook
