# pg_cq — PGXS build.  See README.md for the two top-level commands.
EXTENSION   = pg_cq
MODULE_big  = pg_cq
OBJS        = $(patsubst %.c,%.o,$(wildcard src/*.c))
# Released install scripts are never edited: version 0.2 is 0.1 plus the
# upgrade step, concatenated at build time (CREATE EXTENSION drops the
# second \\echo guard line like the first).
DATA        = pg_cq--0.1.sql pg_cq--0.1--0.2.sql
DATA_built  = pg_cq--0.2.sql
PGFILEDESC  = "pg_cq - continuous queries"

REGRESS      = $(patsubst sql/%.sql,%,$(sort $(wildcard sql/*.sql)))
REGRESS_OPTS = --inputdir=. --outputdir=results/regress
ISOLATION    = $(patsubst specs/%.spec,%,$(sort $(wildcard specs/*.spec)))
ISOLATION_OPTS = --inputdir=. --outputdir=results/isolation

PG_CONFIG ?= $(shell command -v pg_config >/dev/null 2>&1 && echo pg_config || echo /usr/lib/postgresql/15/bin/pg_config)
PG_CPPFLAGS = -I$(srcdir)/src
PG_CFLAGS   = -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Wno-sign-compare $(if $(WERROR),-Werror)

PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)
ifneq ($(PGXS),)
include $(PGXS)
endif

# Top-level commands (README): they work on a fresh Debian 12 machine as root.
.PHONY: demo test test-citus bench
demo:
	scripts/demo.sh
test:
	scripts/test.sh
# only the Citus suite (t/citus/); needs Citus built for $(PG_CONFIG): docs/scale-out.md
test-citus:
	CQ_SUITES=citus scripts/test.sh
bench:
	bench/run.sh

pg_cq--0.2.sql: pg_cq--0.1.sql pg_cq--0.1--0.2.sql
	cat $^ > $@

# pg_regress wants its output directories to exist
installcheck: | results/regress results/isolation
results/regress results/isolation:
	mkdir -p $@

# every object depends on the shared headers (PGXS tracks no header dependencies)
$(OBJS): $(wildcard src/*.h)
