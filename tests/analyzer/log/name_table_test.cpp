// The names printed for the analyzer's enums (name_table.h lists them in declaration order): each
// member keeps its own name when members are added or moved.
#include "analyzer/log/name_table.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "analyzer/live/top_view.h"
#include "analyzer/reports/diff_match.h"
#include "analyzer/reports/report_common.h"
#include "analyzer/symbols/user_code.h"

namespace gmemhook::analysis {
namespace {

// The members' names, space-separated.
template <typename Enum>
std::string names(std::initializer_list<Enum> members, const char* (*name)(Enum)) {
  std::string s;
  for (Enum m : members) s += std::string(s.empty() ? "" : " ") + name(m);
  return s;
}

TEST(NameTable, EachMemberHasItsName) {
  using S = ProcessState;
  using O = CodeOwner;
  using D = SiteStatus;
  using M = Moment;
  EXPECT_EQ(names({S::Starting, S::Running, S::Exited, S::Killed, S::Damaged}, to_string),
            "starting running exited killed damaged");
  EXPECT_EQ(names({O::User, O::Cuda, O::Framework, O::Interpreter, O::Runtime}, to_string),
            "user cuda framework interpreter runtime");
  EXPECT_EQ(names({D::Grown, D::Shrunk, D::New, D::Gone, D::Same}, status_name),
            "grown shrunk new gone same");
  EXPECT_EQ(names({M::Peak, M::FirstFailure, M::Time, M::Seq, M::End}, moment_name),
            "peak first-failure time seq end");
}

TEST(NameTable, AValuePastTheListIsAQuestionMark) {
  enum class Two { A, B, C };
  EXPECT_STREQ(name_in(Two::B, {"a", "b"}), "b");
  EXPECT_STREQ(name_in(Two::C, {"a", "b"}), "?");
}

}  // namespace
}  // namespace gmemhook::analysis
