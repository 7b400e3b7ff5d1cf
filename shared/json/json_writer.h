// File: shared/json/json_writer.h
//
// A minimal streaming JSON writer that appends to a std::string. Used on the hot read paths
// (node show, node detail pages) where building an nlohmann tree and dumping it costs several
// times more. Stored JSON documents are spliced in verbatim with raw(); keys known to be plain
// ASCII identifiers skip escaping with safeKey().
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

class JsonWriter {
 public:
  JsonWriter() {
    buf_.resize(1024);
    first_.reserve(8);
  }

  void beginObject() { prefix(); put('{'); first_.push_back(1); }
  void endObject() { put('}'); first_.pop_back(); }
  void beginArray() { prefix(); put('['); first_.push_back(1); }
  void endArray() { put(']'); first_.pop_back(); }

  /// Writes an object key; the next value call writes its value.
  void key(std::string_view name) {
    prefix();
    quoted(name);
    put(':');
    afterKey_ = true;
  }

  /// Like key() for names the caller guarantees need no escaping (schema field names).
  void safeKey(std::string_view name) {
    prefix();
    ensure(name.size() + 3);
    char* p = buf_.data() + len_;
    p[0] = '"';
    std::memcpy(p + 1, name.data(), name.size());
    p[name.size() + 1] = '"';
    p[name.size() + 2] = ':';
    len_ += name.size() + 3;
    afterKey_ = true;
  }

  void string(std::string_view value) { prefix(); quoted(value); }
  /// One string value made of several parts, each escaped, without building a temporary.
  void stringParts(std::initializer_list<std::string_view> parts);
  void boolean(bool value) { prefix(); value ? put("true", 4) : put("false", 5); }
  void integer(int64_t value);
  void null() { prefix(); put("null", 4); }
  /// Splices an already-serialised JSON value.
  void raw(std::string_view json) { prefix(); put(json.data(), json.size()); }

  /// Writes a key and a string value.
  void field(std::string_view name, std::string_view value) { key(name); string(value); }

  void reserve(size_t bytes) {
    if (bytes > buf_.size()) buf_.resize(bytes);
  }
  /// The JSON written so far.
  std::string& str() {
    buf_.resize(len_);
    return buf_;
  }
  std::string take() {
    buf_.resize(len_);
    len_ = 0;
    return std::move(buf_);
  }

  /// Appends `value` JSON-escaped and quoted to `out`.
  static void escapeTo(std::string& out, std::string_view value);

 private:
  // The output is buf_[0, len_): buf_ is kept larger than the text so that appending a
  // character is a store and an increment (std::string::push_back is not inlined here).
  void ensure(size_t more) {
    if (len_ + more > buf_.size()) grow(more);
  }
  void grow(size_t more);
  void put(char c) {
    ensure(1);
    buf_[len_++] = c;
  }
  void put(const char* data, size_t n) {
    if (n == 0) return;  // data may be null (an empty string_view): memcpy must not see it
    ensure(n);
    std::memcpy(buf_.data() + len_, data, n);
    len_ += n;
  }
  void quoted(std::string_view value) {
    put('"');
    escapeBody(value);
    put('"');
  }
  void prefix() {
    if (afterKey_) {
      afterKey_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) {
        put(',');
      }
      first_.back() = 0;
    }
  }
  void escapeBody(std::string_view value);

  std::string buf_;
  size_t len_ = 0;
  std::vector<uint8_t> first_;
  bool afterKey_ = false;
};

}  // namespace kiln
