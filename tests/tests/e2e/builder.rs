//! `Xf::builder` cannot build an unsafe configuration: what is missing or malformed is an
//! error that names it, never a random secret or a made-up URL.

use std::sync::Arc;

use xf_core::{BuildError, Xf};
use xf_storage_memory::MemoryStore;
use xf_tests::TEST_SECRET;

fn builder() -> xf_core::XfBuilder {
    Xf::builder(Arc::new(MemoryStore::new()))
}

#[test]
fn a_secret_is_required() {
    let error = builder()
        .public_base_url("https://app.example.com")
        .build()
        .unwrap_err();
    assert_eq!(error, BuildError::SecretKeyMissing);
    assert!(error.to_string().contains("secret key is required"));
    let short = builder()
        .secret_key(b"31 bytes, one short of enough!!".to_vec())
        .public_base_url("https://app.example.com")
        .build()
        .unwrap_err();
    assert_eq!(short, BuildError::SecretKeyTooShort);
}

#[test]
fn a_public_base_url_is_required_and_checked() {
    let missing = builder()
        .secret_key(TEST_SECRET.to_vec())
        .build()
        .unwrap_err();
    assert_eq!(missing, BuildError::PublicBaseUrlMissing);
    for (base, status) in [
        ("app.example.com", None),
        ("https://a.example", Some("status")),
    ] {
        let mut builder = builder()
            .secret_key(TEST_SECRET.to_vec())
            .public_base_url(base);
        if let Some(status) = status {
            builder = builder.status_page_url(status);
        }
        assert!(matches!(
            builder.build().unwrap_err(),
            BuildError::InvalidUrl { .. }
        ));
    }
}

#[tokio::test]
async fn the_status_page_is_the_hosts_or_absent() {
    let xf = builder()
        .secret_key(TEST_SECRET.to_vec())
        .public_base_url("https://app.example.com/")
        .build()
        .unwrap();
    assert_eq!(xf.config().public_base_url, "https://app.example.com");
    let health = serde_json::to_value(xf.health().await).unwrap();
    assert!(health.get("statusPage").is_none(), "{health}");
    let xf = builder()
        .secret_key(TEST_SECRET.to_vec())
        .public_base_url("https://app.example.com")
        .status_page_url("https://status.example.com")
        .build()
        .unwrap();
    let health = serde_json::to_value(xf.health().await).unwrap();
    assert_eq!(health["statusPage"], "https://status.example.com");
}
