# ---- real programs (tests/external): nginx with sendfile, CPython's own
# regression tests, bare and under the library (issue 9). Each ends with
# "N passed, M failed". test-external is what `make test` runs (about
# 3 min here: nginx under 5 actions, test_asyncio and test_os bare and
# under coalesce); test-external-full adds test_socket, test_ssl and the
# socket-using stdlib suites, and nodelay and audit (about 15 min).

test-external: all
	tests/external/run.sh nginx cpython

test-external-full: all
	tests/external/run.sh nginx cpython-full

.PHONY: test-external test-external-full
