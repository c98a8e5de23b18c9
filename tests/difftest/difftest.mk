# tests/difftest: the seeded differential test (see tests/difftest/run.sh).
#   make difftest                          the CI quota: 500 seeds under coalesce,
#                                          200 under pass, nodelay, audit, auto and quickack
#   make difftest SEEDS=N ACTIONS="coalesce nodelay" [FIRST=S]
# Ends with "N passed, M failed" (one count per seed x action).

DT_DIR  := tests/difftest

$(B)/tests/difftest/dt_prog: $(DT_DIR)/dt_prog.c
	@mkdir -p $(dir $@)
	$(TEST_CC) -o $@ $< -lpthread

# dt_run and dt_clock_check are several sources: an object each, so each
# has its .d file.
$(B)/tests/difftest/%.o: $(DT_DIR)/%.c
	@mkdir -p $(dir $@)
	$(CC) $(XCPPFLAGS) $(CPPFLAGS) $(CFLAGS) $(WFLAGS) $(DEPFLAGS) -c -o $@ $<

$(B)/tests/difftest/dt_run: $(B)/tests/difftest/dt_run.o $(B)/tests/difftest/dt_peer.o $(B)/tests/difftest/dt_clock.o
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^

$(B)/tests/difftest/dt_clock_check: $(B)/tests/difftest/dt_clock_check.o $(B)/tests/difftest/dt_clock.o
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^

difftest: all $(B)/tests/difftest/dt_prog $(B)/tests/difftest/dt_run $(B)/tests/difftest/dt_clock_check
	$(DT_DIR)/run.sh $(if $(SEEDS),-n $(SEEDS)) $(if $(FIRST),-s $(FIRST)) $(if $(ACTIONS),-a "$(ACTIONS)")

.PHONY: difftest
