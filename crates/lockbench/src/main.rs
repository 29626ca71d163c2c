use clap::Parser;

fn main() {
    // Bad arguments: clap prints the usage and the valid values, exit 2.
    let cli = lockbench::cli::Cli::parse();
    if let Err(e) = lockbench::cli::validate(&cli) {
        e.exit();
    }
    // Recording off until a command's `--stats` turns it on (`runner::set_stats`).
    lockbench::runner::set_stats(false).expect("turning statistics off cannot fail");
    if cfg!(debug_assertions)
        && !matches!(
            cli.cmd,
            Some(lockbench::cli::Cmd::Compare(_) | lockbench::cli::Cmd::List)
        )
    {
        eprintln!("lockbench: warning: this is a debug build; its numbers mean little (use cargo run --release)");
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if let Err(e) = lockbench::cli::execute(cli, &mut out) {
        eprintln!("lockbench: error: {e}");
        std::process::exit(1);
    }
}
