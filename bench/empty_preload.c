/* The torch loop benchmark's control (bench/torch_loop_bench.py, mode preload-empty): a shared
   library that defines nothing, preloaded the way libgmemhook.so is. What it costs is what any
   LD_PRELOAD costs (one more object in every symbol lookup); gmemhook's own overhead is what the
   hook adds beyond it. */
int gmemhook_empty_preload_marker;
