// Reading run.json with limits and checking it key by key (see run_json.h).
#include "analyzer/reports/run_json.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <variant>

namespace gmemhook::analysis {

namespace {

using nlohmann::json;

using Field =
    std::variant<std::optional<std::vector<std::string>> RunJson::*,
                 std::optional<std::string> RunJson::*, std::optional<int64_t> RunJson::*>;

// What `gmemhook run` writes (run_record.cpp), in its order.
const struct {
  const char* name;
  Field field;
} kKeys[] = {
    {"command", &RunJson::command},         {"cwd", &RunJson::cwd},
    {"library", &RunJson::library},         {"pid", &RunJson::pid},
    {"exit_code", &RunJson::exit_code},     {"signal", &RunJson::signal},
    {"signal_name", &RunJson::signal_name}, {"start_time", &RunJson::start_time},
    {"end_time", &RunJson::end_time},
};

// JsonWriter writes a byte that is not UTF-8 (an argument in Latin-1) as a lone surrogate \udcXX,
// which nlohmann-json refuses: such escapes become U+FFFD, as a browser would show them anyway.
// A surrogate pair (an emoji written escaped) stays as it is.
std::string lone_surrogates_replaced(std::string_view text) {
  std::string out(text);
  bool after_high = false;
  for (size_t i = 0; i < out.size();) {
    uint32_t unit = 0;
    if (out[i] != '\\' || i + 6 > out.size() || out[i + 1] != 'u' ||
        std::from_chars(out.data() + i + 2, out.data() + i + 6, unit, 16).ptr !=
            out.data() + i + 6) {
      after_high = false;
      i += out[i] == '\\' ? 2 : 1;  // an escaped character is never the start of an escape
      continue;
    }
    if (unit >= 0xdc00 && unit <= 0xdfff && !after_high) out.replace(i + 2, 4, "fffd");
    after_high = unit >= 0xd800 && unit <= 0xdbff;
    i += 6;
  }
  return out;
}

// Sets `field` from `value` when it has the field's type; false when it has another.
bool take(RunJson& r, const Field& field, const json& value) {
  return std::visit(
      [&](auto member) {
        auto& slot = r.*member;
        using T = typename std::remove_reference_t<decltype(slot)>::value_type;
        if constexpr (std::is_same_v<T, int64_t>) {
          if (value.is_number_unsigned() &&
              value.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
            return false;
          if (!value.is_number_integer()) return false;
          slot = value.get<int64_t>();
        } else if constexpr (std::is_same_v<T, std::string>) {
          if (!value.is_string()) return false;
          slot = value.get<std::string>();
        } else {
          if (!value.is_array()) return false;
          std::vector<std::string> words;
          for (const json& w : value) {
            if (!w.is_string()) return false;
            words.push_back(w.get<std::string>());
          }
          slot = std::move(words);
        }
        return true;
      },
      field);
}

bool known(const std::string& key) {
  for (const auto& k : kKeys)
    if (key == k.name) return true;
  return false;
}

const char* file_type(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

std::optional<RunJson> parse_run_json(std::string_view text, const std::string& path,
                                      std::vector<std::string>& warnings) {
  json doc;
  try {
    doc = json::parse(lone_surrogates_replaced(text));
  } catch (const json::parse_error& e) {
    warnings.push_back(fmt::format("{} is not valid JSON (at byte {}): ignored", path, e.byte));
    return std::nullopt;
  } catch (const json::exception&) {  // out_of_range: a number past what a double holds (1e999)
    warnings.push_back(fmt::format("{} holds a number too large to read: ignored", path));
    return std::nullopt;
  }
  if (!doc.is_object()) {
    warnings.push_back(fmt::format("{} is not a JSON object: ignored", path));
    return std::nullopt;
  }
  RunJson r;
  for (const auto& k : kKeys) {
    const auto it = doc.find(k.name);
    if (it == doc.end() || it->is_null()) continue;
    if (!take(r, k.field, *it))
      warnings.push_back(fmt::format("{}: \"{}\" is {}, not what gmemhook run writes: ignored",
                                     path, k.name, it->type_name()));
  }
  std::vector<std::string> unknown;
  for (const auto& [key, value] : doc.items())
    if (!known(key)) unknown.push_back(json_quote(key));
  if (!unknown.empty()) {
    const size_t shown = std::min<size_t>(unknown.size(), 5);
    warnings.push_back(fmt::format("{}: {} gmemhook run does not write ignored: {}{}", path,
                                   unknown.size() == 1 ? "a key" : "keys",
                                   fmt::join(unknown.begin(), unknown.begin() + shown, ", "),
                                   shown < unknown.size() ? ", ..." : ""));
  }
  return r;
}

std::optional<RunJson> read_run_json(const std::filesystem::path& run,
                                     std::vector<std::string>& warnings) {
  const std::filesystem::path path = run / "run.json";
  // O_NOFOLLOW: `gmemhook run` writes a regular file, never a link to one elsewhere. O_NONBLOCK:
  // opening a FIFO to look at it must not wait for a writer.
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;  // no run.json: not a problem
    warnings.push_back(
        errno == ELOOP ? fmt::format("{} is a symbolic link: not followed, ignored", path.string())
                       : fmt::format("cannot read {}: {}", path.string(), std::strerror(errno)));
    return std::nullopt;
  }
  std::string text;
  bool read_it = false;
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    warnings.push_back(fmt::format("{} is {}: not read", path.string(), file_type(st.st_mode)));
  } else if (st.st_size > static_cast<off_t>(kMaxRunJsonBytes)) {
    warnings.push_back(
        fmt::format("{} is larger than {} KiB, more than gmemhook run writes: not read",
                    path.string(), kMaxRunJsonBytes >> 10));
  } else {
    // At most one byte past the limit: a file growing while it is read is cut off there too.
    text.resize(kMaxRunJsonBytes + 1);
    size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    text.resize(got);
    read_it = got <= kMaxRunJsonBytes;
    if (!read_it)
      warnings.push_back(fmt::format("{} grew past {} KiB while read: not read", path.string(),
                                     kMaxRunJsonBytes >> 10));
  }
  close(fd);
  if (!read_it) return std::nullopt;
  return parse_run_json(text, path.string(), warnings);
}

void write_run_json(JsonWriter& out, const RunJson& r) {
  out.begin_object();
  for (const auto& k : kKeys) {
    out.key(k.name);
    std::visit(
        [&](auto member) {
          const auto& value = r.*member;
          if (!value) return out.null();
          if constexpr (std::is_same_v<std::decay_t<decltype(*value)>, std::vector<std::string>>) {
            out.begin_array();
            for (const std::string& word : *value) out.value(word);
            out.end_array();
          } else {
            out.value(*value);
          }
        },
        k.field);
  }
  out.end_object();
}

}  // namespace gmemhook::analysis
