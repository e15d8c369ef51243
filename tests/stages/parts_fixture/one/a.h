// A header that needs b.h, whose own source needs this header back: with --parts, a cycle.
#pragma once

#include "tests/stages/parts_fixture/one/b.h"
