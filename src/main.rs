//! Entry point: hands the command line to the library and turns its result into
//! an exit code. Everything else lives in the library so tests can reach it.

fn main() {
    std::process::exit(agent_deck_watchdog::main_with_args(
        std::env::args_os().skip(1).collect(),
    ));
}
