#!/usr/bin/perl
# legacy_client.pl: Perl syswrite write-write-read client (Nagle + delayed ACK).
# Usage: legacy_client.pl HOST PORT ROUNDS split|single
# Per round: syswrite "hello " and "world\r\n" (split: two writes, single: one),
# then sysread until the echoed line. Round 1 is a warm-up, excluded from stats.
# Final line: median_ms=<x> p99_ms=<y> rounds=<measured rounds>
use strict;
use warnings;
use IO::Socket::INET;
use Socket qw(IPPROTO_TCP TCP_NODELAY);
use POSIX qw(ceil);
use Time::HiRes qw(clock_gettime CLOCK_MONOTONIC);

my ($host, $port, $rounds, $mode) = @ARGV;
die "usage: legacy_client.pl HOST PORT ROUNDS(>=11) split|single\n"
    unless defined $mode && $mode =~ /^(split|single)$/ && $rounds >= 11;

my $sock = IO::Socket::INET->new(PeerAddr => $host, PeerPort => $port,
                                 Proto => 'tcp', Timeout => 10)
    or die "connect: $!\n";
setsockopt($sock, IPPROTO_TCP, TCP_NODELAY, 0) or die "setsockopt: $!\n"; # Nagle on

sub put { my $s = shift; syswrite($sock, $s) == length($s) or die "syswrite: $!\n"; }

my @ms;
for my $i (0 .. $rounds - 1) {
    my $t0 = clock_gettime(CLOCK_MONOTONIC);
    if ($mode eq 'split') { put("hello "); put("world\r\n"); }
    else                  { put("hello world\r\n"); }
    my $buf = '';
    until ($buf =~ /\n/) {
        my $n = sysread($sock, $buf, 4096, length $buf);
        die "sysread: " . (defined $n ? "server closed connection" : $!) . "\n" unless $n;
    }
    my $t1 = clock_gettime(CLOCK_MONOTONIC);
    push @ms, ($t1 - $t0) * 1000 if $i > 0;
}
close $sock;

@ms = sort { $a <=> $b } @ms;
my $n = @ms;
my $median = $n % 2 ? $ms[($n - 1) / 2] : ($ms[$n / 2 - 1] + $ms[$n / 2]) / 2;
my $p99 = $ms[ceil(0.99 * $n) - 1]; # nearest rank
printf "median_ms=%.3f p99_ms=%.3f rounds=%d\n", $median, $p99, $n;
