//! The `rivumi-compact` binary: parse the command line, run, map to an exit code.

// Dataset mode and batches make many small allocations on every core: mimalloc keeps
// them thread-local and cheap (measured in bench/run.sh: ~25% less CPU than glibc's
// malloc on the dataset case). It is built with `no_thp`: asking for transparent huge
// pages for its arenas made a 156 MB run peak at 1.8× the input (2 MB pages touched
// by a few small blocks) instead of 1.4×.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let cli = rivumi_compact::cli::Cli::parse_or_exit();
    let code = rivumi_compact::cli::dispatch(cli);
    std::process::exit(code.code());
}
