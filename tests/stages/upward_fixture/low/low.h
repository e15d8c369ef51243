// A lower stage that includes from a higher one: what check_stages.py must refuse.
#pragma once

#include "tests/stages/upward_fixture/high/high.h"
