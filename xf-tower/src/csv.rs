//! CSV responses: content negotiation and the streamed body of an export.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::header::{CONTENT_DISPOSITION, CONTENT_TYPE, VARY};
use http::HeaderValue;
use xf_core::export::IssueCsv;

/// Whether an `Accept` header asks for CSV before JSON: `text/csv` is listed with a weight
/// above 0, and above the best weight JSON gets (`application/json`, `application/*`, `*/*`);
/// on a tie, CSV wins unless `application/json` itself is named. Anything unreadable in the
/// header counts as nothing, so a broken header gets JSON.
pub fn prefers_csv(accept: &str) -> bool {
    let mut csv = 0.0_f32;
    let mut json = 0.0_f32;
    let mut json_named = false;
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let weight = parts
            .filter_map(|param| param.split_once('='))
            .find(|(name, _)| name.trim().eq_ignore_ascii_case("q"))
            .map_or(Some(1.0), |(_, value)| {
                value
                    .trim()
                    .parse::<f32>()
                    .ok()
                    .filter(|q| (0.0..=1.0).contains(q))
            });
        let Some(weight) = weight else { continue };
        match media.as_str() {
            "text/csv" => csv = csv.max(weight),
            "application/json" => {
                json = json.max(weight);
                json_named = true;
            }
            "application/*" | "*/*" => json = json.max(weight),
            _ => {}
        }
    }
    csv > 0.0 && (csv > json || (csv == json && !json_named))
}

/// A `200` whose body is the export, streamed chunk by chunk. A store failure after the
/// headers were sent ends the body early (the client sees a truncated transfer), and is
/// logged.
pub fn response(export: IssueCsv) -> Response {
    let disposition = format!("attachment; filename=\"{}\"", export.file_name());
    let stream = futures::stream::unfold(Some(export), |export| async move {
        let mut export = export?;
        match export.next_chunk().await {
            Ok(Some(chunk)) => Some((Ok(chunk), Some(export))),
            Ok(None) => None,
            Err(error) => {
                tracing::error!(%error, "the CSV export stopped: the store failed");
                Some((Err(std::io::Error::other(error.to_string())), None))
            }
        }
    });
    let mut response = Body::from_stream(stream).into_response();
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static(IssueCsv::CONTENT_TYPE),
    );
    headers.insert(VARY, HeaderValue::from_static("accept"));
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        headers.insert(CONTENT_DISPOSITION, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn csv_is_served_when_asked_for_first() {
        for (accept, csv) in [
            ("text/csv", true),
            ("text/csv, */*;q=0.5", true),
            ("text/csv, */*", true),
            ("application/json, text/csv", false),
            ("application/json;q=0.5, text/csv", true),
            ("text/csv;q=0", false),
            ("text/csv;q=abc", false),
            ("*/*", false),
            ("", false),
            ("TEXT/CSV; Q=0.9, application/json; q=0.8", true),
        ] {
            assert_eq!(prefers_csv(accept), csv, "{accept}");
        }
    }

    proptest! {
        /// Whatever else a header holds, naming JSON first at full weight keeps JSON.
        #[test]
        fn json_named_at_full_weight_is_never_overruled(rest in any::<String>()) {
            let first = format!("application/json, {rest}");
            let last = format!("{rest},application/json");
            prop_assert!(!prefers_csv(&first));
            prop_assert!(!prefers_csv(&last));
        }
    }
}
