//! The `rivumi-compact` binary: parse the command line, run, map to an exit code.

use clap::Parser;

fn main() {
    let cli = rivumi_compact::cli::Cli::parse();
    let code = rivumi_compact::cli::dispatch(cli);
    std::process::exit(code.code());
}
