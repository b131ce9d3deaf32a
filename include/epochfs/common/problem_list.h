// ProblemList: what a file loader found wrong, reported all at once.
//
// A loader (config, model and workload files) adds one message per problem
// with its source position; Finish() returns Ok when there was none, else one
// InvalidArgument whose message has one line per problem in file order
// (line, then column; problems without a position, line 0, come first).
// Thread safety: none; one loader owns one list.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "epochfs/common/status.h"

namespace epochfs {

class ProblemList {
 public:
  void Add(uint32_t line, uint32_t column, std::string text) {
    problems_.push_back({line, column, std::move(text)});
  }
  bool empty() const { return problems_.empty(); }

  Status Finish() {
    if (problems_.empty()) return Status::Ok();
    std::stable_sort(problems_.begin(), problems_.end(), [](const Problem& a, const Problem& b) {
      return a.line != b.line ? a.line < b.line : a.column < b.column;
    });
    std::string msg;
    for (const Problem& p : problems_) {
      if (!msg.empty()) msg += '\n';
      msg += p.text;
    }
    return InvalidArgument(std::move(msg));
  }

 private:
  struct Problem {
    uint32_t line;
    uint32_t column;
    std::string text;
  };
  std::vector<Problem> problems_;
};

}  // namespace epochfs
