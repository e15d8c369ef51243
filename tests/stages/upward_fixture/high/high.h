// A higher stage, including the lower one as it may: with low.h's include, a cycle too.
#pragma once

#include "tests/stages/upward_fixture/low/low.h"
