// --local_rank for scripts that declare it; see script_local_rank.hpp.
#include "launcher/worker/script_local_rank.hpp"

#include <cctype>
#include <fstream>
#include <vector>

#include <fmt/format.h>

namespace ddp::launch::worker {
namespace {

constexpr size_t kMaxScriptBytes = 1 << 20;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// python, python3, python3.11 (any folder).
bool is_python_interpreter(const std::string& program) {
  const std::string base = program.substr(program.rfind('/') + 1);
  if (base.compare(0, 6, "python") != 0) return false;
  for (size_t i = 6; i < base.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(base[i])) && base[i] != '.') return false;
  return true;
}

// The string literals at s[pos...] separated by commas: add_argument's option strings.
std::vector<std::string> leading_literals(std::string_view s, size_t pos) {
  std::vector<std::string> out;
  for (;;) {
    while (pos < s.size() && std::isspace(static_cast<unsigned char>(s[pos]))) ++pos;
    if (pos >= s.size() || (s[pos] != '"' && s[pos] != '\'')) return out;
    const char quote = s[pos];
    const size_t end = s.find(quote, pos + 1);
    if (end == std::string_view::npos) return out;
    out.emplace_back(s.substr(pos + 1, end - pos - 1));
    pos = end + 1;
    while (pos < s.size() && std::isspace(static_cast<unsigned char>(s[pos]))) ++pos;
    if (pos >= s.size() || s[pos] != ',') return out;
    ++pos;
  }
}

// True when the line holding s[pos] has a '#' before pos (a comment).
bool commented_out(std::string_view s, size_t pos) {
  const size_t line = s.rfind('\n', pos);
  const size_t start = line == std::string_view::npos ? 0 : line + 1;
  return s.substr(start, pos - start).find('#') != std::string_view::npos;
}

}  // namespace

std::optional<ScriptRef> python_script_of(const WorkerCommandSpec& spec) {
  if (spec.module) return std::nullopt;
  if (spec.run_path || ends_with(spec.program, ".py")) return ScriptRef{spec.program, -1};
  if (!is_python_interpreter(spec.program)) return std::nullopt;
  for (size_t i = 0; i < spec.args.size(); ++i) {
    const std::string& a = spec.args[i];
    if (a == "-m" || a == "-c" || a == "-" || a.compare(0, 2, "-m") == 0 || a.compare(0, 2, "-c") == 0)
      return std::nullopt;
    if (a == "-W" || a == "-X") {
      ++i;  // the flag's value
      continue;
    }
    if (!a.empty() && a[0] == '-') continue;
    return ScriptRef{a, static_cast<int>(i)};
  }
  return std::nullopt;
}

std::string declared_local_rank_flag(std::string_view source) {
  constexpr std::string_view kCall = "add_argument(";
  for (size_t pos = source.find(kCall); pos != std::string_view::npos; pos = source.find(kCall, pos + 1)) {
    if (commented_out(source, pos)) continue;
    for (const auto& name : leading_literals(source, pos + kCall.size()))
      if (name == "--local_rank" || name == "--local-rank") return name;
  }
  return "";
}

std::string read_script_head(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::string text(kMaxScriptBytes, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

std::string pass_declared_local_rank(const WorkerCommandSpec& spec, WorkerCommand& cmd) {
  const auto script = python_script_of(spec);
  if (!script) return "";
  const std::string flag = declared_local_rank_flag(read_script_head(script->path));
  if (flag.empty()) return "";
  if (script->arg_index >= 0) {  // python [flags] script.py: the argument goes after the script
    const auto end = cmd.args.begin() + script->arg_index + 1;
    cmd.prefix.insert(cmd.prefix.end(), cmd.args.begin(), end);
    cmd.args.erase(cmd.args.begin(), end);
  }
  cmd.local_rank_flag = flag;
  return fmt::format(
      "passing {}=<local rank> to each worker: {} declares it (as torch.distributed.launch passed it); "
      "LOCAL_RANK is set as well; --use-env turns this off",
      flag, script->path);
}

}  // namespace ddp::launch::worker
