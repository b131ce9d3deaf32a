// epochfs: args → config → daemon.
#include <CLI/CLI.hpp>
#include <sys/stat.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "epochfs/common/log.h"
#include "epochfs/config/config.h"
#include "epochfs/config/option_hints.h"
#include "epochfs/daemon/daemon.h"
#include "epochfs/plan/plan_main.h"
#include "epochfs/sim/sim_main.h"
#include "epochfs/tools/top_main.h"
#include "epochfs/tools/warm_main.h"

namespace {

// Splits "a,b\,c,d" on unescaped commas.
std::vector<std::string> SplitOptions(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      cur.push_back(s[++i]);
    } else if (s[i] == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(s[i]);
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// Generic mount(8) options that mount.fuse3 or fstab may pass: accepted and
// ignored (the dataset view is always read-only, nodev/nosuid always hold).
const std::set<std::string> kIgnored = {
    "rw",    "ro",      "dev",    "nodev",  "suid",     "nosuid",     "exec", "noexec",
    "atime", "noatime", "relatime", "nodiratime", "sync", "async",    "auto", "noauto",
    "user",  "nouser",  "users",  "_netdev", "nofail", "defaults", "default_permissions"};
// FUSE options handed to the kernel mount (key or key=value).
const std::set<std::string> kFuse = {"allow_other", "allow_root", "auto_unmount", "fsname",
                                     "subtype",     "max_read"};

int Fail(const std::string& msg) {
  std::fprintf(stderr, "epochfs: %s\n", msg.c_str());
  return 1;
}

// The config file read when none is named: SYSCONFDIR/epochfs/epochfs.toml
// (meson defines it: /etc/epochfs/epochfs.toml for a /usr install).
#ifndef EPOCHFS_DEFAULT_CONFIG
#error "EPOCHFS_DEFAULT_CONFIG must name the default config file (src/meson.build)"
#endif
constexpr const char* kDefaultConfig = EPOCHFS_DEFAULT_CONFIG;

// "unknown option --NAME (TOOL): use -o KEY=VALUE" for an option of another
// dataset mount (option_hints.h) written as --NAME[=VALUE] [VALUE]; empty
// when no argument is one.
std::string ForeignOptionError(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 3 || arg.rfind("--", 0) != 0) continue;
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? eq : eq - 2);
    std::string value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (epochfs::HintedOptionTakesValue(name) && i + 1 < argc && argv[i + 1][0] != '-') {
      value = argv[i + 1];
    }
    if (auto hint = epochfs::HintForOption(name, value)) {
      return "unknown option --" + name + " (" + hint->tool + "): " + hint->instead;
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 0 && std::string(argv[0]) == epochfs::kUnmountWatcherName) {
    return epochfs::UnmountWatcherMain(argc, argv);
  }
  if (argc > 1 && std::string(argv[1]) == "plan") return epochfs::plan::Main(argc - 1, argv + 1);
  if (argc > 1 && std::string(argv[1]) == "sim") return epochfs::sim::Main(argc - 1, argv + 1);
  if (argc > 1 && std::string(argv[1]) == "top") return epochfs::tools::TopMain(argc - 1, argv + 1);
  if (argc > 1 && std::string(argv[1]) == "warm") {
    return epochfs::tools::WarmMain(argc - 1, argv + 1);
  }
  CLI::App app{"epochfs: a FUSE cache for training datasets on slow storage"};
  app.footer(
      "Also: epochfs plan MODEL.toml ... (batch planner, epochfs-plan(1)),\n"
      "      epochfs sim WORKLOAD.toml ... (policy simulator, epochfs(8) SIMULATOR)\n"
      "      epochfs top MOUNTPOINT (live view), epochfs warm PATH... | --from LIST MNT\n"
      "      (pre-load the cache; --background: progress in stats and top)\n"
      "Config: --config FILE, else " + std::string(kDefaultConfig) + " when it exists\n"
      "(--no-config: neither); -o key=value overrides the file. epochfs(8), epochfs.toml(5)");
  epochfs::DaemonArgs args;
  std::vector<std::string> opts;
  std::string config_file;
  app.add_option("LOWER", args.lower, "dataset directory on slow storage")->required();
  app.add_option("MOUNTPOINT", args.mountpoint, "where to mount it")->required();
  app.add_flag("-f,--foreground", args.foreground, "stay in the foreground");
  app.add_flag("-d,--debug", args.debug, "trace FUSE requests (implies -f)");
  app.add_option("-o", opts, "options: config key=value overrides and FUSE mount options")
      ->allow_extra_args(false);
  bool no_config = false;
  app.add_option("--config", config_file,
                 std::string("TOML config file (default: ") + kDefaultConfig + " when it exists)");
  app.add_flag("--no-config", no_config, "read no config file, not even the default");
  app.set_version_flag("-V,--version", std::string("epochfs ") + EPOCHFS_VERSION);
  if (std::string e = ForeignOptionError(argc, argv); !e.empty()) return Fail(e);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return Fail(std::string(e.what()) + " (see epochfs --help)");
  }

  // -o config=FILE (what fstab can say) is --config FILE; the file is read
  // first and every other -o key overrides it, wherever it stands.
  std::vector<std::string> options;
  for (const std::string& group : opts) {
    for (const std::string& opt : SplitOptions(group)) {
      if (opt.rfind("config=", 0) != 0) {
        options.push_back(opt);
        continue;
      }
      const std::string file = opt.substr(7);
      if (file.empty()) return Fail("-o config=: needs a file (config=/etc/epochfs.toml)");
      if (!config_file.empty() && config_file != file) {
        return Fail("two config files: " + config_file + " and " + file);
      }
      config_file = file;
    }
  }
  if (no_config && !config_file.empty()) {
    return Fail("--no-config and a config file (" + config_file + "): choose one");
  }
  struct stat st;
  if (config_file.empty() && !no_config && ::stat(kDefaultConfig, &st) == 0) {
    config_file = kDefaultConfig;
  }
  epochfs::Config cfg;
  if (!config_file.empty()) {
    auto loaded = epochfs::LoadConfigFile(config_file);
    if (!loaded.ok()) return Fail(loaded.status().message());
    cfg = loaded.value();
  }
  {
    for (const std::string& opt : options) {
      const size_t eq = opt.find('=');
      const std::string key = opt.substr(0, eq);
      // Dotted names are config keys: a misspelt one gets the loader's
      // "did you mean" rather than "unknown option".
      if (epochfs::IsConfigKey(key) || key.find('.') != std::string::npos) {
        if (eq == std::string::npos) return Fail("-o " + key + ": needs a value (" + key + "=...)");
        if (auto s = epochfs::ApplyOverride(&cfg, key, opt.substr(eq + 1)); !s.ok()) {
          return Fail(s.message());
        }
      } else if (key == "allow_other" && eq == std::string::npos) {
        cfg.fuse.allow_other = true;  // the daemon adds the FUSE option; it must know
      } else if (kFuse.count(key) != 0) {
        args.fuse_opts.push_back(opt);
      } else if (auto hint = epochfs::HintForOption(
                     key, eq == std::string::npos ? "" : opt.substr(eq + 1))) {
        return Fail("unknown option '" + opt + "' (" + hint->tool + "): " + hint->instead);
      } else if (kIgnored.count(key) == 0) {
        return Fail("unknown option '" + opt + "' (see epochfs(8))");
      }
    }
  }
  epochfs::log::Level level;
  if (epochfs::log::ParseLevel(cfg.log.level, &level)) epochfs::log::SetLevel(level);
  if (args.debug) epochfs::log::SetLevel(epochfs::log::Level::kDebug);
  args.config = cfg;

  epochfs::Status s = epochfs::RunDaemon(args);
  if (!s.ok()) return Fail(s.message());
  return 0;
}
