// Terminal handling for the full-screen view: raw mode, the alternate screen, keys, and a redraw
// that fits the window.
#include "analyzer/live/top_screen.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <string>

#include "analyzer/live/clocks.h"
#include "analyzer/live/top_render.h"
#include "analyzer/log/name_table.h"
#include "analyzer/output/terminal_text.h"
#include "analyzer/output/text_format.h"

namespace gmemhook::analysis {

namespace {

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

// Raw input and the alternate screen while it lives; the terminal as it was afterwards.
class RawTerminal {
 public:
  RawTerminal() {
    if (tcgetattr(STDIN_FILENO, &saved_) == 0) {
      termios raw = saved_;
      raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
      raw.c_cc[VMIN] = 0;
      raw.c_cc[VTIME] = 0;
      restore_ = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    }
    write_out("\x1b[?1049h\x1b[?25l");  // alternate screen, cursor hidden
  }
  ~RawTerminal() {
    write_out("\x1b[?25h\x1b[?1049l");
    if (restore_) tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }
  static void write_out(const std::string& s) {
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  }

 private:
  termios saved_{};
  bool restore_ = false;
};

struct Selection {
  size_t process = 0, device = 0;
  bool frozen = false;
  SortBy sort = SortBy::Bytes;
};

const char* sort_name(SortBy s) { return name_in(s, {"live bytes", "growth", "count"}); }

// Waits up to `ms` for a key; 0 when none came. Arrow keys come as ESC [ A..D.
int read_key(int ms) {
  pollfd p{STDIN_FILENO, POLLIN, 0};
  if (poll(&p, 1, ms) <= 0) return 0;
  unsigned char c[3] = {};
  const ssize_t n = read(STDIN_FILENO, c, sizeof c);
  if (n <= 0) return 0;
  if (n == 3 && c[0] == 0x1b && c[1] == '[') return 0x100 + c[2];
  return c[0];
}

std::string screen(const TopView& view, const Selection& sel, const WatchOptions& options) {
  winsize ws{};
  const bool sized = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0;
  const size_t rows = sized ? ws.ws_row : 24, cols = sized ? ws.ws_col : 100;
  std::string body = fmt::format(
      "keys: p/P or \u2191\u2193 process  d/D or \u2190\u2192 device  s sort ({})  f freeze{}  "
      "q quit\n",
      sort_name(sel.sort), sel.frozen ? " [FROZEN]" : "");
  // Every process in one line each, the selected one marked; then the selected one in full.
  for (size_t i = 0; i < view.processes.size(); ++i) {
    const ProcessView& p = view.processes[i];
    uint64_t live = 0, peak = 0;
    for (const DeviceView& d : p.devices) {
      live += d.live_bytes;
      peak += d.peak_bytes;
    }
    body += fmt::format("{} pid {:<8} {:<16} {:<6} {:<9} live {:>10}  peak {:>10}\n",
                        i == sel.process ? '>' : ' ', p.pid, p.exe.substr(0, 16),
                        p.rank.empty() ? "-" : p.rank, to_string(p.state), human_size(live),
                        human_size(peak));
  }
  TextLayout layout;
  layout.hint = false;
  layout.spark_width = cols > 40 ? std::min<size_t>(cols - 24, 100) : 16;
  layout.process = sel.process;
  layout.device = sel.device;
  (void)options;
  std::string detail = top_text(view, layout);
  body += detail.substr(detail.find('\n') + 1);  // the run's heading is the screen's title
  body = terminal_lines(body);                   // the process lines above carry executables' names
  std::string out = "\x1b[H\x1b[2J";
  out += fmt::format("\x1b[7m{:<{}}\x1b[0m\n",
                     terminal_text(fmt::format("gmemhook top {}", view.run)).substr(0, cols), cols);
  size_t line = 1, start = 0;
  while (start < body.size() && line + 1 < rows) {
    size_t end = body.find('\n', start);
    if (end == std::string::npos) end = body.size();
    out += body.substr(start, end - start) + "\x1b[K\n";  // long lines: the terminal clips
    start = end + 1;
    ++line;
  }
  return out;
}

}  // namespace

int run_screen(RunWatch& watch, WatchOptions options, double interval_s) {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  RawTerminal terminal;
  Selection sel;
  TopView view;
  const int interval_ms = std::max(10, static_cast<int>(interval_s * 1000));
  uint64_t next_refresh = 0;
  while (!g_stop) {
    const uint64_t now = monotonic_now_ns();
    if (!sel.frozen && now >= next_refresh) {
      options.sort = sel.sort;
      watch.update(now, options);
      view = watch.view(now, options);
      next_refresh = now + static_cast<uint64_t>(interval_ms) * 1'000'000ull;
    }
    if (!view.processes.empty()) {
      sel.process = std::min(sel.process, view.processes.size() - 1);
      const size_t devices = view.processes[sel.process].devices.size();
      sel.device = devices ? std::min(sel.device, devices - 1) : 0;
    }
    RawTerminal::write_out(screen(view, sel, options));
    const uint64_t wait_ns =
        next_refresh > monotonic_now_ns() ? next_refresh - monotonic_now_ns() : 0;
    const int key = read_key(sel.frozen ? interval_ms : static_cast<int>(wait_ns / 1'000'000));
    const size_t processes = std::max<size_t>(view.processes.size(), 1);
    const size_t devices = view.processes.empty()
                               ? 1
                               : std::max<size_t>(view.processes[sel.process].devices.size(), 1);
    switch (key) {
      case 'q':
      case 'Q':
        g_stop = 1;
        break;
      case 'p':
      case '\t':
      case 0x100 + 'B':
        sel.process = (sel.process + 1) % processes;
        sel.device = 0;
        break;
      case 'P':
      case 0x100 + 'A':
        sel.process = (sel.process + processes - 1) % processes;
        sel.device = 0;
        break;
      case 'd':
      case 0x100 + 'C':
        sel.device = (sel.device + 1) % devices;
        break;
      case 'D':
      case 0x100 + 'D':
        sel.device = (sel.device + devices - 1) % devices;
        break;
      case 's':
      case 'S':
        sel.sort = static_cast<SortBy>((static_cast<int>(sel.sort) + 1) % 3);
        for (ProcessView& p : view.processes)
          for (DeviceView& d : p.devices) sort_site_lines(d.sites, sel.sort);
        break;
      case 'f':
      case 'F':
      case ' ':
        sel.frozen = !sel.frozen;
        break;
      default:
        break;
    }
  }
  return 0;
}

}  // namespace gmemhook::analysis
