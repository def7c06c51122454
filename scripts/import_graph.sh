#!/usr/bin/env bash
# Prints the crate's module graph, read from its `crate::` paths (`use crate::...` lines and inline
# `crate::x::y` paths, comments skipped), one line per room (a top-level module of src/) with the rooms
# it reaches. A name the crate root re-exports (`crate::Timer`) counts as the room it comes from. Exits non-zero if the rooms form a cycle other than the runtime's own (builder, driver,
# timer): that cycle is the honest shape of a runtime (the facade starts the driver, the driver fires
# through the facade's state), every other room depends one way.
#
#   scripts/import_graph.sh          the graph, then the cycle check
#   scripts/import_graph.sh --dot    the graph in Graphviz dot form (no check)
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-}"

# "from to" pairs, one per line: a room reaching another through a crate:: path.
edges="$(find src -name '*.rs' | sort | perl -e '
    # What lib.rs re-exports: name -> room.
    my %from;
    open my $lib, "<", "src/lib.rs" or die "src/lib.rs: $!";
    my $libtext = join "", grep { !m{^\s*//} } <$lib>;
    while ($libtext =~ m{^pub use (\w+)::([^;]+);}mg) {
        my ($room, $names) = ($1, $2);
        $names =~ s{^(\w+::)*}{};
        $from{$_} = $room for ($names =~ m{\b([A-Za-z_]\w*)\b}g);
    }
    sub room_of { my $name = shift; return exists $from{$name} ? $from{$name} : $name; }
    while (my $file = <STDIN>) {
        chomp $file;
        (my $room = $file) =~ s{^src/}{};
        $room =~ s{(/.*|\.rs)$}{};
        next if $room eq "lib";
        open my $fh, "<", $file or die "$file: $!";
        my $text = join "", grep { !m{^\s*//} } <$fh>;
        $text =~ s{//[^\n]*}{}g;
        # crate::name and crate::{a, b::c, d::{e, f}}: the first segment of each path is a room.
        while ($text =~ m{\bcrate::(\w+|\{)}g) {
            my $head = $1;
            if ($head ne "{") { print "$room ", room_of($head), "\n"; next; }
            my ($depth, $group, $pos) = (1, "", pos $text);
            while ($depth > 0 && $pos < length $text) {
                my $c = substr $text, $pos++, 1;
                $depth++ if $c eq "{";
                $depth-- if $c eq "}";
                $group .= $c if $depth == 1 && $c ne "}";
                $group .= " " if $depth > 1 && $c eq "{";
            }
            for my $part (split /,/, $group) {
                print "$room ", room_of($1), "\n" if $part =~ m{^\s*(\w+)};
            }
        }
    }' | awk '$1 != $2 && $2 != "self"' | sort -u)"

# Only rooms: a path into a module of src/ (skips macros and other crate-root items).
rooms="$(find src -mindepth 1 -maxdepth 1 \( -name '*.rs' -o -type d \) | sed -E 's#^src/##; s#\.rs$##' | sort)"
edges="$(echo "$edges" | awk -v rooms="$rooms" 'BEGIN { n = split(rooms, r, "\n"); for (i = 1; i <= n; i++) ok[r[i]] = 1 } ok[$2]')"

if [[ "$mode" == "--dot" ]]; then
    echo "digraph delaywheel {"
    echo "$edges" | awk 'NF == 2 { printf "    \"%s\" -> \"%s\";\n", $1, $2 }'
    echo "}"
    exit 0
fi

echo "$edges" | awk 'NF == 2 { out[$1] = out[$1] " " $2 } END { for (r in out) printf "%-14s ->%s\n", r, out[r] }' | sort

# Strongly connected components (Tarjan) of more than one room: each is a cycle.
echo "$edges" | perl -e '
    my %adj; my %nodes;
    while (<STDIN>) { my ($a, $b) = split; next unless defined $b; push @{$adj{$a}}, $b; $nodes{$a} = $nodes{$b} = 1; }
    my ($index, @stack, %idx, %low, %on, @sccs) = (0);
    my $visit; $visit = sub {
        my $v = shift; $idx{$v} = $low{$v} = $index++; push @stack, $v; $on{$v} = 1;
        for my $w (@{$adj{$v} || []}) {
            if (!exists $idx{$w}) { $visit->($w); $low{$v} = $low{$w} if $low{$w} < $low{$v}; }
            elsif ($on{$w}) { $low{$v} = $idx{$w} if $idx{$w} < $low{$v}; }
        }
        if ($low{$v} == $idx{$v}) {
            my @c; my $w; do { $w = pop @stack; $on{$w} = 0; push @c, $w } while ($w ne $v);
            push @sccs, [sort @c] if @c > 1;
        }
    };
    for my $v (sort keys %nodes) { $visit->($v) unless exists $idx{$v} }
    my %allowed = map { $_ => 1 } qw(builder driver timer);
    my $bad = 0;
    for my $c (@sccs) {
        my $ok = !grep { !$allowed{$_} } @$c;
        printf "%s cycle: %s\n", ($ok ? "allowed" : "FORBIDDEN"), join(" -> ", @$c);
        $bad = 1 unless $ok;
    }
    print "no cycle outside builder/driver/timer\n" unless $bad;
    exit $bad;'
