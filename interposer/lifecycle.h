// Library start-up and shutdown: constructor, exit handlers, fork handling.
#pragma once

#include "gmemhook/format.h"

namespace gmemhook {
void init_resolvers();

// Records the end of the process (once) and prints the one-line summary.
void finish(format::EndHow how, int status);
}
