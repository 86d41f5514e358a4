# The include-path load of the kernel thread "Add RCU-walk support to NFS" (2014), written anew after the thread's
# description: many compiles of a one-line C++ file (#include <iostream>) with a long list of -I
# directories that all exist and are all empty, so nearly every header lookup in them misses,
# and the same misses repeat in every compile.
#
#   make -f includes.mk INC_PATH=DIR [NUM_INCLUDES=50] [NUM_COMPILES=200] [STEP=-c] -j2
#
# STEP=-E preprocesses only: the same header lookups, without the code generation (the mount
# test uses it to stay short; the benchmark compiles).
# The include directories are DIR/1 .. DIR/NUM_INCLUDES (created first); the objects go to
# ./objs, test.cpp to the current directory.

NUM_INCLUDES ?= 50
NUM_COMPILES ?= 200
OBJ_DIR ?= objs
STEP ?= -c
ifndef INC_PATH
$(error set INC_PATH to the directory that holds the include directories)
endif

INCLUDE_DIRS := $(addprefix $(INC_PATH)/,$(shell seq 1 $(NUM_INCLUDES)))
OBJS := $(addprefix $(OBJ_DIR)/,$(addsuffix _test.o,$(shell seq 1 $(NUM_COMPILES))))

build: $(OBJS)

dirs:
	@mkdir -p $(INCLUDE_DIRS)

$(OBJ_DIR)/:
	@mkdir -p $@

$(OBJS): test.cpp | $(OBJ_DIR)/ dirs
	@gcc $(addprefix -I,$(INCLUDE_DIRS)) $(STEP) test.cpp -o $@

test.cpp:
	@echo '#include <iostream>' > $@

clean:
	@rm -rf $(OBJ_DIR) test.cpp

.PHONY: build dirs clean
