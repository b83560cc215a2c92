//! Run with: cargo run -p axum-host
//!
//! Builds xf over the in-memory store, creates the demo organization, prints its keys, and
//! serves the host app on http://127.0.0.1:3000 with all of xf mounted and its background
//! runtime running, until Ctrl-C stops both gracefully.

use std::sync::Arc;

use xf_core::Xf;
use xf_storage_memory::MemoryStore;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // One process over an in-memory store: a random secret is fine (see `Xf::builder`).
    let xf = Xf::builder(Arc::new(MemoryStore::new()))
        .secret_key(Xf::random_secret_key())
        .public_base_url("http://127.0.0.1:3000")
        .build()?;
    let demo = xf.ensure_demo_organization(None, None).await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    println!(
        "axum host on http://127.0.0.1:3000 (xf: /api/v1, /r, /m, and the media API unprefixed)"
    );
    println!("demo organization {}", demo.organization.id);
    println!("  live key: {}", demo.live_key);
    println!("  test key: {}", demo.test_key);
    axum_host::serve_until(listener, xf, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await?;
    Ok(())
}
