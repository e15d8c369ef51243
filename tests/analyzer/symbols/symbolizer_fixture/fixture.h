// The symbolizer test's fixture library: functions whose return addresses are captured at known
// source lines, built with -g -O2 as a user's library would be.
#pragma once

#include <cstdint>

extern "C" {

// Source lines of the captured calls, filled in as each function runs (the expected file:line).
struct FixtureLines {
  int plain_call;       // fixture_plain's call of the capture function
  int inlined_call;     // the call in gmh_fixture::capture_inlined (inlined into triple)
  int nested_site;      // gmh_fixture::triple's call of capture_inlined
  int inline_site;      // fixture_with_inline's call of gmh_fixture::triple (inlined into it)
  int namespaced_call;  // gmh_fixture::scaled's call of the capture function
};
extern FixtureLines fixture_lines;

// The return address of the latest fixture_capture call: an address inside the calling function.
extern uintptr_t fixture_return_address;
void fixture_capture();

int fixture_plain(int x);
int fixture_with_inline(int x);
int fixture_nodebug(int x);  // from the library built without debug info
}

namespace gmh_fixture {
int scaled(int x);
}
