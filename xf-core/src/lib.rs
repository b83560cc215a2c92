//! # xf-core
//!
//! The domain of the xf APIs, free of HTTP and SQL: models, the one [`Error`] type, API-key
//! authentication, the plan catalog, rate limiting, idempotency, signed cursors, every use
//! case as a method of the [`Xf`] facade, and the background [`runtime`] that runs jobs.
//! Storage is one trait per aggregate, summed up in [`store::Store`], with an in-memory and a
//! PostgreSQL implementation in sibling crates; `testing` (feature `testing`) holds the
//! conformance suite both of them pass.
//!
//! A host builds one `Xf` over a store and mounts the HTTP service of `xf-tower` on it:
//!
//! ```text
//! let xf = xf_core::Xf::builder(Arc::new(xf_storage_memory::MemoryStore::new()))
//!     .secret_key(secret)
//!     .public_base_url("https://app.example.com")
//!     .build()?;
//! let service = xf_tower::XfService::new(xf);
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod api;
pub mod auth;
pub mod connect;
pub mod crawl;
pub mod cursor;
pub mod error;
pub mod export;
pub mod gsc;
pub mod hash;
pub mod ids;
pub mod json;
pub mod media;
pub mod metrics;
pub mod model;
pub mod net;
pub mod params;
pub mod plans;
pub mod runtime;
mod secret;
pub mod store;
#[cfg(feature = "testing")]
pub mod testing;
pub mod text;
pub mod time;
pub mod webhooks;
mod xf;

pub use error::{Error, Result, StoreError};
pub use xf::*;
