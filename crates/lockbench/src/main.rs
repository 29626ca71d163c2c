use clap::Parser;

fn main() {
    // Bad arguments: clap prints the usage and the valid values, exit 2.
    let cli = lockbench::cli::Cli::parse();
    if let Err(e) = lockbench::cli::validate(&cli) {
        e.exit();
    }
    // A build with feature `stats` records only under `--stats` (matrix, workload), which
    // turns recording back on: the other commands measure the hooks switched off.
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
