// The one field ↔ flag table (issue 26): the core names the job's fields (${parallel.tp}) and knows no
// flags; the command line names each field by the flag whose row says it sets it. Every field a core
// message can name must have a flag (and so a Python keyword), or be a model file's own field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "trainplan/cli/cli.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/search/search.h"

namespace trainplan {
namespace {

namespace fs = std::filesystem;

/// The string literals of every core source file, comments left out.
std::vector<std::pair<std::string, std::string>> core_literals() {
  std::vector<std::pair<std::string, std::string>> out;
  const std::regex literal(R"lit("((?:[^"\\]|\\.)*)")lit");
  for (const char* root : {"/src/core", "/include/trainplan/core"}) {
    for (const auto& e : fs::recursive_directory_iterator(std::string(TRAINPLAN_SOURCE_DIR) + root)) {
      if (!e.is_regular_file()) continue;
      std::ifstream in(e.path());
      std::string line;
      while (std::getline(in, line)) {
        const std::size_t comment = line.find("//");
        const std::string code = comment == std::string::npos ? line : line.substr(0, comment);
        for (auto it = std::sregex_iterator(code.begin(), code.end(), literal); it != std::sregex_iterator(); ++it) {
          out.emplace_back(e.path().filename().string(), (*it)[1].str());
        }
      }
    }
  }
  return out;
}

TEST(FieldFlags, EveryFieldTheCoreNamesHasAFlagOrIsAModelFileField) {
  std::set<std::string> flags;
  for (const char* command : {"job", "search", "shapes", "plan", "logs"}) {
    for (const command_flag& f : command_flags(command)) {
      flags.insert(f.name);
      for (const std::string& a : f.aliases) flags.insert(a);
    }
  }
  const std::regex field(R"(\$\{([a-z_.]+)\})");
  std::set<std::string> fields;
  for (const auto& [file, text] : core_literals()) {
    for (auto it = std::sregex_iterator(text.begin(), text.end(), field); it != std::sregex_iterator(); ++it) {
      fields.insert((*it)[1].str());
    }
  }
  ASSERT_GT(fields.size(), 60u);  // the scan found the core's messages
  for (const std::string& f : fields) {
    const std::string named = flag_of_field(f);
    if (named.starts_with("--")) {
      EXPECT_TRUE(flags.count(named)) << f << " → " << named << ": no command takes that flag (nor Python)";
    } else {
      EXPECT_TRUE(f.starts_with("model.") && named.starts_with("model field '"))
          << f << " reaches the user as '" << named << "': give its flag row the field";
    }
  }
}

TEST(FieldFlags, TheCoreSpellsNoFlag) {
  // Flags are the command line's; the core's messages name fields.
  const std::regex flag(R"((^|[^a-z0-9-])--[a-z][a-z0-9-]+)");
  for (const auto& [file, text] : core_literals()) {
    EXPECT_FALSE(std::regex_search(text, flag)) << file << ": \"" << text << "\"";
  }
}

TEST(FieldFlags, TheSearchsZeroStageRuleNamesItsFlag) {
  // The issue's leak: "space.zero_stage keeps none of the ZeRO stages …".
  const search_request req = parse_search_request({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-nodes", "1",
                                                   "--gbs", "8", "--framework", "deepspeed", "--zero-stage", "2",
                                                   "--pp", "1,2", "--tp", "1", "--mbs", "3"});
  try {
    run_search(req.base.job, req.space);
    FAIL() << "nothing divides";
  } catch (const input_error& e) {
    EXPECT_THAT(cli_message(e), ::testing::Not(::testing::HasSubstr("space.")));
    EXPECT_THAT(cli_message(e), ::testing::HasSubstr("--zero-stage"));
  }
}

}  // namespace
}  // namespace trainplan
