#!/usr/bin/env bash
# Benchmark of agent-deck-watchdog against the fake agent-deck CLI
# (tests/fake-agent-deck). See bench/README.md for what is measured and how.
#
#   bench/run.sh            build the release binary, run everything, print a table
#   BENCH_KEEP=1 bench/run.sh   keep the temp dir (daemon logs, call logs) afterwards
#   BENCH_BIN=path bench/run.sh bench that binary instead of building one
#   BENCH_ROUNDS, BENCH_FLOOD, BENCH_MIN_GAP   see below
#
# Needs bash, python3 (stdlib only) and coreutils. Linux only (/proc, inotify).
set -euo pipefail

ROUNDS=${BENCH_ROUNDS:-20}
FLOOD=${BENCH_FLOOD:-20000}
# Seconds between two hook renames for the conductor (see cmd_latency); 0 lets
# rounds follow each other as soon as the daemon is quiet.
MIN_GAP=${BENCH_MIN_GAP:-1.5}

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The interpreter's real path, past any version-manager shim (pyenv), which
# would otherwise add its own start-up to every fake CLI call.
python=$(python3 -c 'import sys; print(sys.executable)')
work=$(mktemp -d "${TMPDIR:-/tmp}/agent-deck-watchdog-bench.XXXXXX")
helper="$work/bench.py"
daemon_pid=""
child_pid=""

say() { printf '%s\n' "$*" >&2; }

# Stops whatever this script started: the command in progress (cargo, a
# helper, a --once run) with its descendants, the daemon (SIGTERM, then
# SIGKILL), and any fake CLI process left over (found by the state path in its
# environment, which is unique to this run).
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [ -n "$child_pid" ]; then
        if [ -f "$helper" ]; then
            "$python" "$helper" reap "$work" "$child_pid" || true
        fi
        kill "$child_pid" 2>/dev/null || true
        wait "$child_pid" 2>/dev/null || true
    fi
    stop_daemon >/dev/null 2>&1 || true
    if [ -f "$helper" ]; then
        "$python" "$helper" reap "$work" || true
    fi
    if [ "${BENCH_KEEP:-0}" = 1 ]; then
        say "kept $work"
    else
        rm -rf "$work"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Runs a command in the background and waits for it, so that a signal to
# this script is handled at once rather than after the command finishes.
run() {
    "$@" &
    child_pid=$!
    local rc=0
    wait "$child_pid" || rc=$?
    child_pid=""
    return "$rc"
}

py() { run "$python" "$helper" "$@"; }

# The environment of every watchdog run: nothing inherited from the caller
# (no Telegram settings, no real agent-deck), everything under $work.
# $1 = name of this run's directory under $work.
wd_env() {
    local d="$work/$1"
    printf '%s\0' \
        "PATH=$PATH" \
        "HOME=$d/home" \
        "AGENT_DECK_ROOT=$d/root" \
        "AGENT_DECK_HOOKS_DIR=$d/hooks" \
        "AGENT_DECK_BIN=$fake" \
        "FAKE_AGENT_DECK_STATE=$d/state.json" \
        "FAKE_AGENT_DECK_LOG=$d/calls.log"
}

# Starts the daemon for run $1 with extra VAR=value settings; stderr to $1/daemon.log.
start_daemon() {
    local name=$1
    shift
    local -a env
    mapfile -d '' env < <(wd_env "$name")
    env -i "${env[@]}" "$@" "$bin" 2>"$work/$name/daemon.log" &
    daemon_pid=$!
}

# SIGTERM, wait up to 5 s, then SIGKILL. Prints the seconds the exit took.
stop_daemon() {
    [ -n "$daemon_pid" ] || return 0
    if ! "$python" "$helper" term-and-wait "$daemon_pid" 5; then
        say "daemon $daemon_pid ignored SIGTERM for 5 s; killing it"
        kill -KILL "$daemon_pid" 2>/dev/null || true
    fi
    wait "$daemon_pid" 2>/dev/null || true
    daemon_pid=""
}

require_alive() {
    if ! kill -0 "$daemon_pid" 2>/dev/null; then
        say "the daemon exited early; its log:"
        cat "$work/$1/daemon.log" >&2
        exit 1
    fi
}

write_helper() {
cat >"$helper" <<'PY'
"""Measurement helpers for bench/run.sh (python3 stdlib only)."""
import fcntl
import json
import os
import signal
import statistics
import subprocess
import sys
import time

CONDUCTOR = "3f9c2a1b-1755891234"


class CallLog:
    """Follows the fake's call log (one JSON object per line)."""

    def __init__(self, path):
        self.path = path
        self.offset = 0
        self.calls = []
        self.changed = time.monotonic()

    def poll(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n")
        if end < 0:
            return []
        self.offset += end + 1
        new = [json.loads(l) for l in data[:end + 1].splitlines() if l.strip()]
        if new:
            self.calls.extend(new)
            self.changed = time.monotonic()
        return new

    def wait_quiet(self, quiet=0.5, timeout=30.0, need=None):
        """Until `need` (a predicate on all calls) holds and no call came for `quiet` s."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.poll()
            ok = need is None or need(self.calls)
            if ok and time.monotonic() - self.changed >= quiet:
                return True
            time.sleep(0.01)
        return False


def is_call(c, *words):
    argv = c["argv"]
    return all(w in argv for w in words)


def kind(c):
    argv = list(c["argv"])
    if argv[:1] == ["-p"]:
        argv = argv[2:]
    argv = [a for a in argv if not a.startswith("-")]
    if argv and argv[0] == "session" and len(argv) > 1:
        name = "session " + argv[1]
    else:
        name = argv[0] if argv else "?"
    if "--all" in c["argv"]:
        name += " --all"
    elif name == "session output" and "--pane" in c["argv"]:
        name += " --pane"
    return name


def locked_update(state_path, fn):
    """Read-modify-write of the fake's state under its own lock (<state>.lock)."""
    fd = os.open(state_path + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            with open(state_path, encoding="utf-8") as f:
                state = json.load(f)
        except FileNotFoundError:
            state = {}
        fn(state)
        tmp = "%s.bench-%d.tmp" % (state_path, os.getpid())
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(state, f, indent=2)
        os.replace(tmp, state_path)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def set_status(state_path, sid, status):
    def fn(state):
        for s in state.get("sessions", []):
            if s.get("id") == sid:
                s["status"] = status
    locked_update(state_path, fn)


def write_hook(hooks, sid):
    """Like agent-deck: write .<id>.json.tmp-<random>, then rename onto <id>.json.
    Returns the wall-clock time right after the rename."""
    tmp = os.path.join(hooks, ".%s.json.tmp-%s" % (sid, os.urandom(4).hex()))
    body = json.dumps({"status": "dead", "event": "Stop", "ts": int(time.time())},
                      separators=(",", ":"))
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(body)
    os.rename(tmp, os.path.join(hooks, sid + ".json"))
    return time.time()


def conductor(i, profile):
    return {"id": "%08x-%d" % (0x3f9c2a00 + i, 1755891200 + i), "title": "conductor-%d" % i,
            "group": "conductor", "profile": profile, "status": "running",
            "pane": "frozen pane", "transcript": ""}


def cmd_state_fleet(path):
    """10 critical sessions, conductor-0..9, alternating between two profiles."""
    sessions = [conductor(i, "default" if i % 2 == 0 else "work") for i in range(10)]
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"profiles_exist": True, "sessions": sessions}, f, indent=2)


def cmd_state_one(path):
    s = conductor(0, "default")
    s["id"] = CONDUCTOR
    s["on_restart"] = "ok"
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"profiles_exist": True, "sessions": [s]}, f, indent=2)


def cmd_count(log, out):
    c = CallLog(log)
    c.poll()
    kinds = {}
    for call in c.calls:
        kinds[kind(call)] = kinds.get(kind(call), 0) + 1
    json.dump({"calls": len(c.calls), "kinds": kinds}, open(out, "w"))


def cmd_latency(state, log, hooks, rounds, out, pid, min_gap):
    """Rounds of: status -> error, hook rename, wait for `session restart`.
    Renames are at least min_gap s apart: the daemon checks one session's hook
    at most once a second and defers a closer one, which is not what this
    measures."""
    rounds, min_gap = int(rounds), float(min_gap)
    last_rename = 0.0
    c = CallLog(log)
    if not c.wait_quiet(need=lambda calls: any(is_call(x, "list", "--all") for x in calls)):
        sys.exit("the daemon never polled and went quiet")
    lat, calls_per_round, missed, before_restart = [], [], 0, 0
    for r in range(rounds):
        if not os.path.exists("/proc/%s" % pid):
            sys.exit("the daemon died in round %d" % (r + 1))
        time.sleep(max(0.0, last_rename + min_gap - time.time()))
        c.poll()
        before = len(c.calls)
        set_status(state, CONDUCTOR, "error")
        t_rename = last_rename = write_hook(hooks, CONDUCTOR)
        seen = None
        deadline = time.monotonic() + 10
        while seen is None and time.monotonic() < deadline:
            for call in c.poll():
                if is_call(call, "session", "restart") and seen is None:
                    seen = call
            if seen is None:
                time.sleep(0.01)
        if seen is None:
            missed += 1
            print("round %d: no `session restart` within 10 s" % (r + 1), file=sys.stderr)
            set_status(state, CONDUCTOR, "running")
        else:
            lat.append(seen["ts"] - t_rename)
            before_restart = c.calls.index(seen) - before
        # The restart is followed by a verify `show` and the continuity `send`.
        if not c.wait_quiet(timeout=20):
            sys.exit("the daemon did not go quiet after round %d" % (r + 1))
        calls_per_round.append(len(c.calls) - before)
    json.dump({"latencies": lat, "missed": missed, "calls_per_round": calls_per_round,
               "calls_before_restart": before_restart}, open(out, "w"))


def cmd_flood(hooks, log, n, out):
    """n renames onto <id>.json for ids no profile lists, as fast as possible."""
    n = int(n)
    c = CallLog(log)
    c.poll()
    before = len(c.calls)
    t0 = time.monotonic()
    for i in range(n):
        write_hook(hooks, "0badf00d-%d" % (1700000000 + i))
    t1 = time.monotonic()
    quiet = c.wait_quiet(timeout=60)
    t2 = time.monotonic()
    kinds = {}
    for call in c.calls[before:]:
        kinds[kind(call)] = kinds.get(kind(call), 0) + 1
    json.dump({"n": n, "write_s": t1 - t0, "settle_s": max(0.0, t2 - t1 - 0.5) if quiet else None,
               "calls": len(c.calls) - before, "kinds": kinds}, open(out, "w"))


def cmd_rss(pid, out):
    fields = {}
    with open("/proc/%s/status" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS", "Threads"):
                fields[key] = int(value.split()[0])
    fds = len(os.listdir("/proc/%s/fd" % pid))
    fields["fds"] = fds
    json.dump(fields, open(out, "w"))


def kill_tree(root):
    """SIGTERM to `root` and everything below it (children found via /proc)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    todo, tree = [root], []
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    for pid in tree:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass


def cmd_reap(work, *roots):
    """Kills the given process trees, or else leftover fake CLI processes of this
    run (their state file is under work)."""
    if roots:
        for root in roots:
            kill_tree(int(root))
        return
    needle = ("FAKE_AGENT_DECK_STATE=" + work.rstrip("/") + "/").encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % entry, "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if any(kv.startswith(needle) for kv in env):
            try:
                os.kill(int(entry), signal.SIGKILL)
                print("reaped stray process %s" % entry, file=sys.stderr)
            except OSError:
                pass


def cmd_term_and_wait(pid, timeout):
    """SIGTERM to `pid`; prints how long it took to exit (or turn zombie);
    fails after timeout."""
    try:
        os.kill(int(pid), signal.SIGTERM)
    except OSError:
        pass
    t0 = time.monotonic()
    while time.monotonic() - t0 < float(timeout):
        try:
            with open("/proc/%s/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            state = "gone"
        if state in ("Z", "X", "gone"):
            print("%.2f" % (time.monotonic() - t0))
            return
        time.sleep(0.005)
    sys.exit(1)


def load(path):
    with open(path) as f:
        return json.load(f)


def cmd_fakecost(fake, state, out):
    """Median wall time of one `session show` through the fake, 10 runs."""
    env = dict(os.environ, FAKE_AGENT_DECK_STATE=state)
    env.pop("FAKE_AGENT_DECK_LOG", None)
    times = []
    for _ in range(10):
        t0 = time.monotonic()
        subprocess.run([fake, "session", "show", CONDUCTOR, "--json"], env=env,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=True)
        times.append(time.monotonic() - t0)
    json.dump({"median_s": statistics.median(times)}, open(out, "w"))


def cmd_report(work, rounds, flood):
    rounds, flood = int(rounds), int(flood)
    once = [load(os.path.join(work, "once-%d.json" % i)) for i in range(1, 4)]
    times = [float(open(os.path.join(work, "once-%d.time" % i)).read()) for i in range(1, 4)]
    lat = load(os.path.join(work, "latency.json"))
    after = load(os.path.join(work, "after-flood.json"))
    fl = load(os.path.join(work, "flood.json"))
    rss1 = load(os.path.join(work, "rss-latency.json"))
    rss2 = load(os.path.join(work, "rss-flood.json"))
    ms = [x * 1000 for x in lat["latencies"]]
    post = [x * 1000 for x in after["latencies"]]
    fake_ms = load(os.path.join(work, "fakecost.json"))["median_s"] * 1000
    drops = open(os.path.join(work, "drops")).read().strip() or "?"
    stop_s = open(os.path.join(work, "stop_s")).read().strip()
    rows = [
        ("healthy tick, 10 critical sessions, 2 profiles",
         "%s CLI calls (expect 3)" % "/".join(str(o["calls"]) for o in once)),
        ("  calls by kind", ", ".join("%s %d" % kv for kv in sorted(once[0]["kinds"].items()))),
        ("  --once wall time", "%.0f ms median of 3" % (statistics.median(times) * 1000)),
        ("hook rename -> `session restart`, %d rounds" % rounds,
         ("median %.0f ms, worst %.0f ms, best %.0f ms" % (statistics.median(ms), max(ms), min(ms)))
         if ms else "no restart seen"),
        ("  rounds without a restart", str(lat["missed"])),
        ("  CLI calls per round", "median %d, %d of them before the restart"
         % (statistics.median(lat["calls_per_round"]), lat.get("calls_before_restart", 0))),
        ("  one fake CLI call (python3 start-up)", "%.0f ms median of 10" % fake_ms),
        ("peak RSS (VmHWM) after the latency run",
         "%.1f MiB (RSS %.1f MiB, %d threads, %d fds)"
         % (rss1["VmHWM"] / 1024, rss1["VmRSS"] / 1024, rss1["Threads"], rss1["fds"])),
        ("flood: %d renames for unknown ids" % flood,
         ("written in %.1f s, daemon quiet %.1f s later" % (fl["write_s"], fl["settle_s"]))
         if fl["settle_s"] is not None else
         "written in %.1f s, daemon not quiet 60 s later" % fl["write_s"]),
        ("  CLI calls caused by the flood", "%d (%s)" % (
            fl["calls"], ", ".join("%s %d" % kv for kv in sorted(fl["kinds"].items())))),
        ("  queue drops reported at shutdown", drops),
        ("peak RSS (VmHWM) after the flood",
         "%.1f MiB (RSS %.1f MiB, %d threads, %d fds)"
         % (rss2["VmHWM"] / 1024, rss2["VmRSS"] / 1024, rss2["Threads"], rss2["fds"])),
        ("hook -> restart after the flood", ("%.0f ms" % post[0]) if post else "no restart seen"),
        ("SIGTERM -> exit", "%s s" % stop_s),
    ]
    width = max(len(r[0]) for r in rows)
    print()
    print("agent-deck-watchdog bench (fake agent-deck; %s)" % time.strftime("%Y-%m-%d"))
    print("-" * (width + 2 + 50))
    for name, value in rows:
        print("%-*s  %s" % (width, name, value))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    {
        "state-fleet": cmd_state_fleet, "state-one": cmd_state_one, "count": cmd_count,
        "latency": cmd_latency, "flood": cmd_flood, "rss": cmd_rss, "reap": cmd_reap,
        "report": cmd_report, "fakecost": cmd_fakecost, "term-and-wait": cmd_term_and_wait,
    }[cmd](*args)


if __name__ == "__main__":
    main()
PY
}

# ---------------------------------------------------------------- build
write_helper
# The fake CLI, run as `python -S`: it needs only the standard library, and
# skipping site-packages start-up keeps each call's cost, which every latency
# below includes several times, down to the interpreter itself.
fake="$work/agent-deck"
printf '#!/bin/sh\nexec %q -S %q "$@"\n' "$python" "$top/tests/fake-agent-deck" >"$fake"
chmod +x "$fake"
if [ -n "${BENCH_BIN:-}" ]; then
    bin=$BENCH_BIN
else
    say "building the release binary..."
    run cargo build --release --quiet --manifest-path "$top/Cargo.toml"
    bin="${CARGO_TARGET_DIR:-$top/target}/release/agent-deck-watchdog"
fi
[ -x "$bin" ] || { say "no binary at $bin"; exit 1; }

# ---------------------------------------------------------------- a. healthy tick
say "a. CLI calls per healthy tick (--once, 10 critical sessions, 2 profiles)..."
for i in 1 2 3; do
    d="$work/once-$i"
    mkdir -p "$d/home" "$d/hooks"
    py state-fleet "$d/state.json"
    mapfile -d '' env < <(wd_env "once-$i")
    t0=$(date +%s.%N)
    run env -i "${env[@]}" "$bin" --once 2>"$d/daemon.log" || { cat "$d/daemon.log" >&2; exit 1; }
    t1=$(date +%s.%N)
    "$python" -c 'import sys; print(float(sys.argv[2]) - float(sys.argv[1]))' "$t0" "$t1" >"$work/once-$i.time"
    py count "$d/calls.log" "$work/once-$i.json"
done

# ---------------------------------------------------------------- b. latency
say "b. hook rename -> session restart latency, $ROUNDS rounds..."
d="$work/daemon"
mkdir -p "$d/home" "$d/hooks"
py state-one "$d/state.json"
# RATE_LIMIT_MAX and CASCADE_THRESHOLD are raised so that neither the
# per-session budget (3 in 300 s) nor the global burst guard (5 restarts in
# 10 s pause every restart for 60 s) stops 20 restarts in ~20 s.
start_daemon daemon \
    SAFETY_POLL_INTERVAL_S=30 LIVENESS_CONFIRM_GAP_S=0.05 MIN_GLOBAL_RESTART_INTERVAL_S=0 \
    POST_RESTART_COOLDOWN_S=0 RESTART_VERIFY_S=0.2 START_VERIFY_S=0.2 RATE_LIMIT_MAX=1000 \
    CASCADE_THRESHOLD=1000
py latency "$d/state.json" "$d/calls.log" "$d/hooks" "$ROUNDS" "$work/latency.json" "$daemon_pid" "$MIN_GAP"
require_alive daemon
py fakecost "$fake" "$d/state.json" "$work/fakecost.json"

# ---------------------------------------------------------------- c. memory
say "c. peak RSS after the latency run, then after $FLOOD hook renames for unknown ids..."
py rss "$daemon_pid" "$work/rss-latency.json"
py flood "$d/hooks" "$d/calls.log" "$FLOOD" "$work/flood.json"
require_alive daemon
py rss "$daemon_pid" "$work/rss-flood.json"
# Still reacting after the flood? One more round.
py latency "$d/state.json" "$d/calls.log" "$d/hooks" 1 "$work/after-flood.json" "$daemon_pid" 0
stop_daemon >"$work/stop_s"
# The daemon's last line: "<n> agent-deck calls, <f> failed, <d> queue drops".
grep -o '[0-9]* queue drops' "$d/daemon.log" | tail -n 1 | cut -d' ' -f1 >"$work/drops" || true

py report "$work" "$ROUNDS" "$FLOOD"
