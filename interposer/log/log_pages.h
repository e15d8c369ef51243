// The log's next pages, mapped ahead of the writer by a background thread of the hook
// ("gmemhook-pages"), so that the kernel's work for a new page of a log file (ext4's
// page_mkwrite, zeroing the page: ~6 µs a page, ~11 ns of every event on the EPYC VM) is not
// done by the traced thread.
//
// A writer posts a window of its chunk (one request at a time); the thread maps it writable with
// MADV_POPULATE_WRITE. The hand-over that makes this safe: a writer never unmaps a chunk while
// the thread may still work on it (finish_page_request(wait = true) first), or the thread could
// populate whatever the program maps at that address next. Requests live in a fixed array of
// slots: no malloc, no lock, one futex wake a window. No thread (GMEMHOOK_PAGE_THREAD=0, a fork
// child, no slot free, the thread could not be started): the writer maps its pages itself.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gmemhook {

// A posted request: its slot and the generation of the slots it was posted in (a fork child
// starts a new one, and forgets what its parent had posted).
struct PageRequest {
  int slot = -1;
  uint32_t generation = 0;
  bool held() const { return slot >= 0; }
};

// Asks the thread to map [at, at + len) writable; starts it the first time. Returns a request
// not held when there is no thread to ask (the caller maps the pages itself).
PageRequest post_page_request(uint8_t* at, size_t len);

// Whether writers may ask the thread for pages: it runs or may still be started.
bool page_thread_usable();

enum class PageRequestState {
  Done,       // mapped; the request is over
  Cancelled,  // the thread had not begun: it never will; the request is over
  Working,    // the thread is mapping it now; the request stays held
};
// Ends `r` if the thread is done with it or has not begun (cancelled), else says it is under way.
// With `wait`, waits for a request under way to end (one madvise of a window): before the chunk
// is unmapped. `r` is no longer held unless Working is returned.
PageRequestState finish_page_request(PageRequest& r, bool wait);

// In a fork child: the thread did not survive fork. Requests copied from the parent are dropped,
// and the child maps its pages itself (starting a thread in a fork child is not safe).
void page_requests_fork_child();

}  // namespace gmemhook
