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
//! | `chat` | a `❯ ` composer at the pane's foot, as Claude draws it; each line typed into it is a new turn, appended to `said.log`: an assistant record in Claude's transcript, then `⏺ resumed: <line>`; the line `overload` ends its turn on [`OVERLOAD`] instead, and `/exit` quits it with code 0. Ctrl+C clears the composer, as Claude's does |
//! | `full R C S` | Claude at a full context window: `chat`'s composer, every turn failing until `/clear` or a `/compact` that works ([`FULL`] has the detail). `R` picks the error's rendering: `limit` (the default, [`LIMIT`]), `prompt` or `thrashing`; `C` is `compacts` (the default) or `fails`; `S` is how long a compaction takes, 3 s by default |
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

/// Claude's pane when a prompt no longer fits its context window (the
/// `⎿` line under the turn's `⏺`; context.md §1.7 and §3).
pub(crate) const LIMIT: &str = "  ⎿  Context limit reached · /compact or /clear to continue";

/// Mode `full`: Claude Code at a full context window, as context.md §1.7
/// and §3 describe it (what no source shows is marked *guess*).
///
/// - On its first boot the transcript
///   (`$CLAUDE_CONFIG_DIR/projects/<cwd, non-alphanumerics as ->/<id>.jsonl`,
///   `~/.claude` without the variable) gets one exchange whose assistant
///   record used 3 + 15 000 + 181 000 input tokens (§1.7). The session is
///   full while its conversation is that one and not compacted, so a boot
///   that resumes it (`session restart`) is full again, as Claude is.
/// - A prompt while full: hook `UserPromptSubmit`, a user record, 2 s of
///   `✻ Thinking… (Ns · esc to interrupt)`, then `⏺ Reading the rest of the
///   logs.` and the error's `⎿` line, and the synthetic record (`"model":
///   "<synthetic>"`, `isApiErrorMessage`, `error: invalid_request`, text
///   `Prompt is too long`, or the thrashing text, all-zero usage). No `Stop`
///   hook: Claude fires `StopFailure`, which agent-deck 1.14.0 does not install.
/// - `/clear`: hooks `SessionEnd` (reason `clear`) under the old id, then
///   `SessionStart` (source `clear`) under a new id whose JSONL is created
///   empty (a `SessionStart`-only file to agent-deck, §1.8); the screen is
///   wiped to an empty composer; the session is no longer full. Each id is
///   appended to `sids`.
/// - `/compact`: hook `PreCompact` (trigger `manual`), `✻ Compacting
///   conversation… (Ns · esc to interrupt)` for `S` seconds, then either a
///   `compact_boundary` record, hook `SessionStart` (source `compact`), the
///   screen wiped to `══ Conversation compacted · ctrl+o for history ══` and
///   `  ⎿  Compacted (ctrl+o to see full summary)` over the composer, no
///   longer full; or (`fails`) the `⎿  Error: Error during compaction: …
///   Conversation too long.` line, still full, and no record (*guess*: no
///   source shows what a failed `/compact` writes).
/// - A prompt when not full: `UserPromptSubmit`, a user record, 1 s busy, an
///   assistant record, `⏺ resumed: <line>`, hook `Stop`.
/// - An empty line does nothing, as Enter on Claude's empty composer; every
///   other line is appended to `said.log`. Slash commands fire no
///   `UserPromptSubmit` (*guess*).
const FULL: &str = r#"        case "$code" in
            prompt) error='Prompt is too long' ;;
            thrashing) error='Autocompact is thrashing: the context refilled to the limit within 3 turns of the previous compact, 3 times in a row. A file being read or a tool output is likely too large for the context window. Try reading in smaller chunks, or use /clear to start fresh.' ;;
            *) error='Context limit reached · /compact or /clear to continue' ;;
        esac
        said='Prompt is too long'
        [ "$code" = thrashing ] && said=$error
        compact_s=${extra:-3}
        projects="${CLAUDE_CONFIG_DIR:-$HOME/.claude}/projects/$(printf '%s' "$dir" | tr -c 'A-Za-z0-9' -)"
        mkdir -p "$projects"
        echo "$sid" >> "$dir/sids"
        rows=$(stty size 2>/dev/null) rows=${rows%% *} rows=${rows:-50}
        stamp() { date -u +%Y-%m-%dT%H:%M:%S.%3NZ; }
        put() { printf '%s\n' "$1" >> "$projects/$sid.jsonl"; }
        hook() {
            printf '{"hook_event_name":"%s","session_id":"%s","cwd":"%s"%s}' "$1" "$sid" "$dir" "$2" \
                | '$agent_deck' hook-handler >/dev/null 2>&1
        }
        user() {
            local t=${1//\\/\\\\}
            t=${t//\"/\\\"}
            put "{\"type\":\"user\",\"sessionId\":\"$sid\",\"timestamp\":\"$(stamp)\",\"message\":{\"role\":\"user\",\"content\":\"$t\"}}"
        }
        # assistant MODEL TEXT INPUT CACHE_CREATION CACHE_READ OUTPUT STOP_REASON [FIELDS]
        assistant() {
            put "{\"type\":\"assistant\",\"sessionId\":\"$sid\",\"timestamp\":\"$(stamp)\"$8,\"message\":{\"role\":\"assistant\",\"type\":\"message\",\"model\":\"$1\",\"stop_reason\":\"$7\",\"usage\":{\"input_tokens\":$3,\"cache_creation_input_tokens\":$4,\"cache_read_input_tokens\":$5,\"output_tokens\":$6},\"content\":[{\"type\":\"text\",\"text\":\"$2\"}]}}"
        }
        model=claude-sonnet-4-5-20250929
        # hush: keys pressed from now until the next prompt is drawn are
        # not echoed and are dropped: agent-deck's Enters while there is no
        # composer, which Claude ignores (it would queue a typed message).
        hush() { stty -echo 2>/dev/null; hushed=1; }
        # busy CUE SECONDS: Claude's busy line, then gone.
        busy() {
            hush
            for ((s = 0; s < $2; s++)); do
                printf '\r%s (%ss · esc to interrupt)' "$1" "$s"
                sleep 1
            done
            printf '\r\033[K'
        }
        # wipe LINES: a cleared screen with LINES rows left at its foot.
        wipe() {
            printf '\033[H\033[2J\033[3J'
            printf '\n%.0s' $(seq $((rows - $1)))
        }
        if [ ! -s "$projects/$sid.jsonl" ]; then
            user 'Check the fleet and read the logs.'
            assistant "$model" 'Reading the logs.' 3 15000 181000 400 end_turn
        fi
        # Full while the conversation is the seeded one, not compacted: a
        # restart that resumes it is as full as before.
        full=0
        if grep -q '"cache_read_input_tokens":181000' "$projects/$sid.jsonl" \
            && ! grep -q compact_boundary "$projects/$sid.jsonl"; then
            full=1
        fi
        printf '\n%.0s' $(seq "$rows")
        trap 'printf "\n❯ "' INT
        while :; do
            if [ -n "$hushed" ]; then
                while read -r -t 0.05 _; do :; done
                stty echo 2>/dev/null
                hushed=
            fi
            IFS= read -r -p '❯ ' line || break
            # An Enter that came unechoed leaves the cursor on the prompt.
            [ -z "$line" ] && printf '\r\033[K' && continue
            printf '%s\n' "$line" >> "$dir/said.log"
            case "$line" in
                /clear)
                    hush
                    hook SessionEnd ',"reason":"clear"'
                    sid=$(cat /proc/sys/kernel/random/uuid)
                    echo "$sid" >> "$dir/sids"
                    : > "$projects/$sid.jsonl"
                    hook SessionStart ',"source":"clear"'
                    full=0
                    wipe 1 ;;
                /compact)
                    hook PreCompact ',"trigger":"manual","custom_instructions":""'
                    busy '✻ Compacting conversation…' "$compact_s"
                    if [ "$delay" = fails ]; then
                        echo '  ⎿  Error: Error during compaction: Error: Conversation too long. Press esc twice to go up a few messages and try again.'
                    else
                        put "{\"type\":\"system\",\"subtype\":\"compact_boundary\",\"content\":\"Conversation compacted\",\"level\":\"info\",\"sessionId\":\"$sid\",\"timestamp\":\"$(stamp)\",\"compactMetadata\":{\"trigger\":\"manual\",\"preTokens\":196003}}"
                        hook SessionStart ',"source":"compact"'
                        full=0
                        wipe 3
                        echo '══ Conversation compacted · ctrl+o for history ══'
                        echo '  ⎿  Compacted (ctrl+o to see full summary)'
                    fi ;;
                *)
                    hook UserPromptSubmit
                    user "$line"
                    if [ "$full" = 1 ]; then
                        busy '✻ Thinking…' 2
                        echo '⏺ Reading the rest of the logs.'
                        echo "  ⎿  $error"
                        assistant '<synthetic>' "$said" 0 0 0 0 stop_sequence ',"isApiErrorMessage":true,"error":"invalid_request"'
                    else
                        busy '✻ Thinking…' 1
                        assistant "$model" resumed 3 2000 12000 50 end_turn
                        echo "⏺ resumed: $line"
                        hook Stop
                    fi ;;
            esac
        done"#;

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
read -r mode code delay extra < "$dir/fake-mode" 2>/dev/null
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
    full)
{full}
        while :; do sleep 3600; done ;;
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
            # Claude's `/exit`: the agent quits by itself, code 0.
            [ "$line" = /exit ] && exit 0
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
        full = FULL.replace("$agent_deck", &agent_deck.display().to_string()),
    );
    write_script(path, &script);
}
