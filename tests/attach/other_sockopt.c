/*
 * other_sockopt.c - another tool's setsockopt program, as a tool nobody
 * here wrote would ship it: an object file compiled with clang -target
 * bpf, loaded and attached by bpftool (tests/attach/run.sh). It does
 * nothing but return 1 (the kernel goes on); the test checks that
 * naglefix's attach and detach leave it where it is, as it is, and that
 * naglefix's rule holds beside it.
 */
__attribute__((section("cgroup/setsockopt"), used)) int other_sockopt(void *ctx)
{
	(void)ctx;
	return 1;
}

char _license[] __attribute__((section("license"), used)) = "GPL";
