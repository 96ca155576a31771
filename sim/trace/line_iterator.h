// SPDX-License-Identifier: GPL-2.0-only
// The one line-counting character iterator of the JSON readers: the trace
// parser (sim/trace/parse.cc: text in memory, a file read in chunks) and the
// AgentCgroup importer (sim/import/agentcgroup_task.cc: a std::istream) feed
// nlohmann's parser through it, so "line N" in an error means the same in
// every reader.
//
// Invariants: LineCountingIterator<Source> is an input iterator over a
// Source with get() / advance() / at_end(); it counts a newline when it steps
// over it; a default-constructed iterator is the end, and two iterators are
// equal when both are at the end or neither is (nlohmann only compares an
// iterator with the end); more than LineCounter::kMaxBlankRun blanks in a
// row end the text. Copies share the source and the counter.
// Who calls it: sim/trace/parse.cc, sim/import/agentcgroup_task.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <istream>
#include <iterator>
#include <string>
#include <vector>

namespace agentcg::trace {

// Shared newline counter. `line_before_last` is the line before the most
// recently consumed character: nlohmann's lexer reads one character past a
// number before it reports it, so a number's line is the line before that
// look-ahead.
//
// Blank runs: nlohmann's lexer keeps every character it skips before a
// token in its error-message buffer, so a file of 2 GB of blanks would be
// held whole. The iterator therefore ends the text after kMaxBlankRun
// blanks in a row and sets `blank_run_too_long`; the reader turns the
// resulting syntax error into "too many blanks in a row" at `line`.
struct LineCounter {
  static constexpr std::uint64_t kMaxBlankRun = std::uint64_t{1} << 20;  // 1 MiB
  std::uint32_t line = 1;
  std::uint32_t line_before_last = 1;
  std::uint64_t blank_run = 0;
  bool blank_run_too_long = false;

  // The message of every reader when blank_run_too_long ended the text.
  static std::string blank_run_message() {
    return "more than " + std::to_string(kMaxBlankRun) +
           " blanks in a row; expected JSON with shorter runs of whitespace";
  }
};

// Text already in memory, [begin, end).
class TextSource {
 public:
  TextSource(const char* begin, const char* end) : p_(begin), end_(end) {}
  bool at_end() const { return p_ >= end_; }
  char get() const { return *p_; }
  void advance() { ++p_; }

 private:
  const char* p_;
  const char* end_;
};

// A FILE read 64 KiB at a time (a trace file is never held whole).
class FileChunks {
 public:
  explicit FileChunks(std::FILE* f) : f_(f), buf_(std::size_t{1} << 16) { refill(); }
  bool at_end() const { return pos_ >= len_; }
  char get() const { return buf_[pos_]; }
  void advance() {
    if (++pos_ >= len_) refill();
  }
  // A read error ended the text early (not the end of the file).
  bool failed() const { return failed_; }

 private:
  void refill() {
    len_ = std::fread(buf_.data(), 1, buf_.size(), f_);
    pos_ = 0;
    if (len_ == 0 && std::ferror(f_) != 0) failed_ = true;
  }
  std::FILE* f_;
  std::vector<char> buf_;
  std::size_t pos_ = 0;
  std::size_t len_ = 0;
  bool failed_ = false;
};

// A std::istream (the importers' files).
class StreamSource {
 public:
  explicit StreamSource(std::istream& in) : it_(in) {}
  bool at_end() const { return it_ == std::istreambuf_iterator<char>(); }
  char get() const { return *it_; }
  void advance() { ++it_; }

 private:
  std::istreambuf_iterator<char> it_;
};

template <typename Source>
class LineCountingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = char;

  LineCountingIterator() = default;
  LineCountingIterator(Source* src, LineCounter* counter) : src_(src), counter_(counter) {}
  char operator*() const { return src_->get(); }
  LineCountingIterator& operator++() {
    counter_->line_before_last = counter_->line;
    const char c = src_->get();
    if (c == '\n') ++counter_->line;
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      if (++counter_->blank_run > LineCounter::kMaxBlankRun) counter_->blank_run_too_long = true;
    } else {
      counter_->blank_run = 0;
    }
    src_->advance();
    return *this;
  }
  bool operator==(const LineCountingIterator& o) const { return done() == o.done(); }
  bool operator!=(const LineCountingIterator& o) const { return !(*this == o); }

 private:
  bool done() const { return src_ == nullptr || counter_->blank_run_too_long || src_->at_end(); }
  Source* src_ = nullptr;
  LineCounter* counter_ = nullptr;
};

}  // namespace agentcg::trace
