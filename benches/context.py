#!/usr/bin/env python3
"""A full context window (SPEC §15) on the simulator, timed, at the
settings' defaults: how long from the turn that ended full to the
`stall-detected`, the `/clear` and the verified re-brief, and the CLI calls
that cost; then the calls a healthy fleet costs in a minute, this binary
against another (`--base BINARY`, e.g. the transcript check's cached base).

    cargo build --release
    python3 benches/context.py [--bin target/release/agent-deck-watchdog]
                               [--base BINARY] [--rounds 3] [--healthy-s 60]
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

CONDUCTOR = "3f9c2a1b-1755891234"


def conductor(sid, title, status, **more):
    c = {"id": sid, "title": title, "group": "conductor", "profile": "default",
         "status": status, "tool": "claude", "claude_session_id": f"c1a0de00-{sid}",
         "pane": "❯ Check the fleet\n⏺ All well.\n❯ \n", "transcript": "All well."}
    c.update(more)
    return c


class Fleet:
    def __init__(self, binary, tmp, sessions):
        self.binary, self.dir = binary, Path(tmp)
        self.home = self.dir / "home"
        (self.home / "hooks").mkdir(parents=True)
        sim = self.dir / "agent-deck"
        sim.write_text(f"#!/bin/sh\nexec '{binary}' sim \"$@\"\n")
        sim.chmod(0o755)
        self.state, self.log = self.dir / "state.json", self.dir / "calls.log"
        self.write({"profiles_exist": True, "sessions": sessions})
        self.log.touch()
        self.env = {
            "FAKE_AGENT_DECK_STATE": str(self.state), "FAKE_AGENT_DECK_LOG": str(self.log),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home),
            "AGENT_DECK_ROOT": str(self.home / ".agent-deck"), "AGENT_DECK_BIN": str(sim),
            "AGENT_DECK_HOOKS_DIR": str(self.home / "hooks"), "TMUX_TMPDIR": str(self.home),
        }
        self.daemon = None

    def write(self, state):
        tmp = self.state.with_suffix(".tmp")
        tmp.write_text(json.dumps(state))
        tmp.rename(self.state)

    def update(self, **keys):
        s = json.loads(self.state.read_text())
        s["sessions"][0].update(keys)
        self.write(s)

    def calls(self):
        return [json.loads(l) for l in self.log.read_text().splitlines() if l.strip()]

    def records(self):
        p = self.home / ".agent-deck" / "watchdog" / "restart.log"
        return [json.loads(l) for l in p.read_text().splitlines()] if p.exists() else []

    def start(self):
        self.daemon = subprocess.Popen([self.binary], env=self.env,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self):
        self.daemon.send_signal(signal.SIGTERM)
        self.daemon.wait(timeout=20)


def wait_for(cond, limit=300.0):
    end = time.time() + limit
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.05)
    return False


def ts_of(call):
    return call.get("ts", 0.0) if isinstance(call, dict) else 0.0


def one_round(binary):
    with tempfile.TemporaryDirectory() as tmp:
        f = Fleet(binary, tmp, [conductor(CONDUCTOR, "conductor-ops", "running")])
        f.start()
        try:
            wait_for(lambda: len(f.calls()) >= 3, 30)
            time.sleep(1.0)
            before = len(f.calls())
            # The turn ends full: 1.14.0 reads it running at an empty prompt.
            t0 = time.time()
            f.update(substate="idle-at-empty-prompt", full="limit",
                     pane="❯ Check the fleet\n", transcript="")
            done = lambda a: any(r["action"] == a for r in f.records())
            wait_for(lambda: done("resume-verified"))
            at = {r["action"]: r["ts"] - t0 for r in f.records()}
            return at, len(f.calls()) - before
        finally:
            f.stop()


def healthy(binary, seconds):
    fleet = [conductor(f"{i:08x}-1755891234", f"conductor-{i}", "idle") for i in range(10)]
    with tempfile.TemporaryDirectory() as tmp:
        f = Fleet(binary, tmp, fleet)
        f.start()
        try:
            time.sleep(seconds)
        finally:
            f.stop()
        calls = f.calls()
        panes = sum(1 for c in calls if "--pane" in json.dumps(c))
        return len(calls), panes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/agent-deck-watchdog")
    ap.add_argument("--base")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--healthy-s", type=float, default=60.0)
    a = ap.parse_args()
    binary = str(Path(a.bin).resolve())
    steps = ["stall-detected", "clear-sent", "resume-sent", "resume-verified"]
    times = {s: [] for s in steps}
    calls = []
    for _ in range(a.rounds):
        at, n = one_round(binary)
        for s in steps:
            if s in at:
                times[s].append(at[s])
        calls.append(n)
    print("full context, defaults (SAFETY_POLL_INTERVAL_S 5, unarmed), from the turn's end:")
    for s in steps:
        v = times[s]
        med = f"{statistics.median(v):.1f}s" if v else "never"
        print(f"  {s:16} median {med}  ({', '.join(f'{x:.1f}' for x in v)})")
    print(f"  CLI calls from the turn's end to resume-verified: {calls}")
    for name, b in [("this binary", binary)] + ([("base", a.base)] if a.base else []):
        n, panes = healthy(b, a.healthy_s)
        per_hour = n * 3600 / a.healthy_s
        print(f"healthy: 10 idle conductors, {a.healthy_s:.0f}s, {name}: {n} calls "
              f"({panes} pane reads), {per_hour:.0f}/h")


if __name__ == "__main__":
    main()
