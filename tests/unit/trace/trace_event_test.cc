// The policy trace's line format: every event survives Format then Parse;
// bad lines are refused with the line number; the recording policy records
// each state-changing call before forwarding it and leaves the answers alone.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "epochfs/cache/read_order.h"
#include "epochfs/trace/recording_policy.h"
#include "epochfs/trace/trace_event.h"

namespace epochfs::trace {
namespace {

std::vector<TraceEvent> OneOfEach() {
  std::vector<TraceEvent> v;
  TraceEvent e;
  e.kind = TraceKind::kStart;
  e.policy = "future";
  e.budget = 1ull << 40;
  e.request_bytes = 32768;
  e.weigh_hits = true;
  v.push_back(e);
  e = {};
  e.kind = TraceKind::kAddJob;
  e.spec = {7, "job \"α\"\n", 32, 4, 2, 123456789};
  v.push_back(e);
  e = {};
  e.kind = TraceKind::kSamples;
  e.job = 7;
  e.samples = {{(1ull << 63) + 5, 0}, {9, 4096}};
  v.push_back(e);
  e = {};
  e.kind = TraceKind::kOrder;
  e.job = 7;
  e.epoch = 3;
  e.order = {1, 0, 4294967295u};
  v.push_back(e);
  e = {};
  e.kind = TraceKind::kBeginEpoch;
  e.job = 7;
  e.epoch = 1;
  e.now_ns = 99;
  v.push_back(e);
  e = {};
  e.kind = TraceKind::kRestartEpoch;
  e.job = 7;
  e.now_ns = 100;
  v.push_back(e);
  e = {};
  e.kind = TraceKind::kEndJob;
  e.job = 7;
  v.push_back(e);
  e = {};
  e.kind = TraceKind::kBudget;
  e.budget = 12345;
  v.push_back(e);
  e = {};
  e.kind = TraceKind::kHit;
  e.access = {9, 4096, 7, 1, 555};
  e.access.wait_ns = 31;  // a prefetch in flight, joined
  v.push_back(e);
  e = {};
  e.kind = TraceKind::kMiss;
  e.access = {10, 1, cache::kNoJob, -1, 556};
  e.access.wait_ns = 800;
  e.load_ns = 777;
  v.push_back(e);
  e = {};
  e.kind = TraceKind::kMiss;  // a block of file 42
  e.access = {11, 65536, 7, 2, 557, 42};
  e.load_ns = 778;
  v.push_back(e);
  e = {};
  e.kind = TraceKind::kDropped;
  e.access.object = 10;
  v.push_back(e);
  e = {};
  e.kind = TraceKind::kRequestBytes;
  e.request_bytes = 409600;
  v.push_back(e);
  e = {};
  e.kind = TraceKind::kRefilled;  // the hit on 9 above needed a refill
  e.access = {9, 4096, 7, 1, 560};
  e.access.wait_ns = 2000;
  e.access.served = cache::Access::Served::kRefill;
  v.push_back(e);
  return v;
}

std::string Lines(const std::vector<TraceEvent>& v) {
  std::string text;
  for (const TraceEvent& e : v) text += FormatTraceEvent(e) + "\n";
  return text;
}

TEST(TraceEvent, EveryKindRoundTrips) {
  const std::vector<TraceEvent> v = OneOfEach();
  auto back = ParseTrace(Lines(v));
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back.value().size(), v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    SCOPED_TRACE(FormatTraceEvent(v[i]));
    const TraceEvent& a = v[i];
    const TraceEvent& b = back.value()[i];
    EXPECT_EQ(FormatTraceEvent(b), FormatTraceEvent(a));
    EXPECT_EQ(b.kind, a.kind);
    EXPECT_EQ(b.spec.name, a.spec.name);
    EXPECT_EQ(b.spec.compute_ns_per_batch, a.spec.compute_ns_per_batch);
    EXPECT_EQ(b.order, a.order);
    EXPECT_EQ(b.samples.size(), a.samples.size());
    for (size_t k = 0; k < a.samples.size(); ++k) {
      EXPECT_EQ(b.samples[k].object, a.samples[k].object);
      EXPECT_EQ(b.samples[k].size, a.samples[k].size);
    }
    EXPECT_EQ(b.access.object, a.access.object);
    EXPECT_EQ(b.access.sample, a.access.sample);
    EXPECT_EQ(b.access.file, a.access.file);
    EXPECT_EQ(b.load_ns, a.load_ns);
    EXPECT_EQ(b.request_bytes, a.request_bytes);
    EXPECT_EQ(b.weigh_hits, a.weigh_hits);
    EXPECT_EQ(b.access.wait_ns, a.access.wait_ns);
  }
}

TEST(TraceEvent, AFormat2TraceIsStillRead) {
  auto r = ParseTrace(
      "{\"ev\":\"start\",\"policy\":\"future\",\"budget\":9,\"request_bytes\":0,\"format\":2}\n"
      "{\"ev\":\"hit\",\"o\":1,\"size\":2,\"job\":0,\"sample\":-1,\"t\":3}\n");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r.value()[0].weigh_hits);
  EXPECT_EQ(r.value()[1].access.wait_ns, 0u);
  auto bad = ParseTrace(
      "{\"ev\":\"start\",\"policy\":\"future\",\"budget\":9,\"request_bytes\":0,\"format\":3}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("weigh_hits: missing"), std::string::npos);
}

TEST(TraceEvent, InvalidUtf8IsReplacedNotThrown) {
  TraceEvent e;
  e.kind = TraceKind::kAddJob;
  e.spec = {3, std::string("bad\xff\xfe"), 1, 1, 1, 0};
  const std::string line = FormatTraceEvent(e);
  auto back = ParseTraceEvent(line, 1);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back.value().spec.name, "bad\xEF\xBF\xBD\xEF\xBF\xBD");  // U+FFFD twice
}

TEST(TraceEvent, BadLinesNameTheLine) {
  const std::string start = FormatTraceEvent(OneOfEach()[0]) + "\n";
  struct Case {
    std::string text, want;
  } cases[] = {
      {"", "the trace is empty"},
      {"\n  \n", "the trace is empty"},
      {"{\"ev\":\"hit\",\"o\":1,\"size\":1,\"job\":0,\"sample\":-1,\"t\":1}\n",
       "trace line 1: a trace begins with a \"start\" event"},
      {start + "not json\n", "trace line 2: not a JSON object"},
      {start + "[1,2]\n", "trace line 2: not a JSON object"},
      {start + "{\"ev\":\"fly\"}\n", "trace line 2: unknown event \"fly\""},
      {start + "{\"ev\":\"hit\",\"o\":1}\n", "trace line 2: size: missing"},
      {start + "{\"ev\":\"end_job\",\"job\":-1}\n", "trace line 2: job: expected an integer"},
      {start + "{\"ev\":\"end_job\",\"job\":4294967296}\n", "trace line 2: job: expected an integer"},
      {start + "{\"ev\":\"order\",\"job\":1,\"epoch\":0,\"order\":[1,\"x\"]}\n",
       "trace line 2: order: expected integers"},
      {start + "{\"ev\":\"samples\",\"job\":1,\"objects\":[1,2],\"sizes\":[3]}\n",
       "trace line 2: objects and sizes differ in length"},
      {"{\"ev\":\"start\",\"policy\":\"lru\",\"budget\":1,\"format\":9}\n",
       "trace line 1: format: this epochfs reads formats 2 to 5"},
      {start + "{\"ev\":\"hit\",\"o\":1,\"size\":1,\"job\":0,\"sample\":-1,\"t\":1,"
               "\"served\":\"late\"}\n",
       "trace line 2: served must be"},
      {start + "\n{\"ev\":\"budget\",\"budget\":\"big\"}\n", "trace line 3: budget: expected"},
  };
  for (const Case& c : cases) {
    auto r = ParseTrace(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.status().message().find(c.want), std::string::npos)
        << c.text << " -> " << r.status().message();
  }
}

// A policy that answers fixed things and counts the calls it gets.
class Counting final : public cache::Policy {
 public:
  const char* name() const override { return "counting"; }
  uint64_t budget() const override { return 1000; }
  uint64_t resident_bytes() const override { return 10; }
  cache::Decision OnHit(const cache::Access&) override {
    ++calls;
    return {false, {42}};
  }
  cache::Decision OnMiss(const cache::Access&, uint64_t) override {
    ++calls;
    return {true, {}};
  }
  void OnDropped(cache::ObjectId) override { ++calls; }
  void OnRefilled(const cache::Access& a) override {
    ++calls;
    refilled.push_back(a.object);
  }
  Status SetOrder(cache::JobId, uint32_t, std::vector<uint32_t>) override {
    ++calls;
    return InvalidArgument("no");
  }
  cache::Decision Progress(cache::JobId job, uint32_t epoch, uint64_t position,
                           uint64_t now_ns) override {
    ++calls;
    progress = {job, epoch, position, now_ns};
    return {false, {7}};
  }
  const cache::ReadOrder* read_order() const override { return &order; }
  struct Order final : cache::ReadOrder {
    uint64_t BytesLeft(cache::JobId job) const override { return 100 + job; }
    std::vector<cache::JobId> Sharers(cache::JobId) const override { return {3}; }
  } order;
  int calls = 0;
  std::vector<uint64_t> progress;
  std::vector<cache::ObjectId> refilled;
};

// The recorder is transparent: a job's progress reaches the wrapped policy
// (recorded, and replayed), and the wrapped policy's read order is offered.
// Before, a trace.file turned both off on a mount.
TEST(RecordingPolicy, ForwardsProgressAndOffersTheReadOrder) {
  auto inner = std::make_unique<Counting>();
  Counting* c = inner.get();
  std::vector<std::string> lines;
  auto p = MakeRecordingPolicy(std::move(inner), [&](const std::string& l) { lines.push_back(l); });
  EXPECT_EQ(p->Progress(2, 1, 40, 99).evict, std::vector<cache::ObjectId>{7});
  EXPECT_EQ(c->progress, (std::vector<uint64_t>{2, 1, 40, 99}));
  ASSERT_NE(p->read_order(), nullptr);
  EXPECT_EQ(p->read_order()->BytesLeft(5), 105u);
  EXPECT_EQ(p->read_order()->Sharers(5), std::vector<cache::JobId>{3});
  ASSERT_EQ(lines.size(), 2u);
  auto parsed = ParseTrace(lines[0] + "\n" + lines[1] + "\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const TraceEvent& e = parsed.value()[1];
  EXPECT_EQ(e.kind, TraceKind::kProgress);
  EXPECT_EQ(e.job, 2u);
  EXPECT_EQ(e.epoch, 1u);
  EXPECT_EQ(e.position, 40u);
  EXPECT_EQ(e.now_ns, 99u);
}

// A hit that waited says how: joined or refill, read back as written; a
// format 3 hit (no "served") was served at once.
TEST(TraceEvent, HitsThatWaitedSayHow) {
  TraceEvent e;
  e.kind = TraceKind::kHit;
  e.access = {5, 6, 1, 2, 3};
  for (auto served : {cache::Access::Served::kAtOnce, cache::Access::Served::kJoined,
                      cache::Access::Served::kRefill}) {
    e.access.served = served;
    auto back = ParseTraceEvent(FormatTraceEvent(e), 1);
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back.value().access.served, served);
  }
  auto old = ParseTraceEvent("{\"ev\":\"hit\",\"o\":1,\"size\":1,\"job\":0,\"sample\":-1,\"t\":1}", 1);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old.value().access.served, cache::Access::Served::kAtOnce);
}

TEST(RecordingPolicy, RecordsEachCallFirstAndForwardsTheAnswer) {
  auto inner = std::make_unique<Counting>();
  Counting* c = inner.get();
  std::vector<std::string> lines;
  auto p = MakeRecordingPolicy(std::move(inner), [&](const std::string& l) {
    lines.push_back(l);
    // start, then one line per call, each before the call reaches the policy
    if (lines.size() > 1) {
      EXPECT_EQ(lines.size(), static_cast<size_t>(c->calls) + 2) << l;
    }
  });
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "{\"budget\":1000,\"ev\":\"start\",\"format\":5,\"policy\":\"counting\","
            "\"request_bytes\":0,\"weigh_hits\":false}");
  EXPECT_EQ(p->OnHit({5, 6, 1, 2, 3}).evict, std::vector<cache::ObjectId>{42});
  EXPECT_TRUE(p->OnMiss({5, 6, 1, 2, 3}, 9).admit);
  p->OnDropped(5);
  EXPECT_EQ(p->SetOrder(1, 0, {0}).code(), Code::kInvalidArgument);
  cache::Access refill{5, 6, 1, 2, 4};
  refill.wait_ns = 70;
  p->OnRefilled(refill);
  EXPECT_EQ(c->refilled, std::vector<cache::ObjectId>{5});
  EXPECT_EQ(p->resident_bytes(), 10u);  // queries: forwarded, not recorded
  EXPECT_STREQ(p->name(), "counting");
  ASSERT_EQ(lines.size(), 6u);
  std::string text;
  for (const std::string& l : lines) text += l + "\n";
  auto parsed = ParseTrace(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed.value()[1].kind, TraceKind::kHit);
  EXPECT_EQ(parsed.value()[2].kind, TraceKind::kMiss);
  EXPECT_EQ(parsed.value()[2].load_ns, 9u);
  EXPECT_EQ(parsed.value()[3].kind, TraceKind::kDropped);
  EXPECT_EQ(parsed.value()[4].kind, TraceKind::kOrder);
  EXPECT_EQ(parsed.value()[5].kind, TraceKind::kRefilled);
  EXPECT_EQ(parsed.value()[5].access.object, 5u);
  EXPECT_EQ(parsed.value()[5].access.wait_ns, 70u);
}

}  // namespace
}  // namespace epochfs::trace
