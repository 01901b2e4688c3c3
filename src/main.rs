//! The `rivumi-compact` binary: parse the command line, run, map to an exit code.

// Dataset mode and batches make many small allocations on every core: mimalloc keeps
// them thread-local and cheap (measured in bench/run.sh).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let cli = rivumi_compact::cli::Cli::parse_or_exit();
    let code = rivumi_compact::cli::dispatch(cli);
    std::process::exit(code.code());
}
