// The rules that tell library frames from the user's (see user_code.h): one table, first match
// wins.
#include "analyzer/symbols/user_code.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "analyzer/log/name_table.h"

namespace gmemhook::analysis {
namespace {

enum class Match : uint8_t {
  NativeModulePrefix,  // the module's file name starts with the pattern
  NativePackage,   // the module lies in this installed package ("torch/" → …-packages/torch/)
  PythonPackage,   // a Python frame's file lies in this installed package (or is that file)
  PythonPathPart,  // a Python frame's file contains the pattern (the standard library)
};

struct Rule {
  CodeOwner owner;
  Match match;
  std::string_view pattern;
  std::string_view label;  // what a folded line calls it (native frames: the module's name)
};

// Why the Python rules name packages rather than "site-packages": model code the user is reading
// (transformers' modeling_gpt2.py, a local package installed with pip -e) lives there too, and it
// is the line people ask for. The layers such model code calls into are listed instead.
constexpr Rule kRules[] = {
    // CUDA and NVIDIA's libraries; gmemhook's own frames are already dropped, but a log from an
    // older build may hold them.
    {CodeOwner::Cuda, Match::NativeModulePrefix, "libcuda.so", ""},
    {CodeOwner::Cuda, Match::NativeModulePrefix, "libcudart", ""},
    {CodeOwner::Cuda, Match::NativeModulePrefix, "libcublas", ""},
    {CodeOwner::Cuda, Match::NativeModulePrefix, "libcudnn", ""},
    {CodeOwner::Cuda, Match::NativeModulePrefix, "libnccl", ""},
    {CodeOwner::Cuda, Match::NativeModulePrefix, "libcufft", ""},
    {CodeOwner::Cuda, Match::NativeModulePrefix, "libcurand", ""},
    {CodeOwner::Cuda, Match::NativeModulePrefix, "libcusparse", ""},
    {CodeOwner::Cuda, Match::NativeModulePrefix, "libcusolver", ""},
    {CodeOwner::Cuda, Match::NativeModulePrefix, "libnvrtc", ""},
    {CodeOwner::Cuda, Match::NativeModulePrefix, "libnvJitLink", ""},
    {CodeOwner::Cuda, Match::NativeModulePrefix, "libcupti", ""},
    {CodeOwner::Cuda, Match::NativeModulePrefix, "libnvToolsExt", ""},
    {CodeOwner::Cuda, Match::NativeModulePrefix, "libnvshmem", ""},
    {CodeOwner::Cuda, Match::NativeModulePrefix, "libcufile", ""},
    {CodeOwner::Cuda, Match::NativeModulePrefix, "libnvidia-", ""},
    {CodeOwner::Cuda, Match::NativeModulePrefix, "libgmemhook", ""},
    // Frameworks, native side.
    {CodeOwner::Framework, Match::NativeModulePrefix, "libtorch", ""},
    {CodeOwner::Framework, Match::NativeModulePrefix, "libc10", ""},
    {CodeOwner::Framework, Match::NativeModulePrefix, "libshm", ""},
    {CodeOwner::Framework, Match::NativeModulePrefix, "libcaffe2", ""},
    {CodeOwner::Framework, Match::NativeModulePrefix, "libtriton", ""},
    {CodeOwner::Framework, Match::NativeModulePrefix, "libxla", ""},
    {CodeOwner::Framework, Match::NativeModulePrefix, "xla_extension", ""},
    {CodeOwner::Framework, Match::NativeModulePrefix, "libjax", ""},
    {CodeOwner::Framework, Match::NativeModulePrefix, "xla_cuda_plugin", ""},  // jax_plugins/
    {CodeOwner::Framework, Match::NativeModulePrefix, "libtensorflow", ""},
    {CodeOwner::Framework, Match::NativePackage, "torch/", ""},  // torch/_C.cpython-*.so
    {CodeOwner::Framework, Match::NativePackage, "cupy/", ""},
    {CodeOwner::Framework, Match::NativePackage, "cupy_backends/", ""},
    {CodeOwner::Framework, Match::NativePackage, "jaxlib/", ""},
    {CodeOwner::Framework, Match::NativePackage, "jax_plugins/", ""},
    {CodeOwner::Framework, Match::NativePackage, "triton/", ""},
    // Frameworks, Python side.
    {CodeOwner::Framework, Match::PythonPackage, "torch/", "torch"},
    {CodeOwner::Framework, Match::PythonPackage, "cupy/", "cupy"},
    {CodeOwner::Framework, Match::PythonPackage, "cupyx/", "cupy"},
    {CodeOwner::Framework, Match::PythonPackage, "jax/", "jax"},
    {CodeOwner::Framework, Match::PythonPackage, "jaxlib/", "jax"},
    {CodeOwner::Framework, Match::PythonPackage, "flax/", "flax"},
    {CodeOwner::Framework, Match::PythonPackage, "triton/", "triton"},
    {CodeOwner::Framework, Match::PythonPackage, "accelerate/", "accelerate"},
    {CodeOwner::Framework, Match::PythonPackage, "numpy/", "numpy"},
    {CodeOwner::Framework, Match::PythonPackage, "transformers/pytorch_utils.py", "transformers"},
    {CodeOwner::Framework, Match::PythonPackage, "transformers/modeling_utils.py", "transformers"},
    {CodeOwner::Framework, Match::PythonPackage, "transformers/activations.py", "transformers"},
    {CodeOwner::Framework, Match::PythonPackage, "transformers/integrations/", "transformers"},
    {CodeOwner::Framework, Match::PythonPackage, "transformers/utils/", "transformers"},
    {CodeOwner::Framework, Match::PythonPackage, "transformers/generation/", "transformers"},
    {CodeOwner::Framework, Match::PythonPackage, "transformers/loss/", "transformers"},
    // The interpreter and the glue between Python and native code.
    {CodeOwner::Interpreter, Match::NativeModulePrefix, "python", ""},
    {CodeOwner::Interpreter, Match::NativeModulePrefix, "libpython", ""},
    {CodeOwner::Interpreter, Match::NativeModulePrefix, "libffi", ""},
    {CodeOwner::Interpreter, Match::NativeModulePrefix, "_ctypes", ""},
    {CodeOwner::Interpreter, Match::PythonPathPart, "<frozen ", "python"},
    {CodeOwner::Interpreter, Match::PythonPathPart, "/runpy.py", "python"},
    {CodeOwner::Interpreter, Match::PythonPathPart, "/importlib/", "python"},
    {CodeOwner::Interpreter, Match::PythonPathPart, "/ctypes/", "python"},
    // The C and C++ runtime.
    {CodeOwner::Runtime, Match::NativeModulePrefix, "libc.so", ""},
    {CodeOwner::Runtime, Match::NativeModulePrefix, "libc-", ""},
    {CodeOwner::Runtime, Match::NativeModulePrefix, "libstdc++", ""},
    {CodeOwner::Runtime, Match::NativeModulePrefix, "libgcc_s", ""},
    {CodeOwner::Runtime, Match::NativeModulePrefix, "ld-linux", ""},
    {CodeOwner::Runtime, Match::NativeModulePrefix, "libpthread", ""},
    {CodeOwner::Runtime, Match::NativeModulePrefix, "libdl", ""},
    {CodeOwner::Runtime, Match::NativeModulePrefix, "libm.so", ""},
    {CodeOwner::Runtime, Match::NativeModulePrefix, "libgomp", ""},
};

std::string_view base_name(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Whether `path` lies in the installed package `package` ("torch/", "transformers/utils/") of a
// site-packages or dist-packages directory. Why not just "/torch/": the environment itself may
// live under such a name (a venv in /opt/torch/ holds every package, the model code included).
bool in_package(std::string_view path, std::string_view package) {
  for (std::string_view root :
       {std::string_view("site-packages/"), std::string_view("dist-packages/")}) {
    for (size_t at = path.find(root); at != std::string_view::npos; at = path.find(root, at + 1))
      if (path.substr(at + root.size()).starts_with(package)) return true;
  }
  return false;
}

const Rule* scan_rules(const Frame& frame);

// A native frame's rule depends on its module alone, and a stack's frames come in runs of one
// module: the last answer is kept per thread (reports run on -j threads). Scanning the rules for
// every frame of every stack shown was a tenth of `leaks` on a run of a thousand stacks.
const Rule* rule_for(const Frame& frame) {
  if (frame.python) return scan_rules(frame);
  thread_local std::string last_module;
  thread_local const Rule* last_rule = nullptr;
  thread_local bool known = false;
  if (known && frame.module == last_module) return last_rule;
  last_rule = scan_rules(frame);
  last_module = frame.module;
  known = true;
  return last_rule;
}

const Rule* scan_rules(const Frame& frame) {
  std::string_view module = frame.module;
  std::string_view file = frame.file ? std::string_view(*frame.file) : std::string_view();
  for (const Rule& r : kRules) {
    switch (r.match) {
      case Match::NativeModulePrefix:
        if (!frame.python && base_name(module).starts_with(r.pattern)) return &r;
        break;
      case Match::NativePackage:
        if (!frame.python && in_package(module, r.pattern)) return &r;
        break;
      case Match::PythonPackage:
        if (frame.python && in_package(file, r.pattern)) return &r;
        break;
      case Match::PythonPathPart:
        if (frame.python && file.find(r.pattern) != std::string_view::npos) return &r;
        break;
    }
  }
  return nullptr;
}

}  // namespace

const char* to_string(CodeOwner owner) {
  return name_in(owner, {"user", "cuda", "framework", "interpreter", "runtime"});
}

CodeOwner owner_of(const Frame& frame) {
  const Rule* r = rule_for(frame);
  return r ? r->owner : CodeOwner::User;
}

std::string library_of(const Frame& frame) {
  if (!frame.python) {
    std::string_view name = base_name(frame.module);
    return name.empty() ? std::string("?") : std::string(name);
  }
  const Rule* r = rule_for(frame);
  if (r && !r->label.empty()) return std::string(r->label);
  return frame.file ? std::string(base_name(*frame.file)) : std::string("?");
}

std::vector<std::string> libraries_of(const std::vector<Frame>& frames) {
  std::vector<std::string> libraries;
  for (const Frame& f : frames) {
    std::string lib = library_of(f);
    if (std::find(libraries.begin(), libraries.end(), lib) == libraries.end())
      libraries.push_back(std::move(lib));
  }
  return libraries;
}

size_t user_frame(const std::vector<Frame>& frames) {
  size_t first_python = kNoUserFrame, first_native_user = kNoUserFrame;
  for (size_t i = 0; i < frames.size(); ++i) {
    const Frame& f = frames[i];
    bool user = owner_of(f) == CodeOwner::User;
    if (f.python) {
      if (user) return i;
      if (first_python == kNoUserFrame) first_python = i;
    } else if (user && first_native_user == kNoUserFrame) {
      first_native_user = i;
    }
  }
  return first_python != kNoUserFrame ? first_python : first_native_user;
}

std::vector<StackLine> fold_library_frames(const std::vector<Frame>& frames) {
  std::vector<StackLine> lines;
  size_t i = 0;
  while (i < frames.size()) {
    CodeOwner owner = owner_of(frames[i]);
    size_t end = i + 1;
    if (owner != CodeOwner::User)
      while (end < frames.size() && owner_of(frames[end]) != CodeOwner::User) ++end;
    StackLine line;
    line.first = i;
    line.owner = owner;
    if (end - i >= 2) {
      line.count = end - i;
      line.folded = true;
      line.libraries = libraries_of({frames.begin() + i, frames.begin() + end});
      lines.push_back(std::move(line));
      i = end;
    } else {
      lines.push_back(std::move(line));
      i += 1;
    }
  }
  return lines;
}

std::string autograd_node(const std::vector<Frame>& frames) {
  // Innermost first: the frame just inside Node::operator() is the node's apply.
  for (size_t i = 1; i < frames.size(); ++i) {
    if (frames[i].python || !frames[i].function) continue;
    const std::string& caller = *frames[i].function;
    if (!caller.starts_with("torch::autograd::Node::operator()")) continue;
    const std::optional<std::string>& callee = frames[i - 1].function;
    if (!callee) return {};
    // "torch::autograd::generated::AddmmBackward0::apply(std::vector<...>&&)": the last name
    // before "::apply(".
    const size_t apply = callee->find("::apply(");
    if (apply == std::string::npos) return {};
    const size_t start = callee->rfind("::", apply - 1);
    return callee->substr(start == std::string::npos ? 0 : start + 2,
                          apply - (start == std::string::npos ? 0 : start + 2));
  }
  return {};
}

std::string describe_fold(const StackLine& line) {
  std::string s = std::to_string(line.count) + " frames in ";
  for (size_t i = 0; i < line.libraries.size(); ++i) s += (i ? ", " : "") + line.libraries[i];
  return s;
}

}  // namespace gmemhook::analysis
