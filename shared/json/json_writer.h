// File: shared/json/json_writer.h
//
// A minimal streaming JSON writer that appends to a std::string. Used on the hot read paths
// (node show, node detail pages) where building an nlohmann tree and dumping it costs several
// times more. Stored JSON documents are spliced in verbatim with raw().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

class JsonWriter {
 public:
  JsonWriter() { out_.reserve(1024); }

  void beginObject() { prefix(); out_.push_back('{'); first_.push_back(true); }
  void endObject() { out_.push_back('}'); first_.pop_back(); }
  void beginArray() { prefix(); out_.push_back('['); first_.push_back(true); }
  void endArray() { out_.push_back(']'); first_.pop_back(); }

  /// Writes an object key; the next value call writes its value.
  void key(std::string_view name) {
    prefix();
    appendString(name);
    out_.push_back(':');
    afterKey_ = true;
  }

  void string(std::string_view value) { prefix(); appendString(value); }
  void boolean(bool value) { prefix(); out_ += value ? "true" : "false"; }
  void integer(int64_t value) { prefix(); out_ += std::to_string(value); }
  void null() { prefix(); out_ += "null"; }
  /// Splices an already-serialised JSON value.
  void raw(std::string_view json) { prefix(); out_ += json; }

  /// Writes a key and a string value.
  void field(std::string_view name, std::string_view value) { key(name); string(value); }

  std::string& str() { return out_; }
  std::string take() { return std::move(out_); }

  /// Appends `value` JSON-escaped and quoted to `out`.
  static void escapeTo(std::string& out, std::string_view value);

 private:
  void prefix() {
    if (afterKey_) {
      afterKey_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) {
        out_.push_back(',');
      }
      first_.back() = false;
    }
  }
  void appendString(std::string_view value) { escapeTo(out_, value); }

  std::string out_;
  std::vector<bool> first_;
  bool afterKey_ = false;
};

}  // namespace kiln
