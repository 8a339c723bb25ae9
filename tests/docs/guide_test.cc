// The README and the guide (issue 32): every relative link resolves (to a file, and to a heading where it
// names one), every command they show runs as shown, and every subcommand has a page that shows it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_support.h"
#include "run_process.h"

namespace trainplan {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::run_command;
using testing::run_result;
using testing::shell_quote;

const fs::path kSource = TRAINPLAN_SOURCE_DIR;

/// README.md and every page under docs/.
std::vector<fs::path> documents() {
  std::vector<fs::path> out = {kSource / "README.md"};
  for (const auto& e : fs::recursive_directory_iterator(kSource / "docs")) {
    if (e.is_regular_file() && e.path().extension() == ".md") out.push_back(e.path());
  }
  return out;
}

/// GitHub's anchor of a heading: lower case; letters, digits, '-' and '_' kept; spaces become '-'.
std::string slug(const std::string& heading) {
  std::string s;
  for (unsigned char c : heading) {
    if (std::isalnum(c) || c == '-' || c == '_') s += static_cast<char>(std::tolower(c));
    else if (c == ' ') s += '-';
    else if (c >= 0x80) s += static_cast<char>(c);  // letters beyond ASCII stay
  }
  return s;
}

std::set<std::string> anchors_of(const fs::path& file) {
  std::set<std::string> out;
  std::istringstream in(read_file(file.string()));
  bool fence = false;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("```")) fence = !fence;
    if (fence || !line.starts_with("#")) continue;
    out.insert(slug(line.substr(line.find_first_not_of('#') + 1)));
  }
  return out;
}

/// The text outside fenced code blocks: links in code are not links.
std::string prose_of(const std::string& text) {
  std::istringstream in(text);
  std::string out;
  bool fence = false;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("```")) {
      fence = !fence;
      continue;
    }
    if (!fence) out += line + "\n";
  }
  return out;
}

TEST(Guide, EveryRelativeLinkResolves) {
  const std::regex link(R"(\]\(([^)\s]+)\))");
  int checked = 0;
  for (const fs::path& doc : documents()) {
    const std::string text = prose_of(read_file(doc.string()));
    for (auto it = std::sregex_iterator(text.begin(), text.end(), link); it != std::sregex_iterator(); ++it) {
      const std::string target = (*it)[1].str();
      if (target.starts_with("http://") || target.starts_with("https://") || target.starts_with("mailto:")) continue;
      const std::size_t hash = target.find('#');
      const std::string file_part = target.substr(0, hash);
      const fs::path file = file_part.empty() ? doc : (doc.parent_path() / file_part).lexically_normal();
      EXPECT_TRUE(fs::exists(file)) << doc.lexically_relative(kSource) << ": link to " << target << " goes nowhere";
      if (hash != std::string::npos && fs::is_regular_file(file) && file.extension() == ".md") {
        EXPECT_TRUE(anchors_of(file).count(target.substr(hash + 1)))
            << doc.lexically_relative(kSource) << ": no heading " << target;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 40);
}

/// The `trainplan …` commands of the ```sh blocks of README.md and docs/guide/*.md, continuation lines
/// joined, comments cut, `a; b` split. Lines naming a path to fill in (path/to/, "...") or following a log
/// forever (--follow) are shown, not run.
std::vector<std::pair<std::string, std::string>> shown_commands() {
  std::vector<fs::path> docs = {kSource / "README.md"};
  for (const auto& e : fs::directory_iterator(kSource / "docs" / "guide")) {
    if (e.path().extension() == ".md") docs.push_back(e.path());
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (const fs::path& doc : docs) {
    std::istringstream in(read_file(doc.string()));
    bool sh = false;
    std::string joined;
    for (std::string line; std::getline(in, line);) {
      if (line.starts_with("```")) {
        sh = !sh && line.find("sh") != std::string::npos;
        continue;
      }
      if (!sh) continue;
      const std::size_t first = line.find_first_not_of(' ');
      if (first == std::string::npos) continue;
      joined += line.substr(joined.empty() ? first : 0);
      if (!joined.empty() && joined.back() == '\\') {
        joined.pop_back();
        continue;
      }
      std::string cmd = joined.substr(0, joined.find("  #"));
      joined.clear();
      std::stringstream parts(cmd);
      for (std::string part; std::getline(parts, part, ';');) {
        part = part.substr(0, part.find("||"));
        part.erase(0, part.find_first_not_of(' '));
        if (!part.starts_with("trainplan ") && part != "trainplan") continue;
        if (part.find("path/to/") != std::string::npos || part.find("...") != std::string::npos ||
            part.find("…") != std::string::npos || part.find("--follow") != std::string::npos) {
          continue;
        }
        out.emplace_back(doc.filename().string(), part);
      }
    }
  }
  return out;
}

TEST(Guide, EveryCommandShownRuns) {
  // A scratch folder stands in for the reader's: examples/ and calibration/ as in the repository, and the
  // files the pages name as the reader's own (my-runs.csv: BLOOM's final measurements; train.log: the
  // synthetic slow-GPU log; mycluster.json: the committed H100 profile). --html pages are written there.
  const fs::path dir = fs::path(::testing::TempDir()) / "trainplan_guide";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::create_directory_symlink(kSource / "examples", dir / "examples");
  fs::create_directory_symlink(kSource / "calibration", dir / "calibration");
  fs::copy_file(fs::path(TRAINPLAN_TEST_DATA_DIR) / "bloom-final-measurements.csv", dir / "my-runs.csv");
  fs::copy_file(fs::path(TRAINPLAN_TEST_DATA_DIR) / "logs" / "bloom_slow_gpu.log", dir / "train.log");
  fs::copy_file(kSource / "calibration" / "h100-sxm5-80gb-2026-11-22" / "profile.json", dir / "mycluster.json");
  const auto commands = shown_commands();
  EXPECT_GT(commands.size(), 40u);
  for (const auto& [doc, cmd] : commands) {
    std::istringstream words(cmd.substr(std::string("trainplan").size()));
    std::vector<std::string> args;
    for (std::string w; words >> w;) {
      if (w.size() >= 2 && w.front() == '"' && w.back() == '"') w = w.substr(1, w.size() - 2);
      args.push_back(w);
    }
    const run_result r = run_command("cd " + shell_quote(dir.string()) + " && " + shell_quote(TRAINPLAN_BINARY), args);
    EXPECT_EQ(r.status, 0) << doc << ": " << cmd << "\n" << r.err.substr(0, 500);
  }
}

TEST(Guide, EverySubcommandHasAPageThatShowsIt) {
  std::string guide;
  for (const auto& e : fs::directory_iterator(kSource / "docs" / "guide")) guide += read_file(e.path().string());
  const std::string help = testing::run({"--help"}).out;
  const std::regex subcommand(R"(\n  ([a-z]+) {2,})");
  int n = 0;
  for (auto it = std::sregex_iterator(help.begin(), help.end(), subcommand); it != std::sregex_iterator(); ++it) {
    const std::string cmd = (*it)[1].str();
    EXPECT_TRUE(std::regex_search(guide, std::regex("\ntrainplan " + cmd + "[ ;\n]")))
        << "trainplan " << cmd << " is shown on no page of docs/guide";
    ++n;
  }
  EXPECT_EQ(n, 14);
}

}  // namespace
}  // namespace trainplan
