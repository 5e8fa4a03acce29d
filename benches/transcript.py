#!/usr/bin/env python3
"""The transcript check of issue #36: the working tree's binary and a base
commit's binary run the same scenarios against the simulator they carry
(`agent-deck-watchdog sim`), and what each says and writes must be byte-
identical once what legitimately varies (wall-clock times, durations, pids,
temp paths, the simulator's random tmux names) is masked.

    python3 benches/transcript.py [--base REV | --self] [--only NAME]… [--keep]
    python3 benches/transcript.py --list | --masks | --remask

Builds both binaries (debug profile, see `build_work`), runs every scenario
below against each in a fresh temp dir, writes the raw and the masked
transcripts to `<target>/transcript/`, prints the unified diff of the masked
ones, and exits 1 on any difference, 0 when they are byte-identical (2 when
it could not run: a build failed, a scenario hung).

A developer tool, not part of CI: it needs Linux, git, cargo and python3.
"""

import argparse
import calendar
import difflib
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN_NAME = "agent-deck-watchdog"
DEFAULT_BASE = "291ea91"
# The longest one run of the binary may take before the check gives up.
RUN_LIMIT_S = 60

# ---------------------------------------------------------------------------
# Building the two binaries.
# ---------------------------------------------------------------------------


def fail(message):
    """The check could not run: one line on stderr, exit 2 (1 is a difference)."""
    print(f"transcript: {message}", file=sys.stderr)
    sys.exit(2)


def git(*args, cwd):
    p = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"git {' '.join(args)}: {p.stderr.strip()}")
    return p.stdout.strip()


def target_dir(root):
    """Cargo's target dir for the tree at `root` (a workspace's, once it is one)."""
    meta = subprocess.run(
        ["cargo", "metadata", "--no-deps", "--format-version", "1"],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return Path(json.loads(meta)["target_directory"])


def cargo_build(cwd, extra=()):
    """`cargo build` of the binary; the path of the executable cargo names.

    The executable is found by name in cargo's own artifact messages, not
    by assuming a layout, so a tree that became a workspace (or sets
    CARGO_TARGET_DIR) is built and found the same way."""
    cmd = ["cargo", "build", "--bin", BIN_NAME, "--message-format=json-render-diagnostics"]
    cmd += list(extra)
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        fail(f"cargo build failed in {cwd}")
    found = None
    for line in proc.stdout.splitlines():
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        target = msg.get("target") or {}
        if (
            msg.get("reason") == "compiler-artifact"
            and target.get("name") == BIN_NAME
            and "bin" in target.get("kind", [])
            and msg.get("executable")
        ):
            found = Path(msg["executable"])
    if found is None or not found.exists():
        fail(f"cargo built no {BIN_NAME} executable in {cwd}")
    return found


def build_work(root):
    """The working tree's binary. Debug, not release: the release profile
    is thin LTO, minutes on a shared 2-core machine, and debug shares
    `target/debug` with `cargo build` and `cargo test`, so it is usually
    built already. Behaviour does not depend on the profile; timing does,
    and the scenarios are built so that it cannot show (see SCENARIOS)."""
    return cargo_build(root)


def build_base(root, rev):
    """The binary of commit `rev`, built in a temporary `git worktree` with
    its own target dir under `<target>/transcript-base/` (dependencies are
    reused from run to run) and kept there by commit, so a second check
    against the same commit builds nothing."""
    sha = git("rev-parse", "--verify", f"{rev}^{{commit}}", cwd=root)
    cache = target_dir(root) / "transcript-base"
    kept = cache / "bin" / sha / BIN_NAME
    if kept.exists():
        print(f"transcript: base {rev} = {sha[:12]}: reusing {kept}", file=sys.stderr)
        return sha, kept
    tmp = Path(tempfile.mkdtemp(prefix="adw-transcript-base-"))
    src = tmp / "src"
    print(f"transcript: building base {rev} = {sha[:12]} in {src}", file=sys.stderr)
    git("worktree", "add", "--detach", str(src), sha, cwd=root)
    try:
        built = cargo_build(src, ["--target-dir", str(cache / "target")])
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built, kept)
    finally:
        git("worktree", "remove", "--force", str(src), cwd=root)
        shutil.rmtree(tmp, ignore_errors=True)
    return sha, kept


# ---------------------------------------------------------------------------
# Fixtures: the sessions of tests/support/fixtures.rs, as simulator state.
# ---------------------------------------------------------------------------

CONDUCTOR = "3f9c2a1b-1755891234"
NEWEST = "1.16.26"
TELEGRAM = "plugin:telegram@claude-plugins-official"
DYING = "No conversation found to continue"


def session(sid, title, group, status):
    return {"id": sid, "title": title, "group": group, "profile": "default", "status": status}


def conductor(sid=CONDUCTOR, title="conductor-ops", status="error", **more):
    """A conductor that has run (a claude_session_id) with a frozen pane."""
    c = session(sid, title, "conductor", status)
    c.update(claude_session_id=f"c1a0de00-{sid}", pane="frozen pane", transcript="")
    c.update(more)
    return c


def never_started(sid, title):
    c = conductor(sid, title, "error")
    c["claude_session_id"] = ""
    return c


AUTH_HOLD = {
    "reason": "auth_death",
    "remedy": "log in again",
    "evidence": "API Error: 401",
    "boot_attempts": 1,
    "ts": 1755891300,
}


def auth_held(sid=CONDUCTOR, title="conductor-ops"):
    return conductor(sid, title, "error", substate="auth-401", auth_hold=AUTH_HOLD)


def spawn_failing(reason, came_up=False, **more):
    return conductor(
        on_restart="fail",
        spawn_failure={
            "reason": reason,
            "dying_output": f"{DYING}\n",
            "elapsed_ms": 980,
            "came_up": came_up,
        },
        **more,
    )


def mixed_fleet():
    """first_pass.rs's fleet, less its dead conductor: one critical session
    of each other kind the --once summary tells apart, and one worker. The
    one session the pass queues for the restart worker (auth-held: the
    worker's liveness read finds the hold) comes last, so that no line the
    tick logs can interleave with the worker's (the dead one has its own
    fleet, `crash-revived`, in the same forms)."""
    stopped = conductor("50505050-1755890000", "conductor-off", "stopped", tmux_alive=False)
    return [
        conductor("11111111-1755890000", "conductor-ok", "running"),
        never_started("33333333-1755890000", "conductor-new"),
        stopped,
        session("77777777-1755890000", "worker-1", "", "waiting"),
        auth_held("44444444-1755890000", "conductor-login"),
    ]


def state(sessions, **more):
    s = {"profiles_exist": True, "sessions": sessions}
    s.update(more)
    return s


# ---------------------------------------------------------------------------
# Scenarios.
#
# Each scenario is a fresh install (temp HOME, agent-deck root, hooks dir,
# simulator state and call log) and a list of steps. Determinism comes from
# their design, not from masks:
# - one fault per scenario, and `--once` (one pass, which waits for the work
#   it started) instead of a daemon;
# - verify windows of 0 s, so that a status poll reads exactly once whatever
#   the machine's speed (RESTART_VERIFY_S=0, START_VERIFY_S=0);
# - the restart worker starts after the pass's tick is over: `--once` writes
#   daemon-status.json (and metrics.prom, which `status` reads back) at the
#   end of its tick while the worker it queued runs on, so the call counts
#   in it would depend on which came first. Before each `--once` the
#   watchdog's state.json is told a restart call happened just now
#   (`last_restart_at`), and MIN_GLOBAL_RESTART_INTERVAL_S=0.5 makes every
#   job wait its turn that long; one job's continuity message also goes out
#   before the next job's first call.
#
# Steps:
#   ("run", [args], {env})     the binary with `args`: its exit code, stdout, stderr
#                              (with `--once`: state.json's last_restart_at set first)
#   ("sim", {key: value})      merge keys into the simulator's state file
#   ("session", {key: value})  merge keys into the state's first session
#   ("sleep", secs)            let wall-clock time pass (a probe or backoff to end)
#   ("write", rel, text, mode) write a file under the scenario dir
#   ("wait_lines", rel, n)     wait (≤ 10 s) until a file under the scenario dir has n lines
#   ("pane_host",)             start the simulator's pane host (its tmux server)
#   ("run_until", [args], {env}, (words, n), then)
#                              run, and once the n-th call with all `words` is
#                              logged do `then`: ("sim"|"session", {…}) or "SIGTERM"
#   ("daemon", [args])         start the daemon; wait for its first tick
#   ("ticks", n)               wait until the daemon has begun n more ticks
#   ("stop_daemon",)           SIGTERM it and wait
# After the last step every file under the watchdog dir, the simulator's
# state and call log, and the scenario's `extra_files` are appended.
# ---------------------------------------------------------------------------

# Wd::new()'s settings (tests/support/watchdog.rs), with the verify windows
# at 0 (see above).
FAST_ENV = {
    "SAFETY_POLL_INTERVAL_S": "0.2",
    "LIVENESS_CONFIRM_GAP_S": "0.05",
    "MIN_GLOBAL_RESTART_INTERVAL_S": "0.5",
    "POST_RESTART_COOLDOWN_S": "0",
    "RESTART_VERIFY_S": "0",
    "START_VERIFY_S": "0",
    "SUBPROCESS_TIMEOUT_S": "5",
    "RATE_LIMIT_WINDOW_S": "300",
}

ONCE_FORMS = [
    ["--once"],
    ["--once", "--json"],
    ["--once", "--dry-run"],
    ["--once", "--dry-run", "--json"],
    ["--once", "--verbose"],
    ["--once", "--verbose", "--json"],
    ["--once", "--dry-run", "--verbose"],
    ["--once", "--dry-run", "--verbose", "--json"],
]

READERS = [
    ["status"],
    ["status", "--json"],
    ["history"],
    ["history", "--json"],
    ["history", "--report"],
    ["history", CONDUCTOR],
    ["history", CONDUCTOR, "--report"],
    ["history", "--since", "all", "--json"],
]


def readers():
    return [("run", r, {}) for r in READERS]


def once_then_read(fleet, env=None, extra=(), times=1, **sim):
    """A fleet through `--once` (`times` passes), then every reader."""
    steps = [("run", ["--once"], {})] * times
    return {"state": state(fleet, **sim), "env": env or {}, "steps": steps + list(extra) + readers()}


SCENARIOS = {}


def scenario(name, **spec):
    SCENARIOS[name] = spec


# The command line itself: help, version, usage errors.
scenario(
    "cli",
    state=state([]),
    steps=[
        ("run", ["--help"], {}),
        ("run", ["-h"], {}),
        ("run", ["--version"], {}),
        ("run", ["-V"], {}),
        ("run", ["--bogus"], {}),
        ("run", ["frobnicate"], {}),
        ("run", ["--json"], {}),
        ("run", ["--once", "--frobnicate"], {}),
        ("run", ["history", "--help"], {}),
        ("run", ["history", "--since", "soon"], {}),
        ("run", ["history", "a-1", "--json", "--report"], {}),
        ("run", ["history", "a-1", "b-2"], {}),
        ("run", ["drill"], {}),
        ("run", ["drill", "--help"], {}),
        ("run", ["drill", "x", "--timeout", "0"], {}),
        ("run", ["task", "--help"], {}),
        ("run", ["task"], {}),
        ("run", ["status", "--bogus"], {}),
        # Readers on an install that never ran.
        ("run", ["status"], {}),
        ("run", ["status", "--json"], {}),
        ("run", ["history"], {}),
        ("run", ["history", CONDUCTOR], {}),
        ("run", ["task", "list"], {}),
        ("run", ["task", "list", "--json"], {}),
    ],
)

# Effective settings: defaults, a few set, and bad values.
scenario(
    "print-config",
    state=state([]),
    env={},
    steps=[
        ("run", ["--print-config"], {}),
        ("run", ["--print-config", "--dry-run"], {}),
        (
            "run",
            ["--print-config"],
            {
                "RATE_LIMIT_MAX": "3",
                "RESUME_SCOPE": "all",
                "PANE_WATCH": "off",
                "CONTINUITY_MESSAGE": "",
                "TELEGRAM_BOT_TOKEN": "1:SECRET-TOKEN",
                "TELEGRAM_ESCALATION_CHAT_ID": "42",
                "CRITICAL_TITLE_PATTERNS": "conductor-*,ops-*",
                "PROMPT_RESUME_PROFILES": "personal=/srv/claude-personal",
            },
        ),
        ("run", ["--print-config"], {"SAFETY_POLL_INTERVAL_S": "0"}),
        ("run", ["--print-config"], {"RATE_LIMIT_MAX": "many"}),
        ("run", ["--print-config"], {"RESUME_SCOPE": "everything"}),
        ("run", ["--once"], {"SAFETY_POLL_INTERVAL_S": "-1"}),
    ],
)

# The --once summary in each of its forms, each on a fresh install: of the
# mixed fleet, and of one dead conductor.
for form in ONCE_FORMS:
    suffix = "".join(f.replace("--", "-") for f in form[1:])
    for name, fleet in (("mixed", mixed_fleet()), ("dead", [conductor()])):
        scenario(
            name + suffix,
            state=state(fleet),
            steps=[("run", form, {}), ("run", ["status"], {}), ("run", ["history", "--json"], {})],
        )

# Restart endings, one per scenario.
scenario("crash-revived", **once_then_read([conductor()]))
scenario(
    "crash-revived-tmux-gone",
    **once_then_read([conductor(status="running", tmux_alive=False)]),
)
scenario(
    "refused-freshness",
    **once_then_read([conductor(on_restart="skipped")]),
)
scenario("auth-hold", **once_then_read([auth_held()], times=2))
scenario(
    "pane-active",
    **once_then_read(
        [conductor(pane_moving=True)],
        env={"LIVENESS_SKIP_ESCALATE_AFTER": "2"},
        times=2,
    ),
)
scenario(
    "start-fallback-revived",
    **once_then_read([conductor(on_restart="fail", tmux_alive=False)]),
)
scenario(
    "restart-and-start-failed",
    **once_then_read([conductor(on_restart="fail", on_start="fail")], times=2),
)
scenario(
    "spawn-died-fast",
    **once_then_read([spawn_failing("spawn_died_fast", on_start="ok")], times=2, version=NEWEST),
)
scenario(
    "spawn-unverified-came-up",
    **once_then_read([spawn_failing("spawn_unverified", came_up=True)], version=NEWEST),
)
scenario(
    "spawn-tmux-session-missing",
    **once_then_read([spawn_failing("tmux_session_missing")], version=NEWEST),
)
scenario(
    "spawn-reason-unknown",
    **once_then_read(
        [spawn_failing("tmux_start_failed", on_start="fail")], times=2, version=NEWEST
    ),
)
scenario(
    "rate-limited-429",
    **once_then_read(
        [
            conductor(
                on_restart="no_effect",
                on_start="fail",
                transcript='API Error: 429 {"type":"rate_limit_error"} (429)',
            )
        ],
        env={"RATE_LIMIT_MAX": "1", "API_429_BACKOFF_S": "0.5"},
    ),
)
scenario(
    "budget-spent",
    **once_then_read(
        [conductor(on_restart="no_effect", on_start="already_running")],
        env={"RATE_LIMIT_MAX": "2"},
        times=3,
    ),
)
# A restart that spawned an agent the locked store did not save: tmux (the
# simulator's pane host) lists it, so no start follows.
scenario(
    "restart-unsaved-spawned",
    state=state([conductor(on_restart="unsaved")]),
    steps=[("pane_host",), ("run", ["--once"], {}), ("run", ["--once"], {})] + readers(),
)
# The same answer with tmux unreadable: it may have spawned one.
scenario(
    "restart-unsaved-tmux-unreadable",
    tmux="#!/bin/sh\necho 'tmux: simulated failure' >&2\nexit 1\n",
    **once_then_read([conductor(on_restart="unsaved")]),
)
# The same answer with no tmux server: nothing was spawned.
scenario(
    "restart-unsaved-no-tmux-server",
    **once_then_read([conductor(on_restart="unsaved")], times=2),
)
# The store locked as the restart opens it: nothing spawned, slot given back.
scenario(
    "restart-store-locked",
    **once_then_read([conductor()], faults={"restart": {"mode": "locked"}}),
)
# A restart call our timeout killed, with no tmux session of it: start.
scenario(
    "restart-timed-out",
    **once_then_read(
        [conductor(on_start="ok", tmux_alive=False)],
        env={"SUBPROCESS_TIMEOUT_S": "0.5"},
        delay_s={"restart": 2},
    ),
)
# The start fallback works, then no status read does: unverified, and the
# next pass, which reads it running, settles it. No continuity message: the
# settling pass would send it from its tick, beside daemon-status.json's
# counts (the message itself is in every revive above).
scenario(
    "start-unverified",
    state=state([conductor(on_restart="no_effect", on_start="ok")], delay_s={"start": 1.0}),
    env={"CONTINUITY_MESSAGE": ""},
    steps=[
        (
            "run_until",
            ["--once"],
            {},
            (["session", "start"], 1),
            ("sim", {"faults": {"show": {"mode": "exit1"}}}),
        ),
        ("sim", {"faults": {}}),
        ("run", ["--once"], {}),
    ]
    + readers(),
)
# Stopped by a human while its restart waits its turn.
scenario(
    "stopped-while-queued",
    state=state([conductor()]),
    steps=[
        ("run_until", ["--once"], {}, (["session", "show"], 1), ("session", {"status": "stopped"})),
        ("run", ["--once"], {}),
    ]
    + readers(),
)
# SIGTERM while the restart call runs.
scenario(
    "interrupted",
    state=state([conductor()], delay_s={"restart": 1.0}),
    steps=[
        ("run_until", ["--once"], {}, (["session", "restart"], 1), "SIGTERM"),
        ("sim", {"delay_s": {}}),
        ("run", ["--once"], {}),
    ]
    + readers(),
)
# agent-deck's store locked for the whole fleet, after a pass that read it:
# said once, nothing restarted blind, revived once it reads again.
LOCKED = {"mode": "locked"}
scenario(
    "fleet-store-locked",
    state=state([conductor(status="running")]),
    steps=[
        ("run", ["--once"], {}),
        ("sim", {"faults": {k: LOCKED for k in ["list_all", "list", "show", "restart", "start"]}}),
        ("session", {"status": "error"}),
        ("run", ["--once"], {}),
        ("run", ["--once"], {}),
        ("sim", {"faults": {}}),
        ("run", ["--once"], {}),
    ]
    + readers(),
)
scenario(
    "never-started",
    **once_then_read([never_started(CONDUCTOR, "conductor-ops")], times=2),
)
scenario(
    "stopped-then-error",
    state=state([conductor(status="stopped")]),
    steps=[
        ("run", ["--once"], {}),
        ("session", {"status": "error"}),
        ("run", ["--once"], {}),
        ("run", ["--once"], {}),
    ]
    + readers(),
)
scenario(
    "usage-limit-stall-resumed",
    state=state([conductor(status="idle", substate="usage-limit")]),
    env={"RESUME_STAGGER_S": "0", "RESUME_VERIFY_S": "0.2", "RESUME_PROBE_S": "0.3"},
    steps=[
        ("run", ["--once"], {}),
        ("sleep", 0.5),
        ("run", ["--once"], {}),
        ("sleep", 0.5),
        ("run", ["--once", "--json"], {}),
    ]
    + readers(),
)
scenario(
    "poller-restart",
    state=state([conductor(status="running", channels=[TELEGRAM])]),
    env={"POLLER_CHECK_INTERVAL_S": "0.2"},
    files={
        "home/ops.env": 'export TELEGRAM_STATE_DIR="{dir}/home/tg-ops"\n',
        "home/.config/agent-deck/config.toml": '[conductors.ops.claude]\nenv_file = "~/ops.env"\n',
    },
    steps=[("run", ["--once"], {}), ("run", ["--once"], {})] + readers(),
)

# A model the provider took away: held, never restarted, resumed after
# MODEL_UNAVAILABLE_BACKOFF_S.
scenario(
    "model-unavailable-resumed",
    state=state([conductor(substate="model-unavailable")]),
    env={
        "RESUME_STAGGER_S": "0",
        "RESUME_VERIFY_S": "0.2",
        "MODEL_UNAVAILABLE_BACKOFF_S": "0.3",
    },
    steps=[
        ("run", ["--once"], {}),
        ("sleep", 0.5),
        ("run", ["--once"], {}),
        ("sleep", 0.5),
        ("run", ["--once"], {}),
    ]
    + readers(),
)
# A child waiting on its conductor with a frozen pane: nudged once.
scenario(
    "waiting-child-nudged",
    state=state(
        [
            conductor(status="running"),
            {
                "id": "a0b1c2d3-1755899999",
                "title": "worker-a0",
                "group": "srv",
                "profile": "work",
                "status": "waiting",
                "pane": "Do you want to proceed?",
                "parent_session_id": CONDUCTOR,
            },
        ]
    ),
    env={"WAITING_PATROL_THRESHOLD_S": "0.4"},
    steps=[
        ("run", ["--once"], {}),
        ("sleep", 0.6),
        ("run", ["--once"], {}),
        ("run", ["--once"], {}),
    ]
    + readers(),
)
# Three conductors dead in one pass: a cascade.
scenario(
    "cascade",
    **once_then_read(
        [
            conductor("0a0a0a0a-1755890000", "conductor-a"),
            conductor("0b0b0b0b-1755890000", "conductor-b"),
            conductor("0c0c0c0c-1755890000", "conductor-c"),
        ],
        env={"CASCADE_THRESHOLD": "3"},
    ),
)

# Drill: its refusals (exit 2, nothing touched) without a daemon, under a
# --dry-run daemon and under a daemon; then a drill that kills the tmux
# session (the simulator as tmux, on agent-deck's socket wd-drill) and
# follows the daemon's revive; then one the spent budget refuses.
def live_conductor(sid, title, **more):
    return conductor(sid, title, "running", tmux_session=f"agentdeck_{title}_ab12cd34", **more)


def daemon_poll(argv):
    """A call the daemon makes on every tick or pane listing, however long
    it runs: `list --all`, `-p P list`, tmux `list-panes`."""
    return argv[-2:] == ["list", "--json"] or argv[:3] == ["list", "--all", "--json"] or (
        argv[:1] == ["tmux"] and "list-panes" in argv
    )


FRESH = "5e5e5e5e-1755899999"
DAEMON_VARIES = "written by the daemon's every tick: its call counts are the run's length"
scenario(
    "drill",
    state=state(
        [
            live_conductor(CONDUCTOR, "conductor-ops"),
            session("a0b1c2d3-1755899999", "worker-1", "", "running"),
            # Made just now: agent-deck's freshness guard would refuse it.
            live_conductor(FRESH, "conductor-fresh", created_at="{now}"),
        ]
    ),
    env={"RATE_LIMIT_MAX": "1"},
    files={"home/.config/agent-deck/config.toml": '[tmux]\nsocket_name = "wd-drill"\n'},
    steps=[
        ("run", ["drill", CONDUCTOR, "--yes"], {}),
        ("run", ["drill", "nosuch", "--yes"], {}),
        ("daemon", ["--dry-run"]),
        ("run", ["drill", CONDUCTOR, "--yes"], {}),
        ("stop_daemon",),
        ("daemon", []),
        ("run", ["drill", "worker-1", "--yes"], {}),
        ("run", ["drill", "a0b1c2d3-1755899999", "--yes"], {}),
        ("run", ["drill", "nobody", "--yes"], {}),
        ("run", ["drill", CONDUCTOR], {}),
        ("run", ["drill", CONDUCTOR, "--yes", "--timeout", "20s"], {}),
        # Until a tick has read it running again, its book says error.
        ("ticks", 2),
        ("run", ["drill", CONDUCTOR, "--yes"], {"RATE_LIMIT_MAX": "5"}),
        ("run", ["drill", "conductor-fresh", "--yes"], {}),
        ("session", {"status": "stopped"}),
        ("ticks", 2),
        ("run", ["drill", CONDUCTOR, "--yes"], {}),
        ("stop_daemon",),
        ("run", ["history", CONDUCTOR], {}),
    ],
    log_filter=daemon_poll,
    left_out={
        "home/.agent-deck/watchdog/daemon-status.json": DAEMON_VARIES,
        "home/.agent-deck/watchdog/metrics.prom": DAEMON_VARIES,
    },
)

# The read-only checks of the install, after a pass.
scenario(
    "doctor",
    state=state([conductor(status="running")]),
    files={
        "home/hooks/3f9c2a1b-1755891234.json": '{"status":"running","event":"Stop","ts":1755891300}',
        "home/.agent-deck/watchdog/escalate.sh": ("#!/bin/sh\nexit 0\n", 0o755),
    },
    steps=[
        ("run", ["doctor"], {}),
        ("run", ["--once"], {}),
        ("run", ["doctor"], {}),
        ("run", ["doctor", "--json"], {}),
        ("run", ["doctor", "--bogus"], {}),
    ],
)

# Task follow-up: a task whose agent is gone is re-dispatched by the pass;
# one marked done is closed; one whose file was edited is tampered.
# The dispatched agent lives 0.3 s, so the spawner always finds it alive
# (its pid_started is read), and the check after 0.6 s always finds it gone.
RECORD_SH = "#!/bin/sh\necho \"$*\" >> '{dir}/home/work/dispatched.txt'\nsleep 0.3\n"
scenario(
    "task-followup",
    state=state([]),
    files={"home/work/task.md": "Refactor the parser.\n", "home/work/record.sh": (RECORD_SH, 0o755)},
    steps=[
        (
            "run",
            ["task", "add", "task-3101", "--file", "{dir}/home/work/task.md", "--after", "0",
             "--", "{dir}/home/work/record.sh", "{task_id}", "{parent_task}", "{retry}",
             "{partial_file}"],
            {},
        ),
        (
            "run",
            ["task", "add", "task-3102", "--file", "{dir}/home/work/task.md", "--after", "0",
             "--", "{dir}/home/work/record.sh", "{task_id}"],
            {},
        ),
        ("run", ["task", "list"], {}),
        ("write", "home/work/task-3102.done", "", 0o644),
        ("run", ["--once"], {}),
        ("wait_lines", "home/work/dispatched.txt", 1),
        ("sleep", 0.6),
        ("run", ["task", "list"], {}),
        ("run", ["task", "list", "--json"], {}),
        ("run", ["task", "show", "task-3101"], {}),
        ("run", ["task", "check"], {}),
        ("wait_lines", "home/work/dispatched.txt", 2),
        ("run", ["task", "cancel", "task-3101.2"], {}),
        ("run", ["task", "list"], {}),
    ]
    + readers(),
    extra_files=["home/work/dispatched.txt"],
)


# ---------------------------------------------------------------------------
# Running a scenario.
# ---------------------------------------------------------------------------


class Runner:
    """Runs scenarios with one binary, each in its own dir under `tmp`."""

    def __init__(self, binary, tmp):
        self.tmp = tmp
        self.bin = tmp / "bin" / BIN_NAME
        self.bin.parent.mkdir(parents=True)
        shutil.copy2(binary, self.bin)

    def run(self, name, spec):
        sc = Scenario(self, name, spec)
        try:
            for step in spec["steps"]:
                sc.step(step)
        finally:
            sc.close()
        return sc.transcript()


class Scenario:
    """One scenario's install: temp HOME, agent-deck root and hooks dir,
    the simulator's state file and call log, its `agent-deck` wrapper, and
    the simulator as `tmux` first on PATH (so that no tmux of the machine's
    is asked, whether it has one or not). The steps' record goes to `out`."""

    def __init__(self, runner, name, spec):
        self.runner, self.spec = runner, spec
        self.out = [f"=== scenario {name}\n"]
        self.dir = d = runner.tmp / name
        self.home, simdir, bindir = d / "home", d / "sim", d / "bin"
        for p in (self.home / "hooks", simdir, bindir):
            p.mkdir(parents=True)
        self.watchdog = self.home / ".agent-deck" / "watchdog"
        sim = f"'{runner.bin}' sim"
        write_script(simdir / "agent-deck", f'#!/bin/sh\nexec {sim} "$@"\n')
        tmux = spec.get("tmux", f'#!/bin/sh\nexec {sim} tmux "$@"\n')
        write_script(bindir / "tmux", tmux)
        self.state_file, self.log_file = simdir / "state.json", simdir / "calls.log"
        # "{now}" in the state: the scenario's start, in Unix seconds.
        initial = json.dumps(spec.get("state", state([])))
        write_json(self.state_file, json.loads(initial.replace('"{now}"', str(time.time()))))
        for rel, body in spec.get("files", {}).items():
            text, mode = body if isinstance(body, tuple) else (body, 0o644)
            path = d / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text.replace("{dir}", str(d)))
            path.chmod(mode)
        self.env = {
            "FAKE_AGENT_DECK_STATE": str(self.state_file),
            "FAKE_AGENT_DECK_LOG": str(self.log_file),
            "PATH": f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": str(self.home),
            "AGENT_DECK_ROOT": str(self.home / ".agent-deck"),
            "AGENT_DECK_BIN": str(simdir / "agent-deck"),
            "AGENT_DECK_HOOKS_DIR": str(self.home / "hooks"),
            "TMUX_TMPDIR": str(self.home),
            # History prints local time: the same zone for both binaries.
            "TZ": "UTC",
        }
        self.env.update(FAST_ENV)
        self.env.update(spec.get("env", {}))
        self.host = self.daemon = None

    def step(self, step):
        kind, d = step[0], self.dir
        if kind == "run":
            self.out.append(self.run_binary(step[1], step[2]))
        elif kind == "run_until":
            _, args, env, (words, nth), then = step
            self.out.append(self.run_binary(args, env, until=(words, nth, then)))
        elif kind in ("sim", "session"):
            self.change(kind, step[1])
            self.out.append(f"--- {kind} += {json.dumps(step[1], sort_keys=True)}\n")
        elif kind == "sleep":
            time.sleep(step[1])
            self.out.append(f"--- sleep {step[1]}s\n")
        elif kind == "write":
            path = d / step[1]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(step[2])
            path.chmod(step[3])
            self.out.append(f"--- wrote {step[1]}\n")
        elif kind == "wait_lines":
            path, n = d / step[1], step[2]
            wait_for(lambda: lines_in(path) >= n)
            self.out.append(f"--- waited for {n} lines in {step[1]}: {lines_in(path)}\n")
        elif kind == "pane_host":
            self.start_pane_host()
        elif kind == "daemon":
            self.start_daemon(step[1])
        elif kind == "stop_daemon":
            self.stop_daemon()
        elif kind == "ticks":
            polls = lambda: len(self.calls_with(["list", "--all", "--json"]))
            target = polls() + step[1]
            ticked = wait_for(lambda: polls() >= target)
            self.out.append(f"--- {step[1]} more daemon ticks: {'seen' if ticked else 'never came'}\n")
        else:
            raise ValueError(f"unknown step {kind}")

    def change(self, kind, keys):
        """Merges `keys` into the simulator's state (`sim`) or its first
        session (`session`), under the simulator's own lock."""
        with sim_lock(self.state_file):
            s = json.loads(self.state_file.read_text())
            (s if kind == "sim" else s["sessions"][0]).update(keys)
            write_json(self.state_file, s)

    def start_pane_host(self):
        """`sim pane-host`, the simulated tmux server (its stdin held open
        until the scenario ends); waits until it has recorded itself."""
        self.host = subprocess.Popen(
            [str(self.runner.bin), "sim", "pane-host"],
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
        )
        recorded = wait_for(
            lambda: (json.loads(self.state_file.read_text()).get("pane_host") or {}).get("pid")
            == self.host.pid
        )
        self.out.append(f"--- pane host started: {'recorded' if recorded else 'never recorded'}\n")

    def start_daemon(self, args):
        """The daemon in the background, until `stop_daemon`; waits until
        its first tick is over (daemon-status.json written). Its stderr is
        left out of the transcript: how many ticks it logs is the run's
        length."""
        status = self.watchdog / "daemon-status.json"
        if status.exists():
            status.unlink()
        self.daemon = subprocess.Popen(
            [str(self.runner.bin), *args],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        ticked = wait_for(status.exists)
        self.out.append(
            f"--- daemon {' '.join(args)} started: {'ticked' if ticked else 'never ticked'}\n"
        )

    def stop_daemon(self):
        self.daemon.send_signal(signal.SIGTERM)
        try:
            code = self.daemon.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.daemon.kill()
            code = f"killed ({self.daemon.wait()})"
        self.daemon = None
        self.out.append(f"--- daemon stopped (SIGTERM): exit {code}\n")

    def run_binary(self, args, extra_env, until=None):
        """The binary with `args` to its end: exit code, stdout, stderr.
        `--once` is preceded by `restarted_just_now`. With `until` (words,
        n, then), once the n-th simulated call holding every word is logged,
        `then` is done while the binary runs: a state change, or a signal."""
        args = [a.replace("{dir}", str(self.dir)) for a in args]
        if "--once" in args:
            self.restarted_just_now()
        p = subprocess.Popen(
            [str(self.runner.bin), *args],
            env={**self.env, **extra_env},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        said = ""
        if until:
            words, nth, then = until
            seen = wait_for(lambda: len(self.calls_with(words)) >= nth)
            if then == "SIGTERM":
                p.send_signal(signal.SIGTERM)
            else:
                self.change(*then)
            said = (
                f"--- at call {nth} with {words}: {json.dumps(then, sort_keys=True)}"
                f"{'' if seen else ' (the call never came)'}\n"
            )
        try:
            stdout, stderr = p.communicate(timeout=RUN_LIMIT_S)
        except subprocess.TimeoutExpired:
            p.kill()
            fail(f"{args} did not finish within {RUN_LIMIT_S}s")
        return (
            f"$ {BIN_NAME} {' '.join(args)}\n{said}"
            f"[exit {p.returncode}]\n"
            f"[stdout]\n{as_text(stdout)}"
            f"[stderr]\n{as_text(stderr)}"
        )

    def calls_with(self, words):
        calls = []
        if self.log_file.exists():
            for line in self.log_file.read_text().splitlines():
                argv = json.loads(line).get("argv", [])
                if all(w in argv for w in words):
                    calls.append(argv)
        return calls

    def restarted_just_now(self):
        """Sets `last_restart_at` in the watchdog's state.json to now (see
        the scenarios' notes on determinism); the file and its dir are
        created as the watchdog creates them when missing."""
        self.watchdog.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self.watchdog / "state.json"
        value = json.loads(path.read_text()) if path.exists() else {}
        value["last_restart_at"] = time.time()
        write_json(path, value, mode=0o600)

    def close(self):
        if self.daemon is not None:
            self.stop_daemon()
        if self.host is not None:
            self.host.stdin.close()
            try:
                self.host.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.host.kill()
                self.host.wait()

    def transcript(self):
        """The steps' record, then every file under the watchdog dir, the
        simulator's state and call log, and the scenario's `extra_files`."""
        files = sorted(p for p in self.watchdog.rglob("*") if p.is_file())
        files += [self.state_file, self.log_file]
        files += [self.dir / rel for rel in self.spec.get("extra_files", [])]
        left_out = self.spec.get("left_out", {})
        out = self.out
        for path in files:
            rel = str(path.relative_to(self.dir))
            if rel in left_out:
                out.append(f"--- file {rel}: left out ({left_out[rel]})\n")
            else:
                out.append(dump_file(path, self.dir, self.spec.get("log_filter")))
        return "".join(out)


class sim_lock:
    """The simulator's lock on its state: `flock` of `<state>.lock`."""

    def __init__(self, state_file):
        self.path = Path(str(state_file) + ".lock")

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc):
        os.close(self.fd)


def write_json(path, value, mode=0o644):
    """As the simulator and the watchdog write theirs: a temp file renamed
    into place."""
    tmp = path.with_name(f".{path.name}.tmp-transcript")
    tmp.write_text(json.dumps(value, indent=2) + "\n")
    tmp.chmod(mode)
    os.replace(tmp, path)


def write_script(path, text):
    path.write_text(text)
    path.chmod(0o755)


def wait_for(cond, limit=10.0):
    """Polls `cond` every 20 ms until it holds (True) or `limit` s pass."""
    deadline = time.monotonic() + limit
    while not cond():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def lines_in(path):
    return len(path.read_text().splitlines()) if path.exists() else 0


def as_text(data):
    text = data.decode("utf-8", errors="backslashreplace")
    return text if not text or text.endswith("\n") else text + "\n[no newline at end]\n"


def dump_file(path, scenario_dir, log_filter=None):
    """The file's mode and bytes; the call log without the calls that
    `log_filter` (a daemon scenario's) says are the run length's doing."""
    rel = path.relative_to(scenario_dir)
    if not path.exists():
        return f"--- file {rel}: missing\n"
    data = path.read_bytes()
    head = f"--- file {rel} (mode {path.stat().st_mode & 0o777:o})"
    if log_filter and str(rel) == "sim/calls.log":
        lines = data.decode().splitlines(keepends=True)
        kept = [l for l in lines if not log_filter(json.loads(l)["argv"])]
        head += ", the daemon's polls left out (their number is the run's length)"
        data = "".join(kept).encode()
    return f"{head}\n{as_text(data)}"


# ---------------------------------------------------------------------------
# Masks: only what legitimately differs from one run to the next. Each is a
# named regex; the comment says why it is needed.
# ---------------------------------------------------------------------------

MASKS = []


def mask(name, pattern, repl, why):
    """A named mask: `pattern` (a regex) becomes `repl`; `why` is kept
    beside it so that `--masks` can list every mask with its reason."""
    MASKS.append((name, re.compile(pattern, re.MULTILINE), repl, why))


mask(
    "pid",
    r'"(pid|pid_started)": ?\d+',
    r'"\1": <PID>',
    "the simulator logs each call's pid, the instance lock and the task "
    "registry keep a pid and its start time in clock ticks: new every run",
)
mask(
    "tick_duration",
    r'("tick_seconds": ?|agent_deck_watchdog_tick_duration_seconds )[0-9.e-]+',
    r"\1<DURATION>",
    "how long a tick took, measured",
)
mask(
    "serialized_wait",
    r"waits \d+(?:\.\d+)?s: restarts are serialized",
    "waits <SECS>s: restarts are serialized",
    "how much of MIN_GLOBAL_RESTART_INTERVAL_S a job still had to wait, measured",
)
mask(
    "resume_clock",
    r"resume at \d\d?:\d\d \(in [0-9.]+[smhd]",
    "resume at <HH:MM> (in <DUR>",
    "the --once summary gives a stall's resume time as a time of day and a "
    "countdown: a probe's resume time is the detection time plus RESUME_PROBE_S",
)
mask(
    "pid_in_text",
    r"\(pid \d+\)",
    "(pid <PID>)",
    "drill names the running daemon by its pid",
)
mask(
    "drill_recovery",
    r"recovered in [0-9.]+ s",
    "recovered in <SECS> s",
    "how long the daemon took to revive what the drill killed, measured",
)
mask(
    "disk_free",
    r"\d+ MiB free",
    "<N> MiB free",
    "doctor gives the free space of the watchdog dir's disk",
)
mask(
    "inotify_use",
    r"inotify: \d+ of \d+ instances and \d+ of \d+ watches in use",
    "inotify: <N> of <M> instances and <N> of <M> watches in use",
    "doctor counts the inotify instances and watches of every process of "
    "this user on the machine, the check's own included",
)
mask(
    "countdown",
    r'("\w*remaining_s": )(?!0\.0\b)[0-9.]+|(settle )\d+(s left)',
    lambda m: f"{m[1]}<COUNTDOWN>" if m[1] else f"{m[2]}<COUNTDOWN>{m[3]}",
    "status counts a backoff or a cascade's settle time down from when it "
    "began: what is left depends on how long the steps before took (a zero is kept)",
)
mask(
    "nudge_wait",
    r"waiting \d+s with an unchanged pane",
    "waiting <SECS>s with an unchanged pane",
    "a nudge says how long the child has waited: the sleep between two "
    "passes plus however long they took",
)
mask(
    "record_bytes",
    r'"bytes": \d+',
    '"bytes": <BYTES>',
    "status --json gives each record file's size; records hold times and "
    "random tmux names whose width varies",
)


def wall_clock(text, t0, t1):
    """Masks times of this run and keeps every other time: Unix seconds
    (the records' ts, last_tick, resume_at, …) and dates as the logs,
    history and status print them, when they fall within eight days of the
    run (a resume time may be days ahead). The fixtures' own times (the id
    3f9c2a1b-1755891234, an auth hold's ts of 2025) stay as they are."""
    lo, hi = t0 - 86_400 * 8, t1 + 86_400 * 8

    def unix(m):
        return "<WALL>" if lo <= float(m.group(0)) <= hi else m.group(0)

    text = re.sub(r"(?<![\w.-])1\d{9}(?:\.\d+)?(?![\w.])", unix, text)

    def date(m):
        y, mo, d, h, mi = (int(m.group(i)) for i in range(1, 6))
        secs = float(m.group(6) or 0)
        at = calendar.timegm((y, mo, d, h, mi, 0)) + secs
        return "<DATE>" if lo <= at <= hi else m.group(0)

    return re.sub(
        r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d)(?::(\d\d(?:\.\d+)?))?Z?",
        date,
        text,
    )


class TmuxNames:
    """The simulator names a restart's new tmux session
    `agentdeck_<title>_<8 random hex>` (sim/live.rs `new_tmux_name`): each
    distinct name becomes `<tmux:<title>#n>`, numbered by first appearance,
    so a name that recurs is still seen to be the same one. A log line
    clipped inside the name (`agentdeck_<title>_eb2e9d5…`) keeps how many
    hex digits were left: `<tmux:<title>#n/7>…`."""

    PATTERN = re.compile(r"agentdeck_([A-Za-z0-9-]+)_(?:([0-9a-f]{8})\b|([0-9a-f]{0,7})…)")

    def __init__(self):
        self.seen = {}

    def __call__(self, m):
        title, full, clipped = m.groups()
        if full is None:
            prefix = f"agentdeck_{title}_{clipped}"
            known = [v for k, v in self.seen.items() if k.startswith(prefix)]
            tag = known[0][:-1] if len(known) == 1 else f"<tmux:{title}#?"
            return f"{tag}/{len(clipped)}>…"
        name = m.group(0)
        if name not in self.seen:
            self.seen[name] = f"<tmux:{title}#{len(self.seen) + 1}>"
        return self.seen[name]


def apply_masks(text, tmp, t0, t1):
    # tmp_root: every path the check creates lives under one mkdtemp dir
    # whose random name differs per run.
    text = text.replace(str(tmp), "<TMP>")
    text = wall_clock(text, t0, t1)
    names = TmuxNames()
    text = TmuxNames.PATTERN.sub(names, text)
    for _name, rx, repl, _why in MASKS:
        text = rx.sub(repl, text)
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default=DEFAULT_BASE, help="the commit to compare with")
    ap.add_argument("--only", action="append", help="run only this scenario (repeatable)")
    ap.add_argument("--keep", action="store_true", help="keep the temp dirs")
    ap.add_argument(
        "--self",
        dest="against_self",
        action="store_true",
        help="compare the working tree's binary with itself (a determinism check of "
        "the scenarios and masks; builds no base)",
    )
    ap.add_argument("--masks", action="store_true", help="list the masks and why each is needed")
    ap.add_argument("--list", action="store_true", help="list the scenarios")
    ap.add_argument(
        "--remask",
        action="store_true",
        help="build and run nothing: mask and diff the raw transcripts of the last run again",
    )
    opts = ap.parse_args()
    if opts.list:
        print("\n".join(SCENARIOS))
        return 0
    if opts.masks:
        print("tmp_root: the one mkdtemp dir every path lives under, named at random each run")
        print("wall_clock: " + " ".join(wall_clock.__doc__.split()))
        print("tmux_name: " + " ".join(TmuxNames.__doc__.split()))
        for name, rx, _repl, why in MASKS:
            print(f"{name}: {why} ({rx.pattern})")
        return 0
    root = Path(git("rev-parse", "--show-toplevel", cwd=Path(__file__).resolve().parent))
    out_dir = target_dir(root) / "transcript"
    if opts.remask:
        return compare(out_dir, remask(out_dir, "base"), remask(out_dir, "work"), "the last run")
    names = opts.only or list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        fail(f"no scenario {unknown}; there are {list(SCENARIOS)}")
    work_bin = build_work(root)
    if opts.against_self:
        opts.base, sha, base_bin = "itself", "working-tree", work_bin
    else:
        sha, base_bin = build_base(root, opts.base)
    out_dir.mkdir(parents=True, exist_ok=True)
    masked = {}
    for label, binary in (("base", base_bin), ("work", work_bin)):
        tmp = Path(tempfile.mkdtemp(prefix="adw-transcript-"))
        started = time.time()
        try:
            runner = Runner(binary, tmp)
            raw = "".join(runner.run(n, SCENARIOS[n]) for n in names)
        finally:
            if opts.keep:
                print(f"transcript: kept {tmp}", file=sys.stderr)
            else:
                shutil.rmtree(tmp, ignore_errors=True)
        took = time.time() - started
        print(f"transcript: {label} ran {len(names)} scenarios in {took:.1f}s", file=sys.stderr)
        (out_dir / f"{label}.raw.txt").write_text(raw)
        meta = {"tmp": str(tmp), "t0": started, "t1": time.time()}
        (out_dir / f"{label}.meta.json").write_text(json.dumps(meta) + "\n")
        masked[label] = remask(out_dir, label)
    return compare(out_dir, masked["base"], masked["work"], f"base {opts.base} ({sha[:12]})")


def remask(out_dir, label):
    """Masks `<label>.raw.txt` into `<label>.txt`; the masked text."""
    raw = (out_dir / f"{label}.raw.txt").read_text()
    meta = json.loads((out_dir / f"{label}.meta.json").read_text())
    masked = apply_masks(raw, meta["tmp"], meta["t0"], meta["t1"])
    (out_dir / f"{label}.txt").write_text(masked)
    return masked


def compare(out_dir, base, work, base_name):
    """Writes and prints the diff; the exit code (1: they differ)."""
    diff = list(
        difflib.unified_diff(
            base.splitlines(keepends=True),
            work.splitlines(keepends=True),
            fromfile=base_name,
            tofile="working tree",
        )
    )
    (out_dir / "diff.txt").write_text("".join(diff))
    if diff:
        sys.stdout.writelines(diff)
        print(f"transcript: DIFFERENT (transcripts in {out_dir})", file=sys.stderr)
        return 1
    print(f"transcript: byte-identical after masking (transcripts in {out_dir})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
