# ---- the inventory of entry points (tests/inventory, issue 9): every libc
# export that writes, sends, closes, duplicates, spawns or ends a thread or
# the process has a row in entrypoints.tsv saying how it reaches the
# library; run.sh checks the table against this machine's glibc and musl
# and against the library's exports. Ends with "N passed, M failed".

test-inventory: $(B)/libnaglefix.so
	tests/inventory/run.sh

.PHONY: test-inventory
