// Library start-up and shutdown: constructor, exit handlers, fork handling.
#pragma once

#include "gmemhook/format.h"

namespace gmemhook {

// Records the end of the process (once) and prints the one-line summary.
void finish(format::EndHow how, int status);

// exec_hooks.cpp: resolved in the constructor; around an exec, the end record says "exec", and
// an exec that failed (the image runs on) lets the real end be recorded again later.
void init_exec_hooks();
void before_exec();
void exec_failed();
}  // namespace gmemhook
