//! Run with: `cargo run -p xf-server -- --demo` (all flags: `cargo run -p xf-server -- --help`).

use std::process::ExitCode;

use clap::Parser;

/// mimalloc rather than glibc's malloc: under load a long-lived server's heap fragments, and
/// glibc's allocator then spends a fifth of the request path searching its bins (measured in
/// docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    let config = xf_server::Config::parse();
    // Held to the end: dropping it writes out the queued log lines.
    let started = match xf_server::init_logging(config.log_format, config.otlp_endpoint.as_deref())
    {
        Ok(_log) => xf_server::run(config).await,
        Err(error) => Err(error),
    };
    match started {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("xf-server: {error}");
            ExitCode::FAILURE
        }
    }
}
