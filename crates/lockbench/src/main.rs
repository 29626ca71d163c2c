use clap::Parser;

fn main() {
    // Bad arguments: clap prints the usage and the valid values, exit 2.
    let cli = lockbench::cli::Cli::parse();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if let Err(e) = lockbench::cli::execute(cli, &mut out) {
        eprintln!("lockbench: error: {e}");
        std::process::exit(1);
    }
}
