#!/bin/sh
# check-layers.sh [TOP] - proves that the folders of TOP's src/ (default:
# this checkout) only point down: no include between two folders that the
# table below does not allow, no private header included from another
# folder, every header named by the one rule, each command's folder with
# one door, no cycle between the modules of the library and of the packet
# side, no call between the command's folders that the table does not
# allow, no circle between the command's files, and no file of the
# command but its message helper writing to stderr.
#
# Folders, read from the path alone. A file of src/ is in the folder it
# lives in, relative to src/ (src/actions/coalesce/coalesce.c and
# src/actions/coalesce/nf_coalesce.h: actions/coalesce). A header of
# include/ is common's: include/ holds what every part shares (the
# headers of src/common and the header-only ones such as nf_fnv.h).
#
# Arrows. Each `#include "..."` of a file of src/ or include/ is found as
# the compiler finds it (-iquote src -Iinclude): beside the file, else
# under src/ ("core/nf_conn.h": src/core/nf_conn.h), else in include/; a
# name found nowhere is a failure. It is an arrow from the file's folder
# to the header's; an arrow inside one folder is always allowed, one
# between two folders only if ARROWS lists it. The picture: the
# libc-named entry points call the process's life (load, fork, seccomp),
# which calls the actions, which call the core, which calls what is common;
# the packet side and the command share nothing with the preloaded library
# but common/ (addresses, JSON, the policy language):
#
#   interpose -> process -> actions/* -> core -> common
#   cli -> cli/CMD (each command's folder) -> cli/common -> wire -> common,
#   cli/watch -> metrics -> common, cli/attach -> bpf -> common,
#   cli/fix -> bpf (attach --now's marks), cli/attach -> route -> common
#
# and between the commands, which call each other through their doors as
# functions: cli/watch -> cli/fix (watch --fix), cli/watch -> cli/attach
# (watch --fix --attach), cli/attach -> cli/fix (attach --now, the state
# directory); every command -> cli/common (what several share: messages,
# options, cgroups, the tables of findings). cli/ itself holds naglefix.c,
# the dispatcher, which reaches every command's door and nothing else.
#
# (metrics/: watch's Prometheus side, which knows nothing of packets: the
# command turns a finding into its labels; bpf/: naglefix's kernel program
# and the bpf(2) calls that put it on cgroups; route/: a namespace's routes
# through rtnetlink, for attach's quickack rules)
#
# and inside actions/: track.c (actions/) decides a socket's action and
# hands it to auto or quickack; audit asks track for the decision.
#
# Header names, one rule everywhere. A header of src/ is either NAME_int.h,
# private to its folder (no file of another folder may include it, even
# along an allowed arrow), or nf_NAME.h, what its folder offers the
# folders above it: some file of another folder includes it, directly or
# through another nf_ header of its folder (nf_hook_list.h, through
# nf_real.h); an nf_ header nobody else reaches is named NAME_int.h
# instead. A header of include/ is nf_NAME.h. A command's folder
# (cli/CMD, every folder under src/cli but cli/common) has one door,
# nf_CMD.h: a second nf_ header there is a new door nobody declared.
#
# Modules (the cycle check, as before the folders): a header is the module
# of its name (src/core/nf_timer.h: timer); a .c file belongs to the module
# of its first quoted include when that header is of its own folder
# (audit_log.c includes nf_audit.h first: audit), else it is a module of
# its own name. So coalesce.c including nf_timer.h and timer.c including
# nf_coalesce.h would be the cycle coalesce -> timer -> coalesce, though no
# header includes itself. src/cli is left out of this graph: a door such
# as nf_fix.h declares the functions of several files, so the command's
# checks are of calls instead. A file of src/cli that calls a function
# (nf_...(...)) that another one defines points to it: between two
# folders that must be an arrow of ARROWS (a call made without the
# door's include is still seen), and no file may reach itself.
#
# Messages. The command says every message through one helper,
# src/cli/common/util.c (nf_cli.h: nf_cli_warnx and its forms, util-linux's
# err(3) shape, "naglefix CMD: ..."); no other file of src/cli writes to
# stderr itself. A statement (the text between two of ';', '{' and '}',
# comments and the insides of quotes left out, over as many lines as it
# takes) that names stderr in a stdio write (fprintf, vfprintf, fputs,
# fputc, putc, fwrite and their _unlocked forms), writes to descriptor 2
# (write, dprintf, 2 or STDERR_FILENO), calls perror, psignal, err(3)'s
# or error(3)'s functions, includes <err.h> or <error.h>, or keeps stderr
# in a variable (= stderr) fails. A table the command prints on stderr
# (audit's) is passed as an argument to a function that takes a FILE.
#
# Prints each wrong arrow (the include that makes it), each private header
# reached from outside, each header wrongly named, each cycle (its
# modules and the includes that close it), each call between the
# command's folders that is no arrow, each circle of calls and each
# write to stderr of src/cli outside the helper, and ends with "N
# passed, M failed" over the seven checks; exits 1 on a failure, 2 if
# TOP has no src/. T=pattern picks checks by name.
set -eu

top=${1:-$(cd "$(dirname "$0")/.." && pwd)}
[ -d "$top/src" ] || { echo "$0: no src/ in $top" >&2; exit 2; }
cd "$top"

# FROM TO...: the folders FROM may include from, beside its own.
ARROWS='
interpose process actions actions/coalesce actions/audit actions/auto actions/quickack core common
process actions actions/coalesce actions/audit actions/auto actions/quickack core common
actions/audit actions core common
actions actions/auto actions/quickack core common
actions/coalesce core common
actions/auto core common
actions/quickack core common
core common
common
wire common
metrics common
bpf common
route common
cli cli/check cli/report cli/scan cli/fix cli/attach cli/watch cli/common common
cli/watch cli/fix cli/attach cli/common wire metrics common
cli/attach cli/fix cli/common bpf route common
cli/fix cli/common bpf common
cli/check cli/common common
cli/report cli/common common
cli/scan cli/common wire common
cli/common wire common
'

# Each step below is one awk over files in $tmp, and each check's counts
# are computed there too: a process costs this machine about 5 ms of CPU,
# and check-layers-self.sh runs this script once a case.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%s\n' "$ARROWS" >"$tmp/table"

find src include -path src/man -prune -o \( -name '*.c' -o -name '*.h' \) -print | sort >"$tmp/files"

# edges: file<TAB>included, one line per quoted include; the included
# name made a path relative to TOP, found as the compiler finds it
# (-iquote src -Iinclude): beside the file, else under src/, else in
# include/. folders: file<TAB>folder for every file and every included
# name, which may be a header that does not exist (its folder: "?").
# counts: the files of src/, its NAME_int.h, include/'s headers and src/'s
# headers that are no NAME_int.h.
awk -v list="$tmp/files" -v edges="$tmp/edges" -v folders="$tmp/folders" -v counts="$tmp/counts" '
	# norm(P): P with its "." and "DIR/.." steps taken out
	function norm(p,   n, a, out, i, k) {
		n = split(p, a, "/")
		k = 0
		for (i = 1; i <= n; i++) {
			if (a[i] == "" || a[i] == ".")
				continue
			if (a[i] == ".." && k > 0 && out[k] != "..") {
				k--
				continue
			}
			out[++k] = a[i]
		}
		p = out[1]
		for (i = 2; i <= k; i++)
			p = p "/" out[i]
		return p
	}
	# folder(F): the folder of F, read from its path; "?" if F does not exist
	function folder(f,   d, x) {
		if (!(f in have)) {
			if ((getline x <f) < 0)
				return "?"
			close(f)
		}
		if (f ~ /^src\//) {
			d = substr(f, 5)
			sub(/\/[^\/]*$/, "", d)
			return d
		}
		return f ~ /^include\// ? "common" : "?"
	}
	BEGIN {
		while ((getline f <list) > 0) {
			have[f] = 1
			name[++n] = f
			nsrc += f ~ /^src\//
			nint += f ~ /_int\.h$/
			ninc += f ~ /^include\/.*\.h$/
			nnf += f ~ /^src\/.*\.h$/ && f !~ /_int\.h$/
		}
		for (i = 1; i <= n; i++) {
			f = name[i]
			d = f
			sub(/\/[^\/]*$/, "", d)
			while ((getline line <f) > 0) {
				if (line !~ /^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*"/)
					continue
				inc = line
				sub(/^[[:space:]]*#[[:space:]]*include[[:space:]]*"/, "", inc)
				sub(/".*/, "", inc)
				p = norm(d "/" inc)
				if (!(p in have))
					p = norm("src/" inc)
				if (!(p in have))
					p = norm("include/" inc)
				printf "%s\t%s\n", f, p >edges
				named[p] = 1
			}
			close(f)
		}
		for (i = 1; i <= n; i++)
			printf "%s\t%s\n", name[i], folder(name[i]) >folders
		for (p in named)
			if (!(p in have))
				printf "%s\t%s\n", p, folder(p) >folders
		print nsrc, nint, ninc, nnf >counts
	}'
: >>"$tmp/edges"
read -r nsrc nint ninc nnf <"$tmp/counts"

passed=0
failed=0
sel=0
# selected NAME: does T (tests/lib.sh's name filter: unset or a shell
# pattern matched anywhere in NAME) pick the check NAME? Counts it if so.
selected() {
	case $1 in *${T:-}*) sel=$((sel + 1)) && return 0 ;; esac
	return 1
}
# finish: the counts ("SKIP T: ..." first if T picked nothing here).
finish() {
	if [ -n "${T:-}" ] && [ "$sel" -eq 0 ]; then
		echo "SKIP T: '$T' names no check of this suite"
	fi
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}

# ---- arrows between folders (counts: src/'s folders, the arrows between
# all folders)
awk -F'\t' -v table="$tmp/table" -v counts="$tmp/fcounts" '
	BEGIN {
		while ((getline l <table) > 0) {
			n = split(l, a, " ")
			if (!n)
				continue
			known[a[1]] = 1
			for (i = 1; i <= n; i++)
				ok[a[1], a[i]] = 1
		}
	}
	FILENAME == ARGV[1] { dir[$1] = $2; if ($1 ~ /^src\// && !fseen[$2]++) nf++; next }
	{
		from = dir[$1]; to = dir[$2]
		if (from != to && !aseen[from, to]++)
			na++
		if (to == "?")
			printf "  %s includes %s: no such header (beside it, under src/ or in include/)\n", $1, $2
		else if (!(from in known))
			printf "  %s includes %s: folder %s is in no row of ARROWS\n", $1, $2, from
		else if (from != to && !ok[from, to])
			printf "  %s includes %s (%s -> %s: not an arrow of ARROWS)\n", $1, $2, from, to
	}
	END { print nf + 0, na + 0 >counts }' "$tmp/folders" "$tmp/edges" >"$tmp/wrong"
read -r nfolders narrows <"$tmp/fcounts"
if ! selected layers-folders; then
	:
elif [ -s "$tmp/wrong" ]; then
	echo "FAIL layers-folders: an include that points the wrong way:"
	cat "$tmp/wrong"
	failed=$((failed + 1))
else
	echo "PASS layers-folders: $nsrc files in $nfolders folders, $narrows arrows between them"
	passed=$((passed + 1))
fi

# ---- private headers: a NAME_int.h only from a file of its own folder
awk -F'\t' 'FILENAME == ARGV[1] { dir[$1] = $2; next }
	    {
		n = $2; sub(/.*\//, "", n)
		if (n ~ /_int\.h$/ && dir[$2] != "?" && dir[$1] != dir[$2])
			printf "  %s includes %s: private to %s (a NAME_int.h is its own folder'"'"'s)\n", $1, $2, dir[$2]
	    }' "$tmp/folders" "$tmp/edges" >"$tmp/private"
if ! selected layers-private; then
	:
elif [ -s "$tmp/private" ]; then
	echo "FAIL layers-private: a private header included from another folder:"
	cat "$tmp/private"
	failed=$((failed + 1))
else
	echo "PASS layers-private: $nint private headers, each included from its own folder only"
	passed=$((passed + 1))
fi

# ---- header names: NAME_int.h (its folder's own) or nf_NAME.h (offered:
# reached from another folder, directly or through its folder's nf_
# headers); include/'s are nf_NAME.h.
awk -F'\t' 'FILENAME == ARGV[1] { dir[$1] = $2; next }
	    FILENAME == ARGV[2] { if ($1 ~ /\.h$/) hdr[++nh] = $1; next }
	    { from[++ne] = $1; to[ne] = $2 }
	    END {
		for (i = 1; i <= ne; i++)
			if (dir[from[i]] != dir[to[i]]) reached[to[i]] = 1
		do {
			grew = 0
			for (i = 1; i <= ne; i++)
				if (reached[from[i]] && dir[from[i]] == dir[to[i]] && !reached[to[i]]) {
					reached[to[i]] = 1
					grew = 1
				}
		} while (grew)
		for (k = 1; k <= nh; k++) {
			h = hdr[k]; n = h; sub(/.*\//, "", n)
			if (h ~ /^include\//) {
				if (n !~ /^nf_[a-z0-9_]+\.h$/ || n ~ /_int\.h$/)
					printf "  %s: include/ holds what every part shares, named nf_NAME.h\n", h
			} else if (n ~ /^[a-z0-9_]+_int\.h$/) {
				continue
			} else if (n !~ /^nf_[a-z0-9_]+\.h$/) {
				printf "  %s: neither nf_NAME.h (offered to other folders) nor NAME_int.h (its folder'"'"'s own)\n", h
			} else if (!reached[h]) {
				m = n; sub(/^nf_/, "", m); sub(/\.h$/, "", m)
				printf "  %s: no file of another folder includes it: name it %s_int.h\n", h, m
			} else if (dir[h] ~ /^cli\// && dir[h] != "cli/common") {
				cmd = dir[h]; sub(/^cli\//, "", cmd)
				if (n != "nf_" cmd ".h")
					printf "  %s: a second door of %s (a command'"'"'s folder has one, nf_%s.h)\n", h, dir[h], cmd
			}
		}
	    }' "$tmp/folders" "$tmp/files" "$tmp/edges" >"$tmp/names"
if ! selected layers-header-names; then
	:
elif [ -s "$tmp/names" ]; then
	echo "FAIL layers-header-names: a header named against the rule:"
	cat "$tmp/names"
	failed=$((failed + 1))
else
	echo "PASS layers-header-names: $ninc in include/, $nnf nf_NAME.h and $nint NAME_int.h in src/, one door a command's folder"
	passed=$((passed + 1))
fi

# ---- cycles between modules (src/cli left out: see above)
awk -F'\t' '
	# module(P): the module P names: its file name without nf_ and .c/.h
	function module(p) {
		sub(/.*\//, "", p)
		sub(/^nf_/, "", p)
		sub(/\.[ch]$/, "", p)
		return p
	}
	FILENAME == ARGV[1] { dir[$1] = $2; next }
	FILENAME == ARGV[2] { if (!($1 in first)) first[$1] = $2; next }
	/^src\/cli\// { next }
	{
		if ($1 !~ /\.h$/ && ($1 in first) && dir[$1] == dir[first[$1]])
			m = module(first[$1])
		else
			m = module($1)
		printf "%s\t%s\n", $1, m
	}' "$tmp/folders" "$tmp/edges" "$tmp/files" >"$tmp/modules"

awk -F'\t' 'NR == FNR { mod[$1] = $2; next }
	    ($1 in mod) && ($2 in mod) && mod[$1] != mod[$2] { print mod[$1], mod[$2], $1, $2 }' \
	"$tmp/modules" "$tmp/edges" | sort -u >"$tmp/arrows"

# loops ARROWS: each set of nodes that reach one another (a cycle), from
# the transitive closure of ARROWS' lines "FROM TO WHY...", with the
# arrows inside it (the first WHY of each).
loops() {
	awk '{ a[$1, $2] = 1; node[$1] = 1; node[$2] = 1; line[NR] = $0 }
	     END {
		for (k in node) for (i in node) if (a[i, k]) for (j in node) if (a[k, j]) a[i, j] = 1
		for (i in node) {
			if (!a[i, i] || done[i]) continue
			set = ""
			for (j in node) if (a[i, j] && a[j, i]) { done[j] = 1; in_set[j] = i; set = set " " j }
			print "  cycle:" set
			for (n = 1; n <= NR; n++) {
				split(line[n], f, " ")
				if (in_set[f[1]] == i && in_set[f[2]] == i && !shown[f[1], f[2]]++) {
					why = line[n]; sub(/^[^ ]+ [^ ]+ /, "", why)
					printf "    %s -> %s (%s)\n", f[1], f[2], why
				}
			}
		}
	     }' "$1"
}

# marrows: the arrows as loops() reads them; counts: the modules, the
# arrows between them
awk -v counts="$tmp/mcounts" '
	FILENAME == ARGV[1] { split($0, f, "\t"); if (!mseen[f[2]]++) nm++; next }
	{ print $1, $2, $3, "includes", $4; if (!aseen[$1, $2]++) na++ }
	END { print nm + 0, na + 0 >counts }' "$tmp/modules" "$tmp/arrows" >"$tmp/marrows"
read -r nmodules nmarrows <"$tmp/mcounts"
loops "$tmp/marrows" >"$tmp/loops"
if ! selected layers-no-cycle; then
	:
elif [ -s "$tmp/loops" ]; then
	echo "FAIL layers-no-cycle: modules that include one another:"
	cat "$tmp/loops"
	failed=$((failed + 1))
else
	echo "PASS layers-no-cycle: $nmodules modules, $nmarrows arrows between them"
	passed=$((passed + 1))
fi

# ---- calls between the command's files. A file defines the nf_
# functions whose definition starts a line (not static, no ';' at the end
# of that line); it calls every nf_NAME( it does not define.
awk -v list="$tmp/files" -v folders="$tmp/folders" -v defs="$tmp/defs" -v calls="$tmp/calls" \
    -v cfolder="$tmp/cfolder" '
	BEGIN {
		while ((getline l <folders) > 0) {
			split(l, a, "\t")
			dir[a[1]] = a[2]
		}
		while ((getline f <list) > 0) {
			if (f !~ /^src\/cli\/.*\.c$/)
				continue
			b = f
			sub(/.*\//, "", b)
			sub(/\.c$/, "", b)
			print b, dir[f] >cfolder
			while ((getline line <f) > 0) {
				if (line ~ /^[A-Za-z_]/ && line !~ /^(static|extern|typedef)/ && line !~ /;[[:space:]]*$/) {
					l = line
					while (match(l, /nf_[A-Za-z0-9_]*\(/)) {
						print b, substr(l, RSTART, RLENGTH - 1) >defs
						l = substr(l, RSTART + RLENGTH)
					}
				}
				while (match(line, /nf_[A-Za-z0-9_]*[[:space:]]*\(/)) {
					name = substr(line, RSTART, RLENGTH - 1)
					sub(/[[:space:]]*$/, "", name)
					if (!seen[b, name]++)
						print b, name >calls
					line = substr(line, RSTART + RLENGTH)
				}
			}
			close(f)
		}
	}'
: >>"$tmp/defs"
: >>"$tmp/calls"
: >>"$tmp/cfolder"
awk 'NR == FNR { owner[$2] = $1; next }
     ($2 in owner) && owner[$2] != $1 { print $1, owner[$2], $1 ".c calls", $2 }' \
	"$tmp/defs" "$tmp/calls" | sort -u >"$tmp/carrows"

# ---- calls between the command's folders: each an arrow of ARROWS, to
# a function the door of the folder called declares (its nf_ headers).
# counts: the arrows of calls between folders, the folders, the files,
# the arrows of calls between files.
awk -v list="$tmp/files" -v counts="$tmp/ccounts" '
	BEGIN {
		while ((getline h <list) > 0) {
			if (h !~ /^src\/cli\/.*\/nf_[^\/]*\.h$/)
				continue
			d = substr(h, 5)
			sub(/\/[^\/]*$/, "", d)
			while ((getline line <h) > 0)
				while (match(line, /nf_[A-Za-z0-9_]*[[:space:]]*\(/)) {
					name = substr(line, RSTART, RLENGTH - 1)
					sub(/[[:space:]]*$/, "", name)
					door[d, name] = 1
					line = substr(line, RSTART + RLENGTH)
				}
			close(h)
		}
	}
	FILENAME == ARGV[1] { if (NF) for (i = 1; i <= NF; i++) ok[$1, $i] = 1; next }
	FILENAME == ARGV[2] { dir[$1] = $2; nfile++; if (!fseen[$2]++) nfold++; next }
	{
	from = dir[$1]; to = dir[$2]
	if (!pseen[$1, $2]++)
		npairs++
	if (from == to)
		next
	if (!fpseen[from, to]++)
		nfpairs++
	if (!ok[from, to])
		printf "  %s.c calls %s of %s.c (%s -> %s: not an arrow of ARROWS)\n", $1, $5, $2, from, to
	else if (!door[to, $5])
		printf "  %s.c calls %s of %s.c, not in the door of %s (its nf_*.h)\n", $1, $5, $2, to
	}
	END { print nfpairs + 0, nfold + 0, nfile + 0, npairs + 0 >counts }' \
	"$tmp/table" "$tmp/cfolder" "$tmp/carrows" >"$tmp/cwrong"
read -r ncfarrows ncfolders ncfiles ncarrows <"$tmp/ccounts"
if ! selected layers-cli-calls; then
	:
elif [ -s "$tmp/cwrong" ]; then
	echo "FAIL layers-cli-calls: a call between the command's folders that is no arrow:"
	cat "$tmp/cwrong"
	failed=$((failed + 1))
else
	echo "PASS layers-cli-calls: $ncfarrows arrows of calls between $ncfolders folders of src/cli, each in ARROWS"
	passed=$((passed + 1))
fi

# ---- circles of calls between the command's files
loops "$tmp/carrows" >"$tmp/circles"
if ! selected layers-cli-no-circle; then
	:
elif [ -s "$tmp/circles" ]; then
	echo "FAIL layers-cli-no-circle: files of src/cli that call one another:"
	cat "$tmp/circles"
	failed=$((failed + 1))
else
	echo "PASS layers-cli-no-circle: $ncfiles files, $ncarrows arrows of calls between them"
	passed=$((passed + 1))
fi

# ---- messages: stderr written by the helper alone (see the top)
helper=src/cli/common/util.c
awk -v list="$tmp/files" -v helper="$helper" -v counts="$tmp/scounts" '
	function said(   w, id) {
		w = "(^|[^A-Za-z0-9_])"; id = "([^A-Za-z0-9_]|$)"
		if (cur ~ w "(v?fprintf|fputs|fputc|putc|fwrite)(_unlocked)?[ \t]*\\(" && cur ~ w "stderr" id ||
		    cur ~ w "(v?dprintf|write|writev)[ \t]*\\([ \t]*(2|STDERR_FILENO)[ \t]*," ||
		    cur ~ w "(perror|psignal|psiginfo|v?warnx?|v?errx?|warnc|errc|error|error_at_line)[ \t]*\\(" ||
		    cur ~ "#[ \t]*include[ \t]*<(err|error)[.]h>" || cur ~ "(^|[^=!<>])=[ \t]*stderr" id) {
			gsub(/[ \t]+/, " ", cur)
			sub(/^ /, "", cur)
			printf "  %s:%d: writes to stderr itself, not through nf_cli.h (%s)\n", file, at,
			       substr(cur, 1, 100)
		}
		cur = ""
	}
	# add(S): S to the statement (its line, if S starts it, in at)
	function add(t) {
		if (t ~ /[^ \t]/ && cur ~ /^[ \t]*$/)
			at = FNR
		cur = cur t
	}
	# scan(LINE): LINE (number FNR of file) read into statements, from
	# one character that matters (/ ; { } and the quotes) to the next
	function scan(rest,   c) {
		while (rest != "") {
			if (incomment) {
				if (!(c = index(rest, "*/")))
					break
				incomment = 0
				rest = substr(rest, c + 2)
			} else if (q != "") {
				if (!match(rest, q == "\"" ? "[\\\\\"]" : "[\\\\\047]"))
					break
				c = substr(rest, RSTART, 1)
				rest = substr(rest, RSTART + (c == "\\" ? 2 : 1))
				if (c != "\\") {
					q = ""
					cur = cur c
				}
			} else if (!match(rest, /[\/;{}"\047]/)) {
				add(rest)
				break
			} else {
				add(substr(rest, 1, RSTART - 1))
				c = substr(rest, RSTART, 1)
				rest = substr(rest, RSTART + 1)
				if (c == "/" && rest ~ /^\*/) {
					incomment = 1
					rest = substr(rest, 2)
				} else if (c == "/" && rest ~ /^\//) {
					break
				} else if (c == ";" || c == "{" || c == "}") {
					said()
				} else {
					if (c != "/")
						q = c
					add(c)
				}
			}
		}
		if (cur ~ /^[ \t]*#/) said()  # a preprocessor line ends at its end
		cur = cur " "
	}
	BEGIN {
		while ((getline file <list) > 0) {
			if (file !~ /^src\/cli\/.*\.[ch]$/ || file == helper)
				continue
			nfile++
			incomment = 0; q = ""; FNR = 0
			while ((getline line <file) > 0) {
				FNR++
				scan(line)
			}
			close(file)
			said()
		}
		print nfile + 0 >counts
	}' >"$tmp/stderr"
read -r nmsgfiles <"$tmp/scounts"
if ! selected layers-cli-messages; then
	:
elif [ -s "$tmp/stderr" ]; then
	echo "FAIL layers-cli-messages: a file of src/cli that writes to stderr itself (say it with nf_cli_warnx, nf_cli_warnx_as, nf_cli_errx or nf_cli_usage_error):"
	cat "$tmp/stderr"
	failed=$((failed + 1))
else
	echo "PASS layers-cli-messages: $nmsgfiles files of src/cli, none writes to stderr but $helper"
	passed=$((passed + 1))
fi

finish
