//! Our own fake agent program, the command every live session runs: as
//! agent-deck's `[claude] command` (a Claude-family session) and as the
//! custom tool `[tools.fakeagent]` (selected with `-c fakeagent`).
//!
//! On each boot it bumps `boots` in its project dir (the session's path, its
//! working directory), appends its argv to `fake.log`, and then behaves as
//! the first line of `fake-mode` in that dir says:
//!
//! | mode | the pane |
//! |---|---|
//! | `quiet` (or no file) | one ready line, then nothing; exits 0 on SIGUSR1 (an agent quitting) |
//! | `nohup` | as `quiet`, but ignores SIGHUP, so it outlives `kill-session` |
//! | `spinner` | a braille spinner, redrawn every 100 ms |
//! | `clock` | a new time line every 200 ms |
//! | `banner` | Claude's 401 login banner, then nothing |
//! | `exit N D` | exits with code N after D seconds |
//! | `lines N` | prints `line 1` … `line N`, then nothing |
//! | `shell` | becomes a bare interactive bash, as a pane tmux-resurrect restored: the agent is gone |
//! | `chat` | a `❯ ` composer at the pane's foot, as Claude draws it; each line typed into it is a new turn, appended to `said.log`: an assistant record in Claude's transcript, then `⏺ resumed: <line>`; the line `overload` ends its turn on [`OVERLOAD`] instead. Ctrl+C clears the composer, as Claude's does |
//!
//! Started as Claude (its argv carries `--session-id` or `--resume`), it
//! reports `SessionStart` through `agent-deck hook-handler` on boot, as
//! Claude's hooks do, except in banner mode: a fresh hook would hide the
//! banner from the status for 120 s.

use std::path::Path;

use crate::support::files::write_script;

/// The custom tool name the fake runs as for non-Claude sessions.
pub(crate) const TOOL: &str = "fakeagent";

/// The 401 banner Claude shows when its credentials are bad.
pub(crate) const BANNER: &str = "Please run /login · API Error: 401 \
{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\
\"message\":\"Invalid authentication credentials\"}}";

/// Claude's banner when a turn ends on an API overload (its retries spent).
pub(crate) const OVERLOAD: &str = "⏺ API Error: 529 Overloaded. This is a server-side \
issue, usually temporary — try again in a moment.";

/// Writes the fake to `path`; `agent_deck` is the real CLI it reports
/// hooks through.
pub(crate) fn install(path: &Path, agent_deck: &Path) {
    let script = format!(
        r#"#!/bin/bash
# The live suite's fake agent (tests/live/fake_agent.rs).
dir=$PWD
boots=$(( $(cat "$dir/boots" 2>/dev/null || echo 0) + 1 ))
echo "$boots" > "$dir/boots"
printf '%s boot %s argv:' "$(date +%s.%N)" "$boots" >> "$dir/fake.log"
printf ' %q' "$@" >> "$dir/fake.log"
echo >> "$dir/fake.log"
read -r mode code delay < "$dir/fake-mode" 2>/dev/null
mode=${{mode:-quiet}}
sid=""
while [ $# -gt 0 ]; do
    case "$1" in
        --session-id|--resume) sid=$2; shift ;;
    esac
    shift
done
if [ -n "$sid" ] && [ "$mode" != banner ]; then
    printf '{{"hook_event_name":"SessionStart","session_id":"%s","cwd":"%s"}}' "$sid" "$dir" \
        | '{agent_deck}' hook-handler >/dev/null 2>&1
fi
echo "fake agent ready, boot $boots"
case "$mode" in
    spinner)
        frames='⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏'
        i=0
        while :; do
            printf '\r%s working %s' "${{frames:i%10:1}}" "$i"
            i=$((i + 1))
            sleep 0.1
        done ;;
    clock)
        while :; do date +%T.%N; sleep 0.2; done ;;
    banner)
        printf '%s\n' '{banner}'
        while :; do sleep 3600; done ;;
    exit)
        sleep "${{delay:-0}}"
        exit "${{code:-1}}" ;;
    lines)
        seq -f 'line %g' 1 "${{code:-1}}"
        while :; do sleep 3600; done ;;
    shell)
        exec bash --norc --noprofile -i ;;
    chat)
        transcript="$HOME/.claude/projects/$(printf '%s' "$dir" | tr -c 'A-Za-z0-9' -)/$sid.jsonl"
        mkdir -p "$(dirname "$transcript")"
        # The composer sits at the pane's foot, as Claude's does.
        rows=$(stty size 2>/dev/null) rows=${{rows%% *}}
        printf '\n%.0s' $(seq "${{rows:-50}}")
        # Ctrl+C drops the typed line (the terminal flushes it) and draws
        # an empty composer.
        trap 'printf "\n❯ "' INT
        while :; do
            IFS= read -r -p '❯ ' line || break
            printf '%s\n' "$line" >> "$dir/said.log"
            if [ "$line" = overload ]; then
                echo '{overload}'
                continue
            fi
            printf '{{"type":"assistant","sessionId":"%s","timestamp":"%s","message":{{"role":"assistant","content":[{{"type":"text","text":"resumed"}}]}}}}\n' \
                "$sid" "$(date -u +%Y-%m-%dT%H:%M:%S.000Z)" >> "$transcript"
            echo "⏺ resumed: $line"
        done
        while :; do sleep 3600; done ;;
    *)
        # An agent quitting on its own: SIGUSR1 ends it with code 0.
        trap 'kill $! 2>/dev/null; exit 0' USR1
        [ "$mode" = nohup ] && trap '' HUP
        while :; do sleep 3600 & wait $!; done ;;
esac
"#,
        agent_deck = agent_deck.display(),
        banner = BANNER,
        overload = OVERLOAD,
    );
    write_script(path, &script);
}
