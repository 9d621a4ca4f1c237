#!/usr/bin/env bash
# Model-checks the worker-id fence protocol (internal/workerid/model/fence.pml)
# with SPIN; docs/guarantees.md ("What is model-checked") explains it.
#   scripts/model.sh test    the fenced model, 2 nodes and 3 worker ids, every
#                            fault (make test); each control model finds its
#                            counterexample, and the committed trails still
#                            replay to the committed schedules
#   scripts/model.sh verify  the same with 3 nodes (make verify)
#   scripts/model.sh trails  writes the control models' trails and schedules
#                            to internal/workerid/model/trails/
# Needs spin and gcc (scripts/servers.sh installs spin). MODEL_MEM bounds the
# verifier's memory in MiB (default 2048).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-test}
model=internal/workerid/model
mem=${MODEL_MEM:-2048}
[ "$mode" != verify ] || mem=${MODEL_MEM:-4096}
command -v spin >/dev/null || { echo "model: spin is not installed (Debian package spin; scripts/servers.sh installs it)" >&2; exit 1; }
work=$(mktemp -d /tmp/shardkeeper-model.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp "$model/fence.pml" "$work/"

# Bounds: see docs/guarantees.md. Every fault: lost responses and injected
# errors (MAXF of them), session expiry at any point, a clock step within
# the skew bound (STEPS), an operator deleting a fence (OPS).
fenced_test="-DN=2 -DK=3 -DATT=1 -DTMAX=1 -DW=1 -DSK=1 -DMAXF=1 -DSTEPS=1 -DOPS=1"
# 3 nodes: three nodes racing for the ids, session expiry at any point,
# stamping while expired. Within these bounds no successor can stamp above
# its predecessor's reservation (the probe reports it): that case, the
# injected registry faults, the clock step and the fence deletion are
# checked by the 2-node run. (Time 0-2, or a fence deletion, takes 3 nodes
# past 160 million states and 10 GiB.)
fenced_verify="-DN=3 -DK=3 -DATT=1 -DTMAX=1 -DW=1 -DSK=1 -DMAXF=0 -DSTEPS=0 -DOPS=0"
# The controls: the same bounds (their shortest counterexamples need no
# injected fault).
control=$fenced_test

# verify NAME DEFINES STORE HASHBITS: the model with DEFINES must hold
# (STORE -DCOLLAPSE: every state stored exactly, compressed).
verify() {
	local name=$1 defs=$2 store=$3 bits=$4 out
	(cd "$work" && rm -rf "$name" && mkdir "$name" && cp fence.pml "$name/" && cd "$name" &&
		spin -a $defs fence.pml >/dev/null &&
		gcc -O2 -w -DSAFETY -DNOFAIR $store -DMEMLIM="$mem" -o pan pan.c)
	local start=$SECONDS
	out=$(cd "$work/$name" && ./pan -m1000000 -c1 -w"$bits" 2>&1) || true
	if ! grep -q "errors: 0" <<<"$out" || grep -q "reached -DMEMLIM\|max search depth too small" <<<"$out"; then
		echo "$out" >&2
		echo "model: $name ($defs): FAILED (see the output above; a trail is in $work/$name)" >&2
		trap - EXIT
		exit 1
	fi
	echo "model: $name ($defs): no assertion violated, no invalid end state;" \
		"$(grep -o '[0-9]* states, stored' <<<"$out"), $(grep -o '[0-9]* states, matched' <<<"$out")," \
		"$(grep -o '[0-9.]*.total actual memory usage' <<<"$out" | awk '{print $1}') MB, $((SECONDS - start)) s"
}

# control VARIANT: the model with VARIANT must fail; prints the schedule of
# the shortest counterexample (breadth-first) to $work/VARIANT.txt.
control() {
	local v=$1 d out
	d=-D$(tr 'a-z-' 'A-Z_' <<<"$v")
	(cd "$work" && rm -rf "$v" && mkdir "$v" && cp fence.pml "$v/" && cd "$v" &&
		spin -a $d $control fence.pml >/dev/null &&
		gcc -O2 -w -DSAFETY -DNOFAIR -DBFS -DMEMLIM="$mem" -o pan pan.c)
	out=$(cd "$work/$v" && ./pan -c1 2>&1) || true
	if ! grep -q "assertion violated" <<<"$out"; then
		echo "$out" >&2
		echo "model: control $v: no counterexample; the model cannot tell the unsafe variant from ours" >&2
		exit 1
	fi
	(cd "$work/$v" && spin -t -T $d $control fence.pml | grep '^@' >"../$v.txt")
	echo "model: control $v: counterexample found, $(grep -c . "$work/$v.txt") steps: $(grep -o 'assertion violated.*' <<<"$out" | head -1)"
}

# probe DEFINES [info]: the bounds reach a takeover in which both holders of
# one worker id stamp keys (else the check above would hold vacuously for
# it); with info, only report it.
probe() {
	local out
	(cd "$work" && rm -rf probe && mkdir probe && cp fence.pml probe/ && cd probe &&
		spin -a -DPROBE_TAKEOVER $1 fence.pml >/dev/null &&
		gcc -O2 -w -DSAFETY -DNOFAIR -DBFS -DMEMLIM="$mem" -o pan pan.c)
	out=$(cd "$work/probe" && ./pan -c1 2>&1) || true
	if ! grep -q "assertion violated" <<<"$out"; then
		if [ "${2:-}" = info ]; then
			echo "model: probe: these bounds reach no takeover in which both holders stamp (the 2-node run checks it)"
			return
		fi
		echo "model: the bounds ($1) reach no takeover in which both holders stamp: the check proves nothing" >&2
		exit 1
	fi
	echo "model: probe: the bounds reach a takeover in which both holders of one worker id stamp keys"
}

case $mode in
test | verify)
	if [ "$mode" = test ]; then
		verify fenced "$fenced_test" -DCOLLAPSE 26
	else
		verify fenced-3 "$fenced_verify" -DCOLLAPSE 27
	fi
	if [ "$mode" = test ]; then probe "$fenced_test"; else probe "$fenced_verify" info; fi
	for v in lease-only ignore-floor trust-absent; do
		control "$v"
		# The committed trail still replays on the model to the committed schedule.
		d=-D$(tr 'a-z-' 'A-Z_' <<<"$v")
		(cd "$work/$v" && spin -t -T -k "$OLDPWD/$model/trails/$v.trail" $d $control fence.pml | grep '^@' >"../$v.committed.txt")
		if ! diff -u "$model/trails/$v.txt" "$work/$v.committed.txt" >&2; then
			echo "model: $model/trails/$v.trail no longer replays to $v.txt: run scripts/model.sh trails and TestModelTrails" >&2
			exit 1
		fi
	done
	;;
trails)
	for v in lease-only ignore-floor trust-absent; do
		control "$v"
		cp "$work/$v/fence.pml.trail" "$model/trails/$v.trail"
		cp "$work/$v.txt" "$model/trails/$v.txt"
	done
	;;
*)
	echo "usage: scripts/model.sh test|verify|trails" >&2
	exit 2
	;;
esac
