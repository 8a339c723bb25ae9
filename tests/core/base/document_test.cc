// The YAML/JSON document tree (include/trainplan/core/base/document.h): keys in file order with their lines,
// numbers as written, duplicate keys refused per mapping, and top-level sections a caller does not read left
// unbuilt without changing anything else.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "trainplan/core/base/document.h"
#include "trainplan/core/base/error.h"

namespace trainplan::detail {
namespace {

using ::testing::HasSubstr;

std::string error_of(const std::string& text, std::span<const std::string_view> unread = {}) {
  try {
    parse_document(text, "d.yaml", false, "config", "sections", unread);
  } catch (const input_error& e) {
    return e.what();
  }
  return "";
}

TEST(Document, KeysKeepFileOrderLinesAndNumbers) {
  const document d = parse_document("b:\n  y: 1.50\n  x: 2\na: text\n", "d.yaml", false);
  ASSERT_TRUE(d.root.is_object());
  std::vector<std::string> keys;
  for (auto it = d.root.begin(); it != d.root.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"b", "a"}));
  std::vector<std::string> nested;
  for (auto it = d.root["b"].begin(); it != d.root["b"].end(); ++it) nested.push_back(it.key());
  EXPECT_EQ(nested, (std::vector<std::string>{"y", "x"}));
  EXPECT_EQ(d.lines.at("b.x"), 3);
  EXPECT_EQ(d.lines.at("a"), 4);
  EXPECT_EQ(d.numbers.at("b.y"), "1.50");
  EXPECT_EQ(d.root["b"]["x"], 2);
  EXPECT_EQ(d.root["a"], "text");
}

TEST(Document, DuplicateKeysRefusedPerMapping) {
  EXPECT_EQ(error_of("a:\n  x: 1\n  x: 2\n"), "d.yaml:3: duplicate key 'a.x'");
  EXPECT_EQ(error_of("a: 1\nb: 2\na: 3\n"), "d.yaml:3: duplicate key 'a'");
  // The same name in two mappings, or in two elements of a sequence, is two keys.
  EXPECT_EQ(error_of("a:\n  x: 1\nb:\n  x: 2\nl:\n  - x: 1\n  - x: 2\n"), "");
}

TEST(Document, UnreadSectionsKeepTheirLineButNotTheirContents) {
  const std::vector<std::string_view> unread = {"logger", "level"};
  const document d = parse_document("model:\n  n: 2\nlogger:\n  a: 1\n  deep: {b: [1, 2, {c: 3}]}\nlevel: 20\n",
                                    "d.yaml", false, "config", "sections", unread);
  EXPECT_EQ(d.root["model"]["n"], 2);
  EXPECT_EQ(d.root["logger"], json::object());  // not built
  EXPECT_EQ(d.lines.at("logger"), 3);
  EXPECT_FALSE(d.lines.contains("logger.a"));
  EXPECT_EQ(d.root["level"], 20);  // a scalar there is kept as it is
  // Nesting inside an unread section is still bounded.
  std::string deep = "logger:\n";
  for (int i = 0; i < 70; ++i) deep += std::string(static_cast<std::size_t>(2 * i + 2), ' ') + "k:\n";
  EXPECT_THAT(error_of(deep, unread), HasSubstr("nested deeper than 64 levels"));
}

TEST(Document, AnAnchorAnywhereBuildsEverySection) {
  const std::vector<std::string_view> unread = {"logger"};
  const document d = parse_document("logger: &l\n  a: 1\nmodel:\n  copy: *l\n", "d.yaml", false, "config", "sections",
                                    unread);
  EXPECT_EQ(d.root["logger"]["a"], 1);
  EXPECT_EQ(d.root["model"]["copy"]["a"], 1);
  EXPECT_EQ(d.lines.at("model.copy.a"), 2);
}

}  // namespace
}  // namespace trainplan::detail
