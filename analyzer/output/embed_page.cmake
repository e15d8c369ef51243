# Writes the HTML report's template (output/html/report.html) into a C++ source file as one raw
# string, so the gmemhook binary carries the page and needs no file beside it at run time.
# Usage: cmake -DIN=report.html -DOUT=report_page.cpp -P embed_page.cmake
file(READ "${IN}" page)
string(FIND "${page}" ")gmemhook_page\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw string's end marker")
endif()
file(WRITE "${OUT}" "// Generated from ${IN} by embed_page.cmake; do not edit.\n"
                    "namespace gmemhook::analysis {\n"
                    "extern const char* const kReportPageTemplate;\n"
                    "const char* const kReportPageTemplate = R\"gmemhook_page(${page})gmemhook_page\";\n"
                    "}  // namespace gmemhook::analysis\n")
