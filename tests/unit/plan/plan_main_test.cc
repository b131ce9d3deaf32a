// Unit tests for `epochfs plan`'s command line (src/plan/plan_main.cc), run
// in-process through Run(): the table, the JSON, flags over the file, and one
// line per error with exit status 1.
#include "epochfs/plan/plan_main.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace epochfs::plan {
namespace {

class PlanMain : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/epochfs_plan_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (const std::string& f : files_) unlink(f.c_str());
    rmdir(dir_.c_str());
  }

  std::string Write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    files_.push_back(path);
    return path;
  }

  // Runs `epochfs plan ARGS...`; returns the exit status.
  int RunPlan(std::vector<std::string> args) {
    args.insert(args.begin(), "plan");
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    out_.str("");
    err_.str("");
    return plan::Run(static_cast<int>(argv.size()), argv.data(), out_, err_);
  }

  std::string dir_;
  std::vector<std::string> files_;
  std::ostringstream out_, err_;
};

// Three layers, one copy of everything, 1000 bytes, 4 GPUs, base 32 @ 0.1:
//   swapping min(1000/100, 1000/250, 1000/50) = 4 (b); global 16; lr 0.05
//   all resident 1000/400 = 2; global 8; lr 0.025
const char kModel[] = R"([model]
name = "tiny"
parameter_copies = 1
activation_copies = 1
[device]
memory = 1000
gpus = 4
[training]
base_batch = 32
base_lr = 0.1
[[layer]]
name = "a"
activation_bytes = 100
parameter_bytes = 0
[[layer]]
name = "b"
activation_bytes = 250
parameter_bytes = 0
[[layer]]
name = "c"
activation_bytes = 50
parameter_bytes = 0
)";

TEST_F(PlanMain, Table) {
  std::string m = Write("m.toml", kModel);
  ASSERT_EQ(RunPlan({m}), 0) << err_.str();
  EXPECT_EQ(err_.str(), "");
  EXPECT_EQ(out_.str(),
            "tiny: 3 layers, parameters 0 B (x1 resident), activations 400 B per sample (x1 "
            "resident)\n"
            "device: 1000 B usable, 4 GPUs; learning rate 0.1 at batch 32, scaled linearly\n"
            "\n"
            "                      per-GPU batch  global batch  learning rate  resident\n"
            "layer-wise swapping               4            16           0.05  1000 B (layer b "
            "limits)\n"
            "all resident                      2             8          0.025  800 B\n");
}

TEST_F(PlanMain, JsonAndFlagsOverTheFile) {
  std::string m = Write("m.toml", kModel);
  // --device-memory 2000, --gpus 2, --base-batch 8, --base-lr 0.5:
  //   swapping 2000/250 = 8, global 16, lr 0.5*16/8 = 1
  //   all resident 2000/400 = 5, global 10, lr 0.5*10/8 = 0.625
  ASSERT_EQ(RunPlan({m, "--json", "--device-memory", "2000", "--gpus", "2", "--base-batch", "8",
                     "--base-lr", "0.5"}),
            0)
      << err_.str();
  nlohmann::json j = nlohmann::json::parse(out_.str());
  EXPECT_EQ(j["model"], "tiny");
  EXPECT_EQ(j["layers"], 3);
  EXPECT_EQ(j["device_memory"], 2000);
  EXPECT_EQ(j["usable_bytes"], 2000);
  EXPECT_EQ(j["gpus"], 2);
  EXPECT_EQ(j["swapping"]["per_gpu_batch"], 8);
  EXPECT_EQ(j["swapping"]["global_batch"], 16);
  EXPECT_EQ(j["swapping"]["learning_rate"], 1.0);
  EXPECT_EQ(j["swapping"]["limiting_layer"], "b");
  EXPECT_EQ(j["swapping"]["resident_bytes"], 2000);
  EXPECT_EQ(j["all_resident"]["per_gpu_batch"], 5);
  EXPECT_EQ(j["all_resident"]["global_batch"], 10);
  EXPECT_EQ(j["all_resident"]["learning_rate"], 0.625);
  EXPECT_EQ(j["all_resident"]["fits"], true);

  // A size string and a reserve: 1KiB - 24 = 1000 usable, as in the file.
  ASSERT_EQ(RunPlan({m, "--json", "--device-memory", "1KiB", "--reserve", "24"}), 0) << err_.str();
  j = nlohmann::json::parse(out_.str());
  EXPECT_EQ(j["usable_bytes"], 1000);
  EXPECT_EQ(j["swapping"]["per_gpu_batch"], 4);
}

TEST_F(PlanMain, AllResidentDoesNotFit) {
  // Each 60 fits alone in 100, both (120) do not.
  std::string m = Write("m.toml", R"([model]
parameter_copies = 1
activation_copies = 1
[[layer]]
name = "l1"
activation_bytes = 60
parameter_bytes = 0
[[layer]]
name = "l2"
activation_bytes = 60
parameter_bytes = 0
)");
  ASSERT_EQ(RunPlan({m, "--device-memory", "100"}), 0) << err_.str();
  EXPECT_NE(out_.str().find("all resident           does not fit             -              -  "
                            "120 B at batch 1\n"),
            std::string::npos)
      << out_.str();
  ASSERT_EQ(RunPlan({m, "--device-memory", "100", "--json"}), 0) << err_.str();
  nlohmann::json j = nlohmann::json::parse(out_.str());
  EXPECT_EQ(j["all_resident"]["per_gpu_batch"], 0);
  EXPECT_EQ(j["all_resident"]["fits"], false);
  EXPECT_TRUE(j["all_resident"]["learning_rate"].is_null());
  EXPECT_TRUE(j["base_lr"].is_null());
  EXPECT_EQ(j["swapping"]["per_gpu_batch"], 1);
}

TEST_F(PlanMain, ErrorsAreOneLineAndExitOne) {
  std::string m = Write("m.toml", kModel);
  struct Case {
    std::vector<std::string> args;
    std::string err;
  };
  const std::vector<Case> cases = {
      {{m, "--device-memory", "100"},
       "epochfs plan: " + m +
           ": layer 'b' does not fit on the device even at batch 1: it needs 1*0 + 1*250 = 250 "
           "bytes, the device has 100 usable bytes\n"},
      {{m, "--gpus", "0"}, "epochfs plan: --gpus: expected an integer 1..1048576, got '0'\n"},
      {{m, "--gpus", "two"}, "epochfs plan: --gpus: expected an integer 1..1048576, got 'two'\n"},
      {{m, "--device-memory", "0"},
       "epochfs plan: --device-memory: expected bytes > 0 (an integer or \"16GiB\"), got '0'\n"},
      {{m, "--device-memory", "-5GiB"},
       "epochfs plan: --device-memory: expected bytes > 0 (an integer or \"16GiB\"), got "
       "'-5GiB'\n"},
      {{m, "--base-lr", "-1"}, "epochfs plan: --base-lr: expected a number > 0, got '-1'\n"},
      {{m, "--base-batch", "0"},
       "epochfs plan: --base-batch: expected an integer 1..18446744073709551615, got '0'\n"},
      {{m, "--reserve", "1000"},
       "epochfs plan: " + m +
           ": the reserve (1000 bytes) leaves nothing of the device memory (1000 bytes)\n"},
      {{dir_ + "/missing.toml"},
       "epochfs plan: cannot open model file " + dir_ + "/missing.toml: No such file or "
       "directory\n"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(RunPlan(c.args), 1) << c.args[1];
    EXPECT_EQ(err_.str(), c.err);
    EXPECT_EQ(out_.str(), "");
  }
  // No file, an unknown flag: CLI11's reason, one line.
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{{}, {m, "--gpu", "2"}}) {
    EXPECT_EQ(RunPlan(args), 1);
    const std::string e = err_.str();
    EXPECT_EQ(e.rfind("epochfs plan: ", 0), 0u) << e;
    EXPECT_EQ(std::count(e.begin(), e.end(), '\n'), 1) << e;
    EXPECT_NE(e.find("(see epochfs plan --help)"), std::string::npos) << e;
  }
  // A file without device memory, and no flag.
  std::string nodev = Write("nodev.toml", "[[layer]]\nname = \"a\"\nactivation_bytes = 1\n"
                                          "parameter_bytes = 0\n");
  EXPECT_EQ(RunPlan({nodev}), 1);
  EXPECT_EQ(err_.str(), "epochfs plan: " + nodev +
                            ": no device memory given (device.memory in the model file, or "
                            "--device-memory)\n");
  // A file with two problems: two lines, each prefixed.
  std::string bad = Write("bad.toml", "[device]\ngpus = 0\nmemory = 0\n[[layer]]\nname = \"a\"\n"
                                      "activation_bytes = 1\nparameter_bytes = 0\n");
  EXPECT_EQ(RunPlan({bad}), 1);
  EXPECT_EQ(err_.str(), "epochfs plan: " + bad +
                            ":2: device.gpus: expected integer 1..1048576, got 0\n"
                            "epochfs plan: " + bad +
                            ":3: device.memory: expected bytes > 0 (integer or \"16GiB\"), got 0\n");
}

TEST_F(PlanMain, Help) {
  EXPECT_EQ(RunPlan({"--help"}), 0);
  EXPECT_NE(out_.str().find("--device-memory SIZE"), std::string::npos) << out_.str();
}

}  // namespace
}  // namespace epochfs::plan
