// b's source, including a.h: no file includes itself round, but parts a and b need each other.
#include "tests/stages/parts_fixture/one/b.h"

#include "tests/stages/parts_fixture/one/a.h"
