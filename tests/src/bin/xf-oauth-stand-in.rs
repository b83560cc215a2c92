//! A stand-in of Google's consent screen, token endpoint and YouTube's `channels.list`, for
//! trying connect links on one machine without a Google app (docs/connecting-accounts.md).
//! The first hundred consents are given at once, for the YouTube channel `UC-local-studio`
//! ("Local Studio"); the tests' platform stand-in (`xf_tests::platforms`) answers as Google
//! does.
//!
//! Run with: `cargo run -q -p xf-tests --bin xf-oauth-stand-in`. It listens on a free port of
//! loopback, prints on one line the xf-server flags that point YouTube there (its app's client
//! id and secret, and its consent, token and API addresses), and serves until it is stopped.

use xf_tests::platforms::{PlatformStandIn, YOUTUBE_CLIENT_ID, YOUTUBE_CLIENT_SECRET};

/// Consents given before the stand-in answers like a user who declines.
const CONSENTS: usize = 100;

#[tokio::main]
async fn main() {
    let stand_in = PlatformStandIn::start().await;
    for _ in 0..CONSENTS {
        stand_in.consent(
            "youtube",
            "ya29.local-stand-in",
            Some("1//local-stand-in"),
            &[("UC-local-studio", "Local Studio")],
        );
    }
    let youtube = stand_in.youtube_config();
    println!(
        "--youtube-client-id {YOUTUBE_CLIENT_ID} --youtube-client-secret {YOUTUBE_CLIENT_SECRET} \
         --youtube-token-url {} --youtube-authorize-url {} --youtube-upload-base-url {}",
        youtube.token_url, youtube.authorize_url, youtube.upload_base_url
    );
    // Serve until stopped: the stand-in's server runs on this runtime.
    std::future::pending::<()>().await;
}
