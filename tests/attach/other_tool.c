/*
 * other_tool.c - another tool's sock_ops program, as a tool nobody here
 * wrote would ship it: an object file compiled with clang -target bpf,
 * loaded and attached by bpftool (tests/attach/run.sh). It does nothing
 * but return 1; the test checks that naglefix's attach and detach leave
 * it where it is, as it is.
 */
__attribute__((section("sockops"), used)) int other_tool(void *ctx)
{
	(void)ctx;
	return 1;
}

char _license[] __attribute__((section("license"), used)) = "GPL";
