#!/bin/sh
# Example escalation hook for agent-deck-watchdog.
#
# Install as $AGENT_DECK_ROOT/watchdog/escalate.sh (default
# ~/.agent-deck/watchdog/escalate.sh) and make it executable. The watchdog
# runs it as
#
#   escalate.sh <severity> <message>
#
# once per alert (duplicates are already filtered), never in --dry-run, with
# stdin closed and a timeout after which the whole process group is killed.
# Keep it fast and let it exit 0; a failure here is logged by the watchdog and
# otherwise ignored.
#
# Severities include: rate-limit, restart-failed, liveness-mismatch,
# auth-hold, cascade, cascade-detected, circuit-breaker, task-retry,
# task-exhausted, task-tampered, partial-tampered, redispatch-cap.

severity=${1:-unknown}
message=${2:-}

# Never wait for input, whatever the caller passed as stdin.
exec </dev/null

case $severity in
    cascade|cascade-detected|circuit-breaker|restart-failed|task-tampered|partial-tampered)
        priority=user.crit ;;
    task-retry)
        priority=user.notice ;;
    *)
        priority=user.warning ;;
esac

# Syslog (the journal on systemd machines): journalctl -t agent-deck-watchdog
if command -v logger >/dev/null 2>&1; then
    if command -v timeout >/dev/null 2>&1; then
        timeout 5 logger -t agent-deck-watchdog -p "$priority" -- "[$severity] $message" >/dev/null 2>&1
    else
        logger -t agent-deck-watchdog -p "$priority" -- "[$severity] $message" >/dev/null 2>&1
    fi
fi

# Desktop notification (Linux). Under systemd --user the session bus is
# usually reachable; from cron, set DBUS_SESSION_BUS_ADDRESS first, e.g.
#   DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/$(id -u)/bus
#
#if command -v notify-send >/dev/null 2>&1; then
#    urgency=normal
#    [ "$priority" = user.crit ] && urgency=critical
#    timeout 5 notify-send --app-name=agent-deck-watchdog --urgency="$urgency" \
#        "agent-deck: $severity" "$message" >/dev/null 2>&1
#fi
#
# macOS:
#osascript -e 'on run argv' -e 'display notification (item 2 of argv) with title (item 1 of argv)' \
#    -e 'end run' "agent-deck: $severity" "$message" >/dev/null 2>&1

exit 0
