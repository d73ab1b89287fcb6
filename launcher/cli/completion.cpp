#include "launcher/cli/completion.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "launcher/cli/usage_error.hpp"

namespace ddp::launch::cli {

std::string completion_script(const std::string& shell, const std::vector<std::string>& flags) {
  const std::string words = fmt::format("{}", fmt::join(flags, " "));
  if (shell == "bash" || shell == "zsh") {
    // zsh runs the bash function through bashcompinit.
    const std::string zsh_prelude = shell == "zsh" ? "autoload -U +X bashcompinit && bashcompinit\n" : "";
    return fmt::format(
        "# ddp-launch completion for {0}: eval \"$(ddp-launch --print-completion {0})\"\n{1}"
        "_ddp_launch() {{\n"
        "  local cur=\"${{COMP_WORDS[COMP_CWORD]}}\"\n"
        "  if [[ \"$cur\" == -* ]]; then\n"
        "    COMPREPLY=($(compgen -W \"{2}\" -- \"$cur\"))\n"
        "  fi\n"
        "}}\n"
        "complete -o default -F _ddp_launch ddp-launch\n",
        shell, zsh_prelude, words);
  }
  if (shell == "tcsh")
    return fmt::format(
        "# ddp-launch completion for tcsh: ddp-launch --print-completion tcsh > FILE; source FILE\n"
        "complete ddp-launch 'c/--/({})/' 'p/*/f/'\n",
        [&] {
          std::string bare;
          for (const std::string& f : flags) bare += (bare.empty() ? "" : " ") + f.substr(2);
          return bare;
        }());
  usage_error(fmt::format("--print-completion '{}': give bash, zsh or tcsh", shell));
}

}  // namespace ddp::launch::cli
