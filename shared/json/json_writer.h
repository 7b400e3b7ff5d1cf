// File: shared/json/json_writer.h
//
// A minimal streaming JSON writer that appends to a std::string. Used on the hot read paths
// (node show, node detail pages) where building an nlohmann tree and dumping it costs several
// times more. Stored JSON documents are spliced in verbatim with raw(); keys known to be plain
// ASCII identifiers skip escaping with safeKey().
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

class JsonWriter {
 public:
  JsonWriter() {
    out_.reserve(1024);
    first_.reserve(8);
  }

  void beginObject() { prefix(); out_.push_back('{'); first_.push_back(1); }
  void endObject() { out_.push_back('}'); first_.pop_back(); }
  void beginArray() { prefix(); out_.push_back('['); first_.push_back(1); }
  void endArray() { out_.push_back(']'); first_.pop_back(); }

  /// Writes an object key; the next value call writes its value.
  void key(std::string_view name) {
    prefix();
    escapeTo(out_, name);
    out_.push_back(':');
    afterKey_ = true;
  }

  /// Like key() for names the caller guarantees need no escaping (schema field names).
  void safeKey(std::string_view name) {
    prefix();
    out_.push_back('"');
    out_.append(name);
    out_.append("\":", 2);
    afterKey_ = true;
  }

  void string(std::string_view value) { prefix(); escapeTo(out_, value); }
  /// One string value made of several parts, each escaped, without building a temporary.
  void stringParts(std::initializer_list<std::string_view> parts);
  void boolean(bool value) { prefix(); out_ += value ? "true" : "false"; }
  void integer(int64_t value);
  void null() { prefix(); out_ += "null"; }
  /// Splices an already-serialised JSON value.
  void raw(std::string_view json) { prefix(); out_ += json; }

  /// Writes a key and a string value.
  void field(std::string_view name, std::string_view value) { key(name); string(value); }

  void reserve(size_t bytes) { out_.reserve(bytes); }
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
      first_.back() = 0;
    }
  }
  static void escapeBody(std::string& out, std::string_view value);

  std::string out_;
  std::vector<uint8_t> first_;
  bool afterKey_ = false;
};

}  // namespace kiln
