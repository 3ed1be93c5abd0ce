// libsystemc.so carries a main() that calls sc_main, so every program linking it must
// define one. The fuzzers have libFuzzer's main() and never start SystemC.
extern "C" int sc_main(int, char**) { return 0; }
