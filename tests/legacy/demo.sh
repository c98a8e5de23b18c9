#!/usr/bin/env bash
# demo.sh: the README's first command (`make demo`). The Java-style client
# of the classic experiment (TcpNoDelay=false, "hello " and "world\r\n"
# written separately, then readLine) against a line-echo server, as it is
# and under naglefix, with the medians side by side.
set -u
# shellcheck source-path=SCRIPTDIR source=../programs/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../programs/common.sh"

ROUNDS=${ROUNDS:-21}
compile_java || { echo "demo: javac failed" >&2; exit 1; }
start_server java-echo java -cp "$LEGACY_BUILD" EchoServer 0 120 || exit 1

client() { run_client "$1" java -cp "$LEGACY_BUILD" LegacyClient 127.0.0.1 "$SERVER_PORT" "$ROUNDS" "$2"; }

plain=$(client none split)
nodelay=$(client nodelay split)
coalesce=$(client coalesce split)
single=$(client none single)

printf '\nJava client, write("hello ") + write("world\\r\\n") + readLine(), median of %d rounds:\n\n' $((ROUNDS - 1))
printf '  %-44s %10s ms\n' "as it is (Nagle + delayed ACK)" "$plain" \
	"naglefix -m nodelay -- java LegacyClient" "$nodelay" \
	"naglefix -m coalesce -- java LegacyClient" "$coalesce" \
	"for reference: the same client, one write" "$single"
echo
