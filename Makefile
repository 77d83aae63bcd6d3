# gpuclust: PGXS build.  With nvcc on the PATH (or NVCC=...) the CUDA
# backend in cuda/ is built for sm_80 and sm_90 plus PTX and cudart is
# linked statically; without it, or with WITH_CUDA=0, a CPU-only build.

EXTENSION = gpuclust
DATA = $(wildcard sql/gpuclust--*.sql)
MODULE_big = gpuclust

ENGINE_OBJS = src/rowstore.o src/kmeans_fit.o src/kmeans_cpu.o \
	src/pmedian_fit.o src/pmedian_cpu.o src/stream_format.o src/stream.o
GLUE_OBJS = src/gpuclust.o src/input.o src/options.o src/model.o \
	src/kmeans_run.o src/kmeans_agg.o src/kmeans_window.o src/kmeans_assign.o \
	src/pmedian_options.o src/pmedian_model.o src/pmedian_run.o src/pmedian_agg.o \
	src/pmedian_assign.o src/stream_type.o src/stream_agg.o src/spi_rows.o src/model_text.o
OBJS = $(ENGINE_OBJS) $(GLUE_OBJS)

TESTS = $(sort $(wildcard test/sql/*.sql))
REGRESS = $(patsubst test/sql/%.sql,%,$(TESTS))
REGRESS_OPTS = --inputdir=test --load-extension=$(EXTENSION)

NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
WITH_CUDA ?= $(if $(NVCC),1,0)

# The engine must compute exactly like the kernels: no contracted FMAs.
PG_CFLAGS = -ffp-contract=off $(if $(WERROR),-Werror)

ifeq ($(WITH_CUDA),1)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_OBJS = cuda/device.o cuda/kmeans_cuda.o cuda/labeling.o cuda/labeling_tensor.o \
	cuda/labeling_pruned.o cuda/update.o cuda/seeding.o \
	cuda/pmedian_cuda.o cuda/pmedian_allocate.o cuda/pmedian_locate.o cuda/pmedian_swap.o
OBJS += $(CUDA_OBJS)
PG_CPPFLAGS = -DGC_WITH_CUDA -I$(CUDA_HOME)/include
SHLIB_LINK = -L$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/targets/x86_64-linux/lib -lcudart_static -lstdc++ -ldl -lrt -lpthread
NVCC_FLAGS = -O3 -std=c++17 -Xcompiler -fPIC -Isrc --fmad=true \
	-gencode arch=compute_80,code=sm_80 \
	-gencode arch=compute_90,code=sm_90 \
	-gencode arch=compute_90,code=compute_90
cuda/%.o: cuda/%.cu $(wildcard cuda/*.h cuda/*.cuh) src/gc_engine.h src/gc_math.h \
		src/pmedian_engine.h src/pmedian_math.h
	$(NVCC) $(NVCC_FLAGS) -c $< -o $@
endif

# rebuild everything when WITH_CUDA changes
BUILD_CONFIG := with_cuda=$(WITH_CUDA)
$(shell echo '$(BUILD_CONFIG)' | cmp -s - .build-config || echo '$(BUILD_CONFIG)' > .build-config)

EXTRA_CLEAN = .build-config test/engine/engine_test test/engine/pmedian_test $(CUDA_OBJS) \
	test/results test/regression.diffs test/regression.out \
	test/fuzz/stream_decode_fuzz test/fuzz/stream_seeds test/fuzz/corpus

# .cu objects have no LLVM bitcode
override with_llvm = no

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

$(OBJS): .build-config $(wildcard src/*.h)

# the test directory holds results, not the top level
REGRESS_OPTS += --outputdir=test

.PHONY: installcheck-gpu
installcheck-gpu:
	PGOPTIONS="-c gpuclust.device=gpu" $(MAKE) installcheck

# Engine tests without a server (CPU reference, and the GPU where usable)
ENGINE_TEST_OBJS = $(ENGINE_OBJS) $(CUDA_OBJS)
test/engine/engine_test: test/engine/engine_test.c $(ENGINE_TEST_OBJS)
	$(CC) -O2 -ffp-contract=off -Wall $(if $(WERROR),-Werror) $(PG_CPPFLAGS) -o $@ $< $(ENGINE_TEST_OBJS) \
		$(if $(filter 1,$(WITH_CUDA)),$(SHLIB_LINK)) -lm

.PHONY: engine-check
engine-check: test/engine/engine_test test/engine/pmedian_test
	test/engine/engine_test
	test/engine/pmedian_test

# p-median engine tests and benchmarks (pmedian_test phases|quality ...)
test/engine/pmedian_test: test/engine/pmedian_test.c $(ENGINE_TEST_OBJS)
	$(CC) -O2 -ffp-contract=off -Wall $(if $(WERROR),-Werror) $(PG_CPPFLAGS) -o $@ $< $(ENGINE_TEST_OBJS) \
		$(if $(filter 1,$(WITH_CUDA)),$(SHLIB_LINK)) -lm

.PHONY: pmedian-check
pmedian-check: test/engine/pmedian_test
	test/engine/pmedian_test

$(filter src/pmedian_%.o,$(OBJS)): src/pmedian_glue.h src/pmedian_engine.h src/pmedian_math.h src/gc_engine.h src/gc_math.h
$(GLUE_OBJS): src/gpuclust.h src/gc_engine.h src/pmedian_engine.h

# Fuzzing the kmeans_stream decoder (clang's libFuzzer with ASan/UBSan)
FUZZ_SECONDS ?= 30
FUZZ_CC ?= clang
test/fuzz/stream_decode_fuzz: test/fuzz/stream_decode_fuzz.c src/stream_format.c src/stream_format.h src/gc_engine.h
	$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-Isrc -o $@ test/fuzz/stream_decode_fuzz.c src/stream_format.c -lm
test/fuzz/stream_seeds: test/fuzz/stream_seeds.c src/stream_format.c src/stream_format.h
	$(CC) -O2 -Wall $(if $(WERROR),-Werror) -Isrc -o $@ test/fuzz/stream_seeds.c src/stream_format.c -lm

.PHONY: fuzz-check
fuzz-check: test/fuzz/stream_decode_fuzz test/fuzz/stream_seeds
	rm -rf test/fuzz/corpus && mkdir -p test/fuzz/corpus
	test/fuzz/stream_seeds test/fuzz/corpus
	test/fuzz/stream_decode_fuzz -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
		-print_final_stats=1 test/fuzz/corpus
