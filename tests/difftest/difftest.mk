# tests/difftest: the seeded differential test (see tests/difftest/run.sh).
#   make difftest                          the CI quota: 500 seeds under coalesce,
#                                          200 under pass, nodelay and audit
#   make difftest SEEDS=N ACTIONS="coalesce nodelay" [FIRST=S]
# Ends with "N passed, M failed" (one count per seed x action).

DT_DIR  := tests/difftest
DT_HDRS := $(wildcard $(DT_DIR)/*.h)
DT_CFLAGS := $(CFLAGS) $(WFLAGS) -D_GNU_SOURCE

$(B)/tests/difftest/dt_prog: $(DT_DIR)/dt_prog.c $(DT_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(DT_CFLAGS) -o $@ $< -lpthread

$(B)/tests/difftest/dt_run: $(DT_DIR)/dt_run.c $(DT_DIR)/dt_peer.c $(DT_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(DT_CFLAGS) -o $@ $(DT_DIR)/dt_run.c $(DT_DIR)/dt_peer.c

difftest: all $(B)/tests/difftest/dt_prog $(B)/tests/difftest/dt_run
	$(DT_DIR)/run.sh $(if $(SEEDS),-n $(SEEDS)) $(if $(FIRST),-s $(FIRST)) $(if $(ACTIONS),-a "$(ACTIONS)")

.PHONY: difftest
