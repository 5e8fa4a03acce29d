//! The contract checks of `tests/support/contract.rs` against the real CLI:
//! the same bodies the simulator answers in every `cargo test`, here over a
//! fleet built through agent-deck itself. A failure here and a pass there
//! means the simulator has drifted from the real CLI.

use std::time::Duration;

use crate::sandbox::{Sandbox, StatusWriter, Tool};
use crate::support::contract::*;
use crate::support::wait_until;

const SETTLE: Duration = Duration::from_secs(20);

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn the_real_cli_answers_the_contract_checks() {
    let sb = Sandbox::new();
    let run = |args: &[&str]| sb.cli(args);
    let alive = sb.launch("worker-alive", "srv", Tool::Custom, None);
    let never = sb.add("worker-never", "srv", Tool::Custom, None);
    let killed = sb.launch("worker-killed", "srv", Tool::Custom, None);
    let long = sb.add("worker-long", "srv", Tool::Custom, None);
    long.set_mode("lines 5000");
    sb.start(&long);
    sb.kill_tmux_session(&killed);
    let read_error = |a| wait_until(SETTLE, || sb.status(a) == "error");
    assert!(
        read_error(&killed) && read_error(&never),
        "{}",
        sb.show(&never)
    );

    check_list_and_show_shapes(&run, &alive.id);
    check_start_of_a_live_session_is_already_running(&run, &alive.id);
    check_unknown_id_is_not_found_exit_2(&run);
    check_version_names_the_release(&run);
    check_non_claude_send_of_twelve_characters_answers_typed(&run, &alive.id);
    check_never_started_reads_error_like_a_killed_one(&run, &never.id, &killed.id);
    check_dead_non_claude_output_exits_1(&run, &killed.id);
    let printed = wait_until(SETTLE, || {
        String::from_utf8_lossy(
            &sb.cli(&["session", "output", &long.id, "--pane", "-q"])
                .stdout,
        )
        .contains("line 5000")
    });
    assert!(printed, "the fake never printed its lines");
    check_pane_is_the_last_2000_lines_plus_the_screen(&run, &long.id, "line 5000");
    check_restart_gives_a_new_tmux_name(&run, &alive.id);
    check_gone_tmux_reads_error(&run, &killed.id);
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn without_a_status_writer_the_real_guard_skips_a_fresh_restart_of_a_dead_pane() {
    let sb = Sandbox::with(StatusWriter::None);
    let run = |args: &[&str]| sb.cli(args);
    let a = sb.launch("worker-fresh", "srv", Tool::Custom, None);
    sb.kill_tmux_session(&a);
    // Within 1.5 s of its start a gone pane still reads `unknown`.
    assert!(
        wait_until(SETTLE, || sb.status(&a) == "error"),
        "{}",
        sb.show(&a)
    );
    check_fresh_restart_is_skipped_even_when_dead(&run, &a.id);
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn the_real_cli_inside_another_tmux_server_reads_error_like_the_simulator() {
    let sb = Sandbox::on_default_socket();
    let other = sb.other_tmux_server();
    let alive = sb.launch("worker-alive", "srv", Tool::Custom, None);
    let killed = sb.launch("worker-killed", "srv", Tool::Custom, None);
    sb.kill_tmux_session(&killed);
    assert!(
        wait_until(SETTLE, || sb.status(&killed) == "error"),
        "{}",
        sb.show(&killed)
    );
    let foreign = |args: &[&str]| {
        let mut c = sb.command(&sb.real);
        c.args(args).envs(other.client_env());
        crate::support::output_within(c, Duration::from_secs(60))
    };
    check_a_caller_inside_another_tmux_server_reads_error(&foreign, &alive.id, &killed.id);
}
