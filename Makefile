# The two commands of the README: `make run` and `make test`. Both print their setup and
# build in a few lines (the compiler's in BUILD/build.log); `make run V=1` prints it all.
BUILD ?= build/release
JOBS ?= 2
export V

.PHONY: setup configure program build run test fast fuzz asan clean

setup:
	@scripts/setup.sh

configure: setup
	@echo "configure: $(BUILD) (Release)"
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null

# The program alone (what `make run` needs); `build` adds the test suites.
program: configure
	@scripts/build.sh $(BUILD) $(JOBS) kernbench

build: configure
	@scripts/build.sh $(BUILD) $(JOBS)

run: program
	@$(BUILD)/kernbench

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	scripts/fuzz.sh 30
	scripts/compiler_parity.sh $(BUILD)

# A profile-guided build of the program for long runs and sweeps: build/fast/kernbench.
fast: setup
	scripts/build_pgo.sh build/fast

# The fuzz targets for FUZZ_SECONDS each (the long run of BENCHMARKS.md: 600).
FUZZ_SECONDS ?= 600
fuzz: setup
	scripts/fuzz.sh $(FUZZ_SECONDS)

# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer.
asan: setup
	scripts/asan.sh

clean:
	rm -rf build
