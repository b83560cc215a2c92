//! The site crawler behind `seo-scan` jobs: what it fetches, how it reads pages, and the checks
//! it runs. The parsing and analysis modules are pure (bytes in, facts out); the network lives
//! in `fetch` (feature `net`).

pub mod checks;
pub mod crawler;
pub mod fetch;
pub mod headers;
pub mod html;
pub mod robots;
pub mod scan;
pub mod sitemap;
pub mod urls;

/// The first `max` characters of `text`, with an ellipsis when there were more: how the
/// crawler quotes what a site sent (a link, a robots.txt line, a sitemap line) in evidence.
pub(crate) fn excerpt(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

/// The message of a panic's payload, when it has one.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> Option<String> {
    payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
}
