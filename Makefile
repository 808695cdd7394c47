# The two commands of the README, on top of CMake:
#   make run    builds and runs the main job
#   make test   builds and runs every test (C tests through ctest, then the Python tests)
# CUDA is compiled when nvcc is found (CUDA=OFF to skip); GPU tests skip without a GPU.

BUILD ?= build
CUDA ?= ON
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all build run test clean format

all: build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DRSSM_CUDA=$(CUDA)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

run: build
	./$(BUILD)/replayssm simulate

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j 1
	REPLAYSSM_LIBRARY=$(CURDIR)/$(BUILD)/libreplayssm.so python3 -m pytest python/tests -q

format:
	clang-format -i include/*.h src/*/*.[ch] src/cuda/*.cu* tools/*.[ch] testing/*.[ch] bench/*.[ch] sim/*.[ch] tests/*.[ch] tests/*/*.c

clean:
	rm -rf $(BUILD)
