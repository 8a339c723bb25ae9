// docs/formulas.md is what every number cites (§x.y): its numbered sections are in order, and every
// section the code, the tests and the docs cite exists (issue 26).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::vector<int> numbers_of(const std::string& dotted) {
  std::vector<int> n;
  std::stringstream in(dotted);
  std::string part;
  while (std::getline(in, part, '.')) n.push_back(std::stoi(part));
  return n;
}

/// The numbered headings of docs/formulas.md, in file order ("3.4.1"); a heading "3.1 …, 3.2 …, 3.3 …"
/// numbers all three.
std::vector<std::string> sections() {
  std::ifstream in(std::string(TRAINPLAN_SOURCE_DIR) + "/docs/formulas.md");
  const std::regex heading(R"(^#{2,4} (\d+(?:\.\d+)*)\.? )");
  const std::regex more(R"(, (\d+(?:\.\d+)+) )");
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, heading)) continue;
    out.push_back(m[1].str());
    for (auto it = std::sregex_iterator(line.begin(), line.end(), more); it != std::sregex_iterator(); ++it) {
      out.push_back((*it)[1].str());
    }
  }
  return out;
}

TEST(Formulas, SectionsAreInOrder) {
  const std::vector<std::string> s = sections();
  ASSERT_GT(s.size(), 80u);
  for (std::size_t i = 1; i < s.size(); ++i) {
    EXPECT_LT(numbers_of(s[i - 1]), numbers_of(s[i])) << "§" << s[i] << " follows §" << s[i - 1];
  }
}

TEST(Formulas, EveryCitedSectionExists) {
  const std::vector<std::string> list = sections();
  const std::set<std::string> have(list.begin(), list.end());
  // A § of another document is cited with its name nearby ("arXiv 2412.19437 §2.1.1", "report §3.2.2",
  // "Korthikanti et al. 2022, §4.1").
  const std::regex cite(R"(§ ?(\d+(?:\.\d+)*))");
  const std::regex foreign(R"((arXiv|report|et al\.|paper|Table)[^§]{0,30}$)");
  int cited = 0;
  for (const char* root : {"src", "include", "tests", "apps", "bench", "python", "perf", "fuzz", "docs"}) {
    for (const auto& e : fs::recursive_directory_iterator(std::string(TRAINPLAN_SOURCE_DIR) + "/" + root)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cc" && ext != ".h" && ext != ".md" && ext != ".py" && ext != ".in")) continue;
      std::ifstream in(e.path());
      std::string line;
      int line_no = 0;
      while (std::getline(in, line)) {
        ++line_no;
        for (auto it = std::sregex_iterator(line.begin(), line.end(), cite); it != std::sregex_iterator(); ++it) {
          const std::string before = line.substr(0, static_cast<std::size_t>(it->position()));
          if (std::regex_search(before, foreign)) continue;
          ++cited;
          EXPECT_TRUE(have.count((*it)[1].str()))
              << e.path().string() << ":" << line_no << " cites §" << (*it)[1].str() << ", which docs/formulas.md lacks";
        }
      }
    }
  }
  EXPECT_GT(cited, 300);
}

}  // namespace
