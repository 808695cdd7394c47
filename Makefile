# The two commands of the README, on top of CMake:
#   make run    builds and runs the main job (replayssm simulate)
#   make test   builds and runs every test: the C tests through ctest, then the Python tests
#               against the package installed (pip install ., not editable) into a virtual
#               environment of its own, from outside the checkout
# CUDA=AUTO (the default) builds the CUDA back end when nvcc and a GPU are present; CUDA=ON
# builds it anyway, CUDA=OFF never. A new value takes effect on an existing build folder.
# PTXAS_VERBOSE=ON prints every kernel's registers and shared memory.

BUILD ?= build
CUDA ?= AUTO
PTXAS_VERBOSE ?= OFF
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
PYTHON ?= python3
VENV ?= $(BUILD)/venv

.PHONY: all configure build run test test-c test-python clean format

all: build

# cheap when nothing changed; re-running it is what makes a new CUDA= take effect
configure:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DRSSM_CUDA=$(CUDA) -DRSSM_PTXAS_VERBOSE=$(PTXAS_VERBOSE)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

run: build
	./$(BUILD)/replayssm simulate

test: test-c test-python

test-c: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --disable-pip-version-check numpy pytest ml_dtypes

test-python: $(VENV)/bin/python
	REPLAYSSM_CUDA=$(CUDA) $(VENV)/bin/python -m pip install -q --disable-pip-version-check --no-deps \
	    --force-reinstall .
	cd / && env -u REPLAYSSM_LIBRARY $(abspath $(VENV))/bin/python -m pytest -q $(CURDIR)/python/tests

clean:
	rm -rf $(BUILD)

format:
	clang-format -i include/*.h src/*/*.[ch] src/cuda/*.cu* tools/*.[ch] testing/*.[ch] sim/*.[ch] sim/*.cu \
	    bench/*.[ch] bench/*.cu tests/*.[ch] tests/*/*.c examples/*.c
