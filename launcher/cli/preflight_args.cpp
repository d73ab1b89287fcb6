#include "launcher/cli/preflight_args.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "launcher/base/text.hpp"
#include "launcher/cli/cli11_parse.hpp"
#include "launcher/cli/usage_error.hpp"

namespace ddp::launch::cli {

std::optional<PreflightArgs> parse_preflight_args(const std::vector<std::string>& args) {
  PreflightArgs p;
  std::string nproc, conf;
  CLI::App app{"This node's pre-flight checks, alone", "ddp-launch preflight"};
  app.allow_extras();  // reported below, as unexpected
  app.add_option("--nproc-per-node,--nproc_per_node", nproc);
  app.add_flag("--gpus", p.gpus);
  app.add_option("--preflight-conf,--preflight_conf", conf);
  app.add_option("--log-dir,--log_dir", p.log_dir);
  app.add_option("--snapshot-persist-dir,--snapshot_persist_dir", p.snapshot_persist_dir);
  if (parse_with_cli11(app, args,
                       [](const std::string& what) { return fmt::format("preflight: {}; {}", what, kPreflightUsage); }))
    return std::nullopt;
  if (!app.remaining().empty())
    usage_error(fmt::format("preflight: unexpected '{}'; {}", app.remaining().front(), kPreflightUsage));
  if (!nproc.empty()) {
    const auto n = parse_natural(nproc);
    if (!n || *n < 1 || *n > 4096)
      usage_error(fmt::format("preflight --nproc-per-node '{}': a number of workers from 1 to 4096", nproc));
    p.workers = static_cast<int>(*n);
  }
  p.conf = parse_preflight_conf(conf);
  return p;
}

}  // namespace ddp::launch::cli
