#!/usr/bin/perl
# fix_client.pl: the legacy harness's Perl syswrite client (Nagle on, two
# syswrites, sysread the echoed line), printing every round for tests/fix.
# Usage: fix_client.pl HOST PORT ROUNDS
# Prints "pid N", then per round "round I MS"; writes "hello I " and
# "world I\r\n", checks the echoed line is "hello I world I\n" to the byte
# ("BAD ..." and exit 1 if not).
use strict;
use warnings;
use IO::Socket::INET;
use Socket qw(IPPROTO_TCP TCP_NODELAY);
use Time::HiRes qw(clock_gettime CLOCK_MONOTONIC);

$| = 1;
my ($host, $port, $rounds) = @ARGV;
my $sock = IO::Socket::INET->new(PeerAddr => $host, PeerPort => $port,
                                 Proto => 'tcp', Timeout => 10)
    or die "connect: $!\n";
setsockopt($sock, IPPROTO_TCP, TCP_NODELAY, 0) or die "setsockopt: $!\n"; # Nagle on
print "pid $$\n";

sub put { my $s = shift; syswrite($sock, $s) == length($s) or die "syswrite: $!\n"; }

for my $i (0 .. $rounds - 1) {
    my $t0 = clock_gettime(CLOCK_MONOTONIC);
    put("hello $i ");
    put("world $i\r\n");
    my $buf = '';
    until ($buf =~ /\n/) {
        my $n = sysread($sock, $buf, 4096, length $buf);
        unless ($n) { print "BAD round $i: connection lost\n"; exit 1; }
    }
    my $t1 = clock_gettime(CLOCK_MONOTONIC);
    if ($buf ne "hello $i world $i\n") { print "BAD round $i: got $buf"; exit 1; }
    printf "round %d %.3f\n", $i, ($t1 - $t0) * 1000;
}
print "done $rounds\n";
