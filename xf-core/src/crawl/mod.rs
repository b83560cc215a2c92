//! The site crawler behind `seo-scan` jobs: what it fetches, how it reads pages, and the checks
//! it runs. The parsing and analysis modules are pure (bytes in, facts out); the network lives
//! in `fetch` (feature `net`).

#[cfg(feature = "crawler")]
pub mod checks;
#[cfg(feature = "render")]
pub mod chromium;
#[cfg(feature = "crawler")]
pub mod crawler;
#[cfg(feature = "crawler")]
pub mod fetch;
pub mod headers;
#[cfg(feature = "crawler")]
pub mod html;
#[cfg(feature = "crawler")]
mod markup;
#[cfg(feature = "crawler")]
pub mod render;
pub mod robots;
#[cfg(feature = "crawler")]
pub mod scan;
pub mod sitemap;
pub mod urls;

/// The crawler's hash maps: fast, and seeded at random per process, since their keys are
/// addresses the crawled site chose.
#[cfg(feature = "crawler")]
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// The set of [`FastMap`].
#[cfg(feature = "crawler")]
pub(crate) type FastSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;

/// The message of a panic's payload, when it has one.
#[cfg(feature = "crawler")]
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> Option<String> {
    payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
}
