//! Run with: cargo run -p hyper-host
//!
//! Builds xf over the in-memory store, creates the demo organization, prints its keys, and
//! serves the host on http://127.0.0.1:3000 with all of xf mounted (the admin API too when
//! `XF_ADMIN_TOKEN` is set) and its background runtime running, until SIGINT (Ctrl-C) or
//! SIGTERM stops both gracefully.

use std::sync::Arc;

use xf_core::Xf;
use xf_storage_memory::MemoryStore;
use xf_tower::Mounts;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // One process over an in-memory store: a random secret is fine (see `Xf::builder`).
    let xf = Xf::builder(Arc::new(MemoryStore::new()))
        .secret_key(Xf::random_secret_key())
        .public_base_url("http://127.0.0.1:3000")
        .build()?;
    let demo = xf.ensure_demo_organization(None, None).await?;
    // `GET /metrics` for the operator's Prometheus (docs/observability.md).
    let mut mounts = Mounts::new(xf).metrics();
    if let Some(token) = std::env::var("XF_ADMIN_TOKEN")
        .ok()
        .filter(|t| !t.trim().is_empty())
    {
        mounts = mounts.admin(token);
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    println!(
        "hyper host on http://127.0.0.1:3000: xf under /api/v1, /r, /m, /admin, /livez, /readyz, /metrics"
    );
    println!("demo organization {}", demo.organization.id);
    println!("  live key: {}", demo.live_key);
    println!("  test key: {}", demo.test_key);
    hyper_host::serve(listener, mounts, xf_tower::shutdown_signal()).await;
    Ok(())
}
