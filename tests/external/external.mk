# ---- real programs (tests/external): nginx with sendfile, git's and
# rsync's daemons with their clients, CPython's own regression tests, bare
# and under the library (issue 9). Each ends with "N passed, M failed".
# test-external is what `make test` runs (3.5 min, 98 s user and 62 s
# system, at nice 19 beside a load of 5 on this 2-core machine: nginx in 4
# configurations under up to 5 actions, git, rsync and sshd bare and under
# 8 actions, test_asyncio and test_os under coalesce, the sendfile and
# stream modules under coalesce flush=1s, each set then bare for only the
# modules that failed under the library);
# test-external-full adds
# coalesce buffer=64, test_socket, test_ssl and the socket-using stdlib
# suites, and nodelay and audit (about 20 min).

test-external: all
	tests/external/run.sh nginx git rsync sshd cpython

test-external-full: all
	tests/external/run.sh nginx git rsync sshd cpython-full

.PHONY: test-external test-external-full
