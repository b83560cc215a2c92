//! What the crawler reads from response headers (and from their HTML twin, `<meta
//! http-equiv="refresh">`). Every function here is total: any text gives an answer, never a
//! panic.

use std::time::Duration;

/// A refresh instruction: `Refresh: 5; url=/next` or `<meta http-equiv="refresh"
/// content="5; url=/next">`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refresh {
    /// Seconds before the refresh (fractions dropped, as browsers do).
    pub seconds: u64,
    /// Where it leads, as written (not yet resolved); `None` reloads the page itself.
    pub url: Option<String>,
}

/// Parses a refresh value as browsers do (the HTML standard's "shared declarative refresh
/// steps"): a number of seconds (digits, or a `.` and more), then optionally `;` or `,` and
/// the address, written bare, as `url=...`, or quoted (`url='...'`); case does not matter.
/// `None` when the value is no refresh at all (`"soon"`, `"-1"`, `""`).
pub fn parse_refresh(value: &str) -> Option<Refresh> {
    let is_space = |c: char| matches!(c, '\t' | '\n' | '\x0C' | '\r' | ' ');
    let rest = value.trim_start_matches(is_space);
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let (number, mut rest) = rest.split_at(digits);
    if number.is_empty() && !rest.starts_with('.') {
        return None;
    }
    // Too many digits for a u64 is a very long wait; it is still a refresh.
    let seconds = number
        .parse::<u64>()
        .unwrap_or(if number.is_empty() { 0 } else { u64::MAX });
    rest = rest.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    if rest.is_empty() {
        return Some(Refresh { seconds, url: None });
    }
    if !rest.starts_with([';', ',']) && !rest.starts_with(is_space) {
        return None;
    }
    rest = rest.trim_start_matches(is_space);
    if let Some(after) = rest.strip_prefix([';', ',']) {
        rest = after;
    }
    rest = rest.trim_start_matches(is_space);
    if rest.is_empty() {
        return Some(Refresh { seconds, url: None });
    }
    let url = refresh_url(rest, is_space);
    Some(Refresh {
        seconds,
        url: (!url.is_empty()).then(|| url.to_owned()),
    })
}

/// The address part of a refresh value: after an optional `url` and `=`, without the quotes.
fn refresh_url(text: &str, is_space: impl Fn(char) -> bool + Copy) -> &str {
    let mut rest = text;
    let has_url_key = rest.get(..3).is_some_and(|k| k.eq_ignore_ascii_case("url"));
    if has_url_key {
        let after_key = rest[3..].trim_start_matches(is_space);
        match after_key.strip_prefix('=') {
            Some(after_equals) => rest = after_equals.trim_start_matches(is_space),
            // `url` not followed by `=`: the whole text is the address.
            None => return text,
        }
    }
    match rest.chars().next() {
        Some(quote @ ('"' | '\'')) => {
            let inner = &rest[1..];
            inner.split(quote).next().unwrap_or(inner)
        }
        _ => rest,
    }
}

/// `Retry-After` in seconds (the HTTP-date form is not read: it gives `None`).
pub fn retry_after(value: &str) -> Option<Duration> {
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// Whether an `X-Robots-Tag` value keeps the page out of every search engine's index:
/// `noindex` or `none` among its comma-separated directives, not restricted to one crawler
/// (`googlebot: noindex` speaks to Google alone and is not counted).
pub fn robots_tag_noindex(value: &str) -> bool {
    let mut for_everyone = true;
    for part in value.split(',') {
        let mut directive = part.trim();
        if let Some((name, rest)) = directive.split_once(':') {
            // `unavailable_after: <date>` is a directive with a value; anything else before a
            // colon names the crawler the directives after it are for.
            if name.trim().eq_ignore_ascii_case("unavailable_after") {
                continue;
            }
            for_everyone = false;
            directive = rest.trim();
        }
        if for_everyone
            && (directive.eq_ignore_ascii_case("noindex") || directive.eq_ignore_ascii_case("none"))
        {
            return true;
        }
    }
    false
}

/// Whether a `Content-Type` is HTML (a missing one is sniffed as HTML, as browsers do for
/// pages).
pub fn is_html(content_type: Option<&str>) -> bool {
    content_type.is_none_or(|ct| {
        let essence = ct.split(';').next().unwrap_or_default().trim();
        essence.eq_ignore_ascii_case("text/html")
            || essence.eq_ignore_ascii_case("application/xhtml+xml")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refresh(seconds: u64, url: Option<&str>) -> Option<Refresh> {
        Some(Refresh {
            seconds,
            url: url.map(str::to_owned),
        })
    }

    #[test]
    fn refresh_values_read_as_browsers_read_them() {
        let cases = [
            ("0; url=/next", refresh(0, Some("/next"))),
            ("0;URL='/quoted path'", refresh(0, Some("/quoted path"))),
            (
                "5, url = \"https://x.example/\" trailing",
                refresh(5, Some("https://x.example/")),
            ),
            ("  3 ;  Url=/a", refresh(3, Some("/a"))),
            ("0 /bare", refresh(0, Some("/bare"))),
            ("0; /bare", refresh(0, Some("/bare"))),
            ("1.5; url=/half", refresh(1, Some("/half"))),
            (".5;url=/dot", refresh(0, Some("/dot"))),
            ("30", refresh(30, None)),
            ("30;", refresh(30, None)),
            ("0; url=", refresh(0, None)),
            ("0; urlx=/y", refresh(0, Some("urlx=/y"))),
            ("0; url '/no-equals'", refresh(0, Some("url '/no-equals'"))),
            ("0; url='unterminated", refresh(0, Some("unterminated"))),
            (
                "99999999999999999999999; url=/far",
                refresh(u64::MAX, Some("/far")),
            ),
            ("soon", None),
            ("-1; url=/x", None),
            ("", None),
            ("5x; url=/x", None),
        ];
        for (value, expected) in cases {
            assert_eq!(parse_refresh(value), expected, "{value:?}");
        }
    }

    #[test]
    fn robots_tags_for_everyone_or_one_crawler() {
        assert!(robots_tag_noindex("noindex"));
        assert!(robots_tag_noindex("NoIndex, nofollow"));
        assert!(robots_tag_noindex("none"));
        assert!(robots_tag_noindex("unavailable_after: 2020-01-01, noindex"));
        assert!(!robots_tag_noindex("nofollow"));
        assert!(!robots_tag_noindex("googlebot: noindex"));
        assert!(!robots_tag_noindex("otherbot: nofollow, noindex"));
        assert!(!robots_tag_noindex(""));
    }

    #[test]
    fn content_types() {
        assert!(is_html(None));
        assert!(is_html(Some("text/html; charset=utf-8")));
        assert!(is_html(Some(" TEXT/HTML")));
        assert!(is_html(Some("application/xhtml+xml")));
        assert!(!is_html(Some("text/htmlx")));
        assert!(!is_html(Some("application/pdf")));
        assert!(retry_after(" 120 ") == Some(Duration::from_secs(120)));
        assert!(retry_after("Wed, 21 Oct 2015 07:28:00 GMT").is_none());
    }
}
