// Unit tests for the model file loader (src/plan/model_file.cc): defaults,
// sizes, every error with its FILE:LINE, and conf/plan/example_model.toml with
// its plan computed by hand (EPOCHFS_SOURCE_ROOT points at the source tree).
#include "epochfs/plan/model_file.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace epochfs::plan {
namespace {

PlanInput MustParse(const std::string& text) {
  Result<PlanInput> r = ParseModelFile(text, "m.toml");
  EXPECT_TRUE(r.ok()) << r.status().ToString() << "\n--- input:\n" << text;
  return r.ok() ? r.value() : PlanInput{};
}

std::string ErrorOf(const std::string& text) {
  Result<PlanInput> r = ParseModelFile(text, "m.toml");
  EXPECT_FALSE(r.ok()) << "accepted:\n" << text;
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  return r.status().message();
}

const char kOneLayer[] = R"([[layer]]
name = "a"
activation_bytes = 10
parameter_bytes = 0
)";

TEST(ModelFile, MinimalFileTakesDefaults) {
  PlanInput in = MustParse(kOneLayer);
  ASSERT_EQ(in.layers.size(), 1u);
  EXPECT_EQ(in.layers[0].name, "a");
  EXPECT_EQ(in.layers[0].activation_bytes, 10u);
  EXPECT_EQ(in.layers[0].parameter_bytes, 0u);
  EXPECT_EQ(in.model_name, "");
  EXPECT_EQ(in.parameter_copies, 2u);
  EXPECT_EQ(in.activation_copies, 2u);
  EXPECT_FALSE(in.device_memory.has_value());
  EXPECT_EQ(in.reserve, 0u);
  EXPECT_EQ(in.gpus, 1u);
  EXPECT_FALSE(in.base_batch.has_value());
  EXPECT_FALSE(in.base_lr.has_value());
}

TEST(ModelFile, EveryKeyAndSizeStrings) {
  PlanInput in = MustParse(R"(
[model]
name = "m"
parameter_copies = 4
activation_copies = 3
[device]
memory = "1.5GiB"
reserve = "100MB"
gpus = 16
[training]
base_batch = 512
base_lr = 2
[[layer]]
name = "first"
activation_bytes = "3KiB"
parameter_bytes = "1k"
[[layer]]
name = "second"
activation_bytes = 7
parameter_bytes = 9
)");
  EXPECT_EQ(in.model_name, "m");
  EXPECT_EQ(in.parameter_copies, 4u);
  EXPECT_EQ(in.activation_copies, 3u);
  EXPECT_EQ(in.device_memory, uint64_t{1536} << 20);
  EXPECT_EQ(in.reserve, 100000000u);
  EXPECT_EQ(in.gpus, 16u);
  EXPECT_EQ(in.base_batch, 512u);
  EXPECT_EQ(in.base_lr, 2.0);  // an integer is a number
  ASSERT_EQ(in.layers.size(), 2u);  // file order kept
  EXPECT_EQ(in.layers[0].name, "first");
  EXPECT_EQ(in.layers[0].activation_bytes, 3072u);
  EXPECT_EQ(in.layers[0].parameter_bytes, 1024u);
  EXPECT_EQ(in.layers[1].name, "second");
  EXPECT_EQ(in.layers[1].activation_bytes, 7u);
  EXPECT_EQ(in.layers[1].parameter_bytes, 9u);
}

TEST(ModelFile, ErrorsNameFileLineAndKey) {
  EXPECT_EQ(ErrorOf("[device]\nmemory = 0\n" + std::string(kOneLayer)),
            "m.toml:2: device.memory: expected bytes > 0 (integer or \"16GiB\"), got 0");
  EXPECT_EQ(ErrorOf("[device]\nmemory = \"lots\"\n" + std::string(kOneLayer)),
            "m.toml:2: device.memory: expected bytes > 0 (integer or \"16GiB\"), got \"lots\"");
  EXPECT_EQ(ErrorOf("[device]\nreserve = -1\n" + std::string(kOneLayer)),
            "m.toml:2: device.reserve: expected bytes >= 0 (integer or \"1GiB\"), got -1");
  EXPECT_EQ(ErrorOf("[device]\ngpus = 0\n" + std::string(kOneLayer)),
            "m.toml:2: device.gpus: expected integer 1..1048576, got 0");
  EXPECT_EQ(ErrorOf("[device]\nmemroy = 5\n" + std::string(kOneLayer)),
            "m.toml:2: device.memroy: unknown key");
  EXPECT_EQ(ErrorOf("[model]\nparameter_copies = 0\n" + std::string(kOneLayer)),
            "m.toml:2: model.parameter_copies: expected integer 1..1000, got 0");
  EXPECT_EQ(ErrorOf("[model]\nactivation_copies = 1.5\n" + std::string(kOneLayer)),
            "m.toml:2: model.activation_copies: expected integer 1..1000, got 1.5");
  EXPECT_EQ(ErrorOf("[training]\nbase_batch = 0\n" + std::string(kOneLayer)),
            "m.toml:2: training.base_batch: expected integer >= 1, got 0");
  EXPECT_EQ(ErrorOf("[training]\nbase_lr = -0.1\n" + std::string(kOneLayer)),
            "m.toml:2: training.base_lr: expected a number > 0, got -0.1");
  EXPECT_EQ(ErrorOf("[training]\nbase_lr = nan\n" + std::string(kOneLayer)),
            "m.toml:2: training.base_lr: expected a number > 0, got nan");
  EXPECT_EQ(ErrorOf("device = 5\n" + std::string(kOneLayer)),
            "m.toml:1: device: expected a table [device], got 5");
  EXPECT_EQ(ErrorOf("gpus = 5\n" + std::string(kOneLayer)),
            "m.toml:1: gpus: unknown key (known: [model], [device], [training], [[layer]])");
  EXPECT_EQ(ErrorOf("layers = []\n" + std::string(kOneLayer)),
            "m.toml:1: layers: unknown key (known: [model], [device], [training], [[layer]]) "
            "(layers are [[layer]] tables)");
  EXPECT_EQ(ErrorOf("layer = 3\n"), "m.toml:1: layer: expected [[layer]] tables, got 3");
}

TEST(ModelFile, LayerErrors) {
  EXPECT_EQ(ErrorOf("[model]\nname = \"x\"\n"), "m.toml: no [[layer]] tables: the model has no layers");
  EXPECT_EQ(ErrorOf("[[layer]]\nname = \"a\"\nactivation_bytes = 0\nparameter_bytes = 0\n"),
            "m.toml:3: layer[1].activation_bytes: expected bytes per sample > 0 (integer or "
            "\"12KiB\"), got 0");
  EXPECT_EQ(ErrorOf("[[layer]]\nname = \"a\"\nactivation_bytes = -5\nparameter_bytes = 0\n"),
            "m.toml:3: layer[1].activation_bytes: expected bytes per sample > 0 (integer or "
            "\"12KiB\"), got -5");
  EXPECT_EQ(ErrorOf("[[layer]]\nname = \"a\"\nactivation_bytes = 1\nparameter_bytes = -1\n"),
            "m.toml:4: layer[1].parameter_bytes: expected bytes >= 0 (integer or \"12KiB\"), "
            "got -1");
  EXPECT_EQ(ErrorOf("[[layer]]\nname = \"\"\nactivation_bytes = 1\nparameter_bytes = 0\n"),
            "m.toml:2: layer[1].name: expected a non-empty string, got \"\"");
  EXPECT_EQ(ErrorOf("[[layer]]\nname = \"a\"\nactivation_bytes = 1\nparameter_bytes = 0\n"
                    "size = 3\n"),
            "m.toml:5: layer[1].size: unknown key (known: name, activation_bytes, "
            "parameter_bytes)");
  // Missing keys: named at the [[layer]] header's line.
  EXPECT_EQ(ErrorOf(std::string(kOneLayer) + "[[layer]]\nname = \"b\"\nactivation_bytes = 3\n"),
            "m.toml:5: layer[2] (b): parameter_bytes missing (0 for a layer without parameters)");
  EXPECT_EQ(ErrorOf("[[layer]]\nactivation_bytes = 3\nparameter_bytes = 0\n"),
            "m.toml:1: layer[1]: name missing");
  EXPECT_EQ(ErrorOf("[[layer]]\nname = \"a\"\nparameter_bytes = 0\n"),
            "m.toml:1: layer[1] (a): activation_bytes missing (bytes per sample)");
  // A repeated name points at the first.
  EXPECT_EQ(ErrorOf(std::string(kOneLayer) + std::string(kOneLayer)),
            "m.toml:6: layer[2].name: \"a\" is already the name of layer[1] (names must be "
            "unique)");
}

TEST(ModelFile, SeveralProblemsOneLineEachInFileOrder) {
  EXPECT_EQ(ErrorOf("[device]\ngpus = 0\nmemory = 0\n" + std::string(kOneLayer)),
            "m.toml:2: device.gpus: expected integer 1..1048576, got 0\n"
            "m.toml:3: device.memory: expected bytes > 0 (integer or \"16GiB\"), got 0");
}

TEST(ModelFile, SyntaxErrorNamesLineAndColumn) {
  std::string e = ErrorOf("[[layer]]\nname = \"a\nactivation_bytes = 1\n");
  EXPECT_EQ(e.rfind("m.toml:2:", 0), 0u) << e;
  EXPECT_NE(e.find("TOML syntax error"), std::string::npos) << e;
}

TEST(ModelFile, UnreadableFile) {
  Result<PlanInput> r = LoadModelFile("/nonexistent/model.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_EQ(r.status().message(),
            "cannot open model file /nonexistent/model.toml: No such file or directory");
}

// conf/plan/example_model.toml (VGG-16, 224x224, fp32), by hand:
//   Σparameters = 138357544 * 4 = 553430176 bytes (VGG-16's 138.36 M weights)
//   Σactivations per sample = 60348320 bytes (sum of the file's 21 layers)
//   usable = 16 GiB - 1 GiB = 16106127360
//   swapping: conv1_1 (16106127360 - 2*7168) / (2*12845056)
//                   = 16106113024 / 25690112 = 626.9 -> 626
//             conv1_2 (16106127360 - 2*147712) / 25690112 = 626.9 -> 626 (tie: conv1_1)
//             global 626*8 = 5008; lr 0.01 * 5008 / 256 = 0.195625
//   all resident: (16106127360 - 2*553430176) / (2*60348320)
//                   = 14999267008 / 120696640 = 124.27 -> 124;
//             global 992; lr 0.01 * 992 / 256 = 0.03875
TEST(ModelFile, ExampleFileAndItsPlan) {
  const char* root = std::getenv("EPOCHFS_SOURCE_ROOT");
  ASSERT_NE(root, nullptr) << "EPOCHFS_SOURCE_ROOT not set";
  Result<PlanInput> r = LoadModelFile(std::string(root) + "/conf/plan/example_model.toml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const PlanInput& in = r.value();
  EXPECT_EQ(in.model_name, "vgg16-224-fp32");
  EXPECT_EQ(in.layers.size(), 21u);
  EXPECT_EQ(in.device_memory, uint64_t{16} << 30);
  EXPECT_EQ(in.reserve, uint64_t{1} << 30);
  EXPECT_EQ(in.gpus, 8u);
  Result<Plan> p = MakePlan(in);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p.value().total_parameter_bytes, 553430176u);
  EXPECT_EQ(p.value().total_activation_bytes, 60348320u);
  EXPECT_EQ(p.value().swapping.per_gpu_batch, 626u);
  EXPECT_EQ(in.layers[p.value().limiting_layer].name, "conv1_1");
  EXPECT_EQ(p.value().swapping.global_batch, 5008u);
  EXPECT_DOUBLE_EQ(*p.value().swapping.learning_rate, 0.195625);
  EXPECT_EQ(p.value().all_resident.per_gpu_batch, 124u);
  EXPECT_EQ(p.value().all_resident.global_batch, 992u);
  EXPECT_DOUBLE_EQ(*p.value().all_resident.learning_rate, 0.03875);
}

}  // namespace
}  // namespace epochfs::plan
