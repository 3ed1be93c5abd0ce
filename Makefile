# The two commands of the README: `make run` and `make test`.
BUILD ?= build/release
JOBS ?= 2

.PHONY: setup build run test fuzz asan clean

setup:
	@scripts/setup.sh

build: setup
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/kernbench

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	scripts/fuzz.sh 30

# The fuzz targets for FUZZ_SECONDS each (the long run of BENCHMARKS.md: 600).
FUZZ_SECONDS ?= 600
fuzz: setup
	scripts/fuzz.sh $(FUZZ_SECONDS)

# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer.
asan: setup
	scripts/asan.sh

clean:
	rm -rf build
