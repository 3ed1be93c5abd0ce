# Run by `cmake --install`: the installed headers include one another as
# "kernbench/<layer>/..." (the source tree writes "<layer>/..."), so a consumer needs only
# <prefix>/include on its include path and includes <kernbench/vp/accelerator.h>.
set(dir "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/${KERNBENCH_HEADER_DIR}")
file(GLOB_RECURSE headers "${dir}/*.h")
foreach(header IN LISTS headers)
  file(READ "${header}" text)
  string(REGEX REPLACE "#include \"(${KERNBENCH_HEADER_LAYERS})/" "#include \"kernbench/\\1/" text "${text}")
  file(WRITE "${header}" "${text}")
endforeach()
