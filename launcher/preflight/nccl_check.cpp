#include "launcher/preflight/nccl_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "launcher/base/launch_error.hpp"
#include "launcher/os/run_capture.hpp"
#include "launcher/os/this_process.hpp"
#include "launcher/preflight/nccl_probe.hpp"

namespace ddp::launch::preflight {
namespace {

// The output's last line that is a JSON object: the figures (NCCL's own warnings may come
// before it); "" when there is none.
std::string figures_line(const std::string& output) {
  size_t end = output.size();
  while (end > 0) {
    const size_t start = output.rfind('\n', end - 1);
    const size_t from = start == std::string::npos ? 0 : start + 1;
    if (from < end && output[from] == '{') return output.substr(from, end - from);
    if (start == std::string::npos) break;
    end = start;
  }
  return "";
}

// The output's last 400 bytes on one line ("no output" for none).
std::string tail(const std::string& output) {
  std::string t = output.size() > 400 ? output.substr(output.size() - 400) : output;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  for (char& c : t)
    if (c == '\n') c = '|';
  return t.empty() ? "no output" : "its output ends: " + t;
}

}  // namespace

std::string wheel_nccl(const std::string& python) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path lib = fs::path(python).parent_path().parent_path() / "lib";
  std::vector<fs::path> found;
  for (fs::directory_iterator it(lib, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().rfind("python3", 0) != 0) continue;
    for (const char* packages : {"site-packages", "dist-packages"}) {
      const fs::path nccl = it->path() / packages / "nvidia" / "nccl" / "lib" / "libnccl.so.2";
      if (fs::exists(nccl, ec)) found.push_back(nccl);
    }
  }
  std::sort(found.begin(), found.end());  // one environment holds one Python as a rule
  return found.empty() ? "" : found.back().string();
}

preflight::NcclFigures measure_nccl(os::ChildRegistry& children, int gpus, double mib, const std::string& gpu_list,
                                    const std::string& nccl_library) {
  preflight::NcclFigures failed;
  failed.loaded = true;  // whatever goes wrong from here on is the probe's failure
  failed.gpus = gpus;
  failed.mib = mib;
  os::SpawnSpec spec;
  try {
    spec.executable = os::executable_path();
    spec.argv = {"ddp-launch", "__nccl-probe", std::to_string(gpus), fmt::format("{:g}", mib)};
    spec.env = os::current_environment();
    if (!nccl_library.empty() && !os::env_value(preflight::kNcclLibraryEnvVar))
      spec.env.push_back(fmt::format("{}={}", preflight::kNcclLibraryEnvVar, nccl_library));
    if (!gpu_list.empty()) {
      spec.env.erase(std::remove_if(spec.env.begin(), spec.env.end(),
                                    [](const std::string& e) { return e.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0; }),
                     spec.env.end());
      spec.env.push_back("CUDA_VISIBLE_DEVICES=" + gpu_list);
    }
    const os::Captured run = os::run_captured(children, spec, kNcclProbeLimit);
    if (run.timed_out) {
      failed.error = fmt::format("the all-reduce did not finish within {} s (killed; {})", kNcclProbeLimit.count(),
                                 tail(run.output));
      return failed;
    }
    const std::string line = figures_line(run.output);
    if (!run.status.success() || line.empty()) {
      failed.error = fmt::format("the probe ended with {} ({})", run.status.describe(), tail(run.output));
      return failed;
    }
    preflight::NcclFigures figures = preflight::parse_nccl_figures(line);
    const std::string said = run.output.substr(0, run.output.rfind(line));  // NCCL_DEBUG's lines, say
    if (!figures.error.empty() && said.find_first_not_of(" \n") != std::string::npos)
      figures.error += fmt::format(" ({})", tail(said));
    return figures;
  } catch (const LaunchError& e) {
    failed.error = fmt::format("the probe could not start: {}", e.what());
    return failed;
  }
}

}  // namespace ddp::launch::preflight
