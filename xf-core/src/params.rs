//! Request values whose rules are written once.
//!
//! Each type here both parses (its `Deserialize` impl, used for query strings and JSON bodies
//! alike) and describes itself (its OpenAPI schema), from the same constants: the pattern a
//! value is checked against is the very string the document publishes. So the document and
//! the server cannot drift apart, and a property-based run against the document (the CI's
//! schemathesis check) finds no value that one accepts and the other refuses.
//!
//! Patterns are ECMA-262 regular expressions as OpenAPI 3.1 reads them, kept to the subset
//! that means the same in the `regex` crate: ASCII classes, `^`/`$` anchors, no look-around.

use std::fmt;
use std::sync::LazyLock;

use regex::Regex;
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
#[cfg(feature = "openapi")]
use utoipa::openapi::{
    schema::{ObjectBuilder, Schema, Type},
    RefOr,
};

use crate::error::{Error, Result};
pub use crate::ids::{JobId, PropertyId};

/// A pattern and its compiled form.
struct Rule {
    #[cfg_attr(not(feature = "openapi"), allow(dead_code))]
    pattern: &'static str,
    regex: LazyLock<Regex>,
}

impl Rule {
    fn matches(&self, value: &str) -> bool {
        self.regex.is_match(value)
    }
}

/// A [`Rule`] from a pattern literal. The pattern is a constant of this module, so a pattern
/// that does not compile fails every test that touches it, never a request in production.
macro_rules! rule {
    ($pattern:expr) => {
        Rule {
            pattern: $pattern,
            regex: LazyLock::new(|| {
                Regex::new($pattern).expect("the patterns of xf_core::params compile")
            }),
        }
    };
}

#[cfg(feature = "openapi")]
fn string_schema(pattern: &str, max_length: usize, description: &str) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(pattern))
        .max_length(Some(max_length))
        .description(Some(description))
        .into()
}

/// Defines a string newtype that must match `$rule` and be at most `$max` characters long.
macro_rules! checked_string {
    (
        $(#[$doc:meta])*
        $name:ident, $rule:ident, max = $max:expr, expects = $expects:literal
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub struct $name(String);

        impl $name {
            /// The longest accepted value, in characters.
            pub const MAX_LEN: usize = $max;
            /// What a valid value looks like, for error messages.
            pub const EXPECTS: &'static str = $expects;

            /// Checks `value`; `Err` says what a valid value looks like.
            pub fn parse(value: &str) -> std::result::Result<Self, &'static str> {
                if value.chars().count() <= Self::MAX_LEN && $rule.matches(value) {
                    Ok(Self(value.to_owned()))
                } else {
                    Err(Self::EXPECTS)
                }
            }

            /// The value.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The value, owned.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                Self::parse(&text).map_err(de::Error::custom)
            }
        }

        #[cfg(feature = "openapi")]
        impl utoipa::PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                string_schema($rule.pattern, Self::MAX_LEN, Self::EXPECTS)
            }
        }

        #[cfg(feature = "openapi")]
        impl utoipa::ToSchema for $name {}
    };
}

static IDEMPOTENCY_KEY: Rule = rule!(r"^[!-~]+$");
static CURSOR: Rule = rule!(r"^[A-Za-z0-9_.-]+$");
static JOB_TYPE: Rule = rule!(r"^[a-z0-9]+(-[a-z0-9]+)*$");
static CHECK_IDS: Rule = rule!(r"^[a-z0-9_]+(,[a-z0-9_]+)*$");
static URL_PREFIX: Rule = rule!(r"^[!-~]+$");
static REPORT_TOKEN: Rule = rule!(r"^[A-Za-z0-9]{32}$");
static INCLUDE: Rule = rule!(r"^(gsc|lastScan)(,(gsc|lastScan))*$");
static PROPERTY_NAME: Rule = rule!(r"^[^\x00-\x1f\x7f]*$");
/// An absolute `http`/`https` URL with a DNS host name (whose last label starts with a
/// letter, so that it can never be read as an IPv4 address), an optional port from 0 to
/// 65535, and an optional path, query and fragment of visible ASCII. Everything it matches is
/// a URL the WHATWG parser (the `url` crate) accepts, which is what makes it a rule the
/// document can state exactly. IP literals and credentials do not match.
static PROPERTY_URL: Rule = rule!(
    r"^[Hh][Tt][Tt][Pp][Ss]?://([A-Za-z0-9-]+\.)*[A-Za-z][A-Za-z0-9-]*(:([0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?([/?#][!-~]*)?$"
);

/// The `url` of a webhook: an absolute `http` or `https` URL whose host is a DNS name, an
/// IPv4 address or a bracketed IPv6 address, with an optional port, and a path and query of
/// RFC 3986 characters (percent-escapes included); no credentials, no fragment. Whether it
/// parses, its scheme is allowed and its host may be reached is checked after the pattern (a
/// 400 naming `url` when not).
static WEBHOOK_URL: Rule = rule!(
    r"^[Hh][Tt][Tt][Pp][Ss]?://([A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.?|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?(/([A-Za-z0-9._~!$&'()*+,;=:@/-]|%[0-9A-Fa-f]{2})*)?(\?([A-Za-z0-9._~!$&'()*+,;=:@/?-]|%[0-9A-Fa-f]{2})*)?$"
);
/// A webhook's name: visible text with at least one character that is not a space.
static WEBHOOK_NAME: Rule = rule!(r"^[^\x00-\x1f\x7f]*[^\x00-\x20\x7f][^\x00-\x1f\x7f]*$");

checked_string!(
    /// A webhook's `url`: an absolute `http` or `https` URL whose host is a DNS name, an IPv4
    /// address or a bracketed IPv6 address, with an optional port, path and query; no
    /// credentials, no fragment, at most 2048 characters (the pattern `WEBHOOK_URL`).
    /// Whether its scheme is allowed and its host may be reached is checked afterwards.
    WebhookUrl, WEBHOOK_URL, max = 2048,
    expects = "an absolute https URL (http where the host allows it) with a host name or IP address, an optional port, path and query, no credentials and no fragment, at most 2048 characters"
);

checked_string!(
    /// A webhook's `name`: 1 to 200 characters, no control characters, not blank.
    WebhookName, WEBHOOK_NAME, max = 200, expects = "1 to 200 characters without control characters, not blank"
);

checked_string!(
    /// `Idempotency-Key`: 1 to 128 visible ASCII characters (a UUID, say).
    IdempotencyKey, IDEMPOTENCY_KEY, max = 128, expects = "1 to 128 visible ASCII characters"
);

checked_string!(
    /// `cursor`: the opaque `meta.nextCursor` of the previous page. Its signature is checked
    /// by the list it is sent to.
    Cursor, CURSOR, max = 512, expects = "the meta.nextCursor of the previous page"
);

checked_string!(
    /// The `type` filter of `GET /jobs`: a job type such as `seo-scan`.
    JobTypeName, JOB_TYPE, max = 64, expects = "a job type such as seo-scan: lower-case letters, digits and single hyphens"
);

checked_string!(
    /// The `type` filter of the issue list: check ids, comma-separated (each must name a check
    /// of the catalogue, which the use case checks).
    CheckIdList, CHECK_IDS, max = 2048, expects = "check ids of the catalogue, comma-separated, such as title_missing,h1_missing"
);

checked_string!(
    /// The `url` filter of the issue list: the start of the pages' addresses.
    UrlPrefix, URL_PREFIX, max = 2048, expects = "the start of a page address: 1 to 2048 characters of visible ASCII"
);

checked_string!(
    /// A report token: 32 letters or digits.
    ReportToken, REPORT_TOKEN, max = 32, expects = "a report token: 32 letters or digits"
);

checked_string!(
    /// The `url` of a new property: an absolute `http` or `https` URL with a host name.
    PropertyUrl, PROPERTY_URL, max = 2048,
    expects = "an absolute http or https URL with a host name (no IP address, no credentials), at most 2048 characters of visible ASCII"
);

checked_string!(
    /// The `name` of a new property: up to 200 characters, no control characters. Leading
    /// and trailing white space is dropped; a blank name means "use the host".
    PropertyName, PROPERTY_NAME, max = 200, expects = "at most 200 characters without control characters"
);

/// `limit`: a page size from 1 to 100.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageSize(u8);

impl PageSize {
    /// The smallest page.
    pub const MIN: u8 = 1;
    /// The largest page.
    pub const MAX: u8 = 100;
    /// The page size of lists when `limit` is not sent.
    pub const DEFAULT: PageSize = PageSize(40);
    /// The page size of the webhook delivery log when `limit` is not sent.
    pub const DELIVERIES_DEFAULT: PageSize = PageSize(25);

    /// `value` if it lies in 1..=100.
    pub fn new(value: i64) -> Result<Self> {
        u8::try_from(value)
            .ok()
            .filter(|v| (Self::MIN..=Self::MAX).contains(v))
            .map(PageSize)
            .ok_or_else(|| Error::invalid("limit", Self::EXPECTS))
    }

    const EXPECTS: &'static str = "must be an integer from 1 to 100";

    /// The size.
    pub fn get(self) -> usize {
        usize::from(self.0)
    }
}

impl<'de> Deserialize<'de> for PageSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        // A query string carries the digits as text.
        let value = deserializer.deserialize_any(IntegerVisitor { text: true })?;
        u8::try_from(value)
            .ok()
            .filter(|v| (Self::MIN..=Self::MAX).contains(v))
            .map(PageSize)
            .ok_or_else(|| de::Error::custom(Self::EXPECTS))
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for PageSize {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .minimum(Some(Self::MIN))
            .maximum(Some(Self::MAX))
            .description(Some("Page size, 1 to 100 (default 40)"))
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for PageSize {}

/// `maxPages` and `maxDepth` of a scan: an integer from 1 to 1,000,000,000, clamped to the
/// plan's crawl limits when it exceeds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrawlBudget(u64);

impl CrawlBudget {
    /// The largest budget a request may name (before clamping to the plan's).
    pub const MAX: u64 = 1_000_000_000;
    const EXPECTS: &'static str = "must be an integer from 1 to 1000000000";

    /// `value` if it lies in 1..=[`Self::MAX`].
    pub fn new(value: u64) -> Option<Self> {
        (1..=Self::MAX).contains(&value).then_some(Self(value))
    }

    /// The budget.
    pub fn get(self) -> u64 {
        self.0
    }
}

/// A JSON body's integer (as JSON Schema reads one: `1.0` is one, `"5"` is a string) that
/// `new` accepts; anything else is an error saying what `expects`.
fn body_integer<'de, D: Deserializer<'de>, T>(
    deserializer: D,
    new: impl FnOnce(u64) -> Option<T>,
    expects: impl fmt::Display,
) -> std::result::Result<T, D::Error> {
    let value = deserializer.deserialize_any(IntegerVisitor { text: false })?;
    u64::try_from(value)
        .ok()
        .and_then(new)
        .ok_or_else(|| de::Error::custom(expects))
}

/// The schema of an integer from `min` to `max`.
#[cfg(feature = "openapi")]
fn integer_schema(min: u64, max: u64) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(min))
        .maximum(Some(max))
        .into()
}

impl<'de> Deserialize<'de> for CrawlBudget {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        body_integer(deserializer, Self::new, Self::EXPECTS)
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for CrawlBudget {
    fn schema() -> RefOr<Schema> {
        integer_schema(1, Self::MAX)
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for CrawlBudget {}

/// `dayOfMonth` of a monthly scan schedule: 1 to 31, read as JSON Schema reads an integer
/// (`1.0` is one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DayOfMonth(u8);

impl DayOfMonth {
    const EXPECTS: &'static str = "must be an integer from 1 to 31";

    /// `value` if it lies in 1..=31.
    pub fn new(value: u64) -> Option<Self> {
        u8::try_from(value)
            .ok()
            .filter(|day| (1..=31).contains(day))
            .map(DayOfMonth)
    }

    /// The day.
    pub fn get(self) -> u8 {
        self.0
    }
}

impl<'de> Deserialize<'de> for DayOfMonth {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        body_integer(deserializer, Self::new, Self::EXPECTS)
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for DayOfMonth {
    fn schema() -> RefOr<Schema> {
        integer_schema(1, 31)
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for DayOfMonth {}

/// The largest count an admin request may set or add (a limit override, a usage increment):
/// far beyond any real figure, and safe in every store's integer columns.
pub const MAX_ADMIN_COUNT: u64 = 1_000_000_000_000;

/// `#[serde(deserialize_with)]` of the admin API's counts: an integer as JSON Schema defines
/// one (`5` and `5.0` alike), from 0 to [`MAX_ADMIN_COUNT`].
pub fn admin_count<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<u64, D::Error> {
    body_integer(
        deserializer,
        |v| (v <= MAX_ADMIN_COUNT).then_some(v),
        format_args!("must be an integer from 0 to {MAX_ADMIN_COUNT}"),
    )
}

/// `#[serde(deserialize_with)]` of an optional `u64` read as JSON Schema defines an integer
/// (`5` and `5.0` alike); `null` or left out is `None`. Any `u64` is taken: stored values are
/// read with it too, and a request's bounds are checked where it is handled.
pub fn optional_count<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Option<u64>, D::Error> {
    struct Count(u64);
    impl<'de> Deserialize<'de> for Count {
        fn deserialize<D: Deserializer<'de>>(
            deserializer: D,
        ) -> std::result::Result<Self, D::Error> {
            let value = deserializer.deserialize_any(IntegerVisitor { text: false })?;
            u64::try_from(value)
                .map(Count)
                .map_err(|_| de::Error::custom("must be a whole number of at least 0"))
        }
    }
    Ok(Option::<Count>::deserialize(deserializer)?.map(|count| count.0))
}

/// `#[serde(deserialize_with)]` of a count a `PATCH` may set or clear: with
/// `#[serde(default)]`, left out is `None`, `null` is `Some(None)`, a count `Some(Some(n))`.
pub fn patched_count<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Option<Option<u64>>, D::Error> {
    optional_count(deserializer).map(Some)
}

/// `#[serde(deserialize_with)]` of an optional object field: `null` or left out is `None`,
/// an object is read as `T`, and anything else (serde would take an array as a struct's
/// fields in order) is an error.
pub fn optional_object<'de, D, T>(deserializer: D) -> std::result::Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    match serde_json::Value::deserialize(deserializer)? {
        serde_json::Value::Null => Ok(None),
        object @ serde_json::Value::Object(_) => serde_json::from_value(object)
            .map(Some)
            .map_err(de::Error::custom),
        _ => Err(de::Error::custom("must be an object")),
    }
}

/// Reads an integer the way JSON Schema defines one: a JSON number with no fractional part
/// (so `5` and `5.0` alike), or, with `text` (query strings, where every value is text), its
/// decimal digits. Anything else is an error that says an integer was expected.
struct IntegerVisitor {
    text: bool,
}

impl Visitor<'_> for IntegerVisitor {
    type Value = i128;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer")
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> std::result::Result<i128, E> {
        Ok(i128::from(value))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> std::result::Result<i128, E> {
        Ok(i128::from(value))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> std::result::Result<i128, E> {
        // Integral and far beyond any bound here: saturating is exact enough to be refused.
        if value.is_finite() && value.fract() == 0.0 {
            Ok(value as i128)
        } else {
            Err(E::custom("must be an integer"))
        }
    }

    fn visit_str<E: de::Error>(self, value: &str) -> std::result::Result<i128, E> {
        if !self.text {
            return Err(E::custom("must be an integer"));
        }
        let digits = value.strip_prefix('+').unwrap_or(value);
        if digits.is_empty()
            || !digits
                .trim_start_matches('-')
                .bytes()
                .all(|b| b.is_ascii_digit())
        {
            return Err(E::custom("must be an integer"));
        }
        // Only the bound check is left, and a number this long is out of every bound.
        Ok(digits
            .parse::<i128>()
            .unwrap_or(if digits.starts_with('-') {
                i128::MIN
            } else {
                i128::MAX
            }))
    }
}

/// `include`: enrichments of a property, comma-separated (`gsc`, `lastScan`, or both).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Includes {
    /// `gsc`
    pub gsc: bool,
    /// `lastScan`
    pub last_scan: bool,
}

impl Includes {
    const EXPECTS: &'static str =
        "a comma-separated list of: gsc, lastScan (at most 64 characters)";
    const MAX_LEN: usize = 64;

    /// Parses the comma-separated list; an unknown or empty entry is a validation error.
    pub fn parse(value: &str) -> Result<Self> {
        if value.len() > Self::MAX_LEN || !INCLUDE.matches(value) {
            return Err(Error::invalid(
                "include",
                format!("must be {}", Self::EXPECTS),
            ));
        }
        Ok(value.split(',').fold(Includes::default(), |mut acc, part| {
            match part {
                "gsc" => acc.gsc = true,
                _ => acc.last_scan = true,
            }
            acc
        }))
    }
}

impl<'de> Deserialize<'de> for Includes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Includes::parse(&text).map_err(|_| de::Error::custom(format!("must be {}", Self::EXPECTS)))
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for Includes {
    fn schema() -> RefOr<Schema> {
        string_schema(
            INCLUDE.pattern,
            Self::MAX_LEN,
            "Comma-separated enrichments: gsc, lastScan",
        )
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for Includes {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles() {
        for rule in [
            &IDEMPOTENCY_KEY,
            &CURSOR,
            &JOB_TYPE,
            &CHECK_IDS,
            &URL_PREFIX,
            &REPORT_TOKEN,
            &INCLUDE,
            &PROPERTY_NAME,
            &PROPERTY_URL,
            &WEBHOOK_URL,
            &WEBHOOK_NAME,
        ] {
            assert!(!rule.matches("\u{0}"), "{}", rule.pattern);
        }
    }

    #[test]
    fn property_urls_the_pattern_accepts_parse() {
        for good in [
            "https://example.com",
            "HTTP://Example.COM:443/Shop?q=1#top",
            "http://localhost:65535/",
            "http://a-b.c0/x",
            "http://shop.example.com?x=1",
        ] {
            PropertyUrl::parse(good).unwrap_or_else(|_| panic!("{good}"));
            url::Url::parse(good).unwrap_or_else(|e| panic!("{good}: {e}"));
        }
        for bad in [
            "",
            " https://example.com",
            "https://example.com\n",
            "example.com",
            "ftp://example.com",
            "https://user:pw@example.com",
            "http://127.0.0.1/",
            "http://1.2.3.4.5/",
            "http://example.com:65536/",
            "http://",
            "http://example.com/a b",
        ] {
            assert!(PropertyUrl::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn webhook_urls_the_pattern_accepts_parse() {
        for good in [
            "https://hooks.example.com",
            "HTTPS://Hooks.Example.COM:8443/in/x?a=1&b=%20",
            "http://127.0.0.1:9000/hooks",
            "https://[::ffff:127.0.0.1]/",
            "https://example.com./a-b_c~d",
        ] {
            WebhookUrl::parse(good).unwrap_or_else(|_| panic!("{good}"));
            url::Url::parse(good).unwrap_or_else(|e| panic!("{good}: {e}"));
        }
        for bad in [
            "",
            "hooks.example.com",
            "ftp://hooks.example.com/",
            "https://user:pw@hooks.example.com/",
            "https://7(&jeoml)/#U^",
            "https://hooks.example.com/#top",
            "https://hooks.example.com/a^b",
            "https://hooks.example.com/%zz",
            "https://a..b/",
            "https:///x",
        ] {
            assert!(WebhookUrl::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn includes_are_exact() {
        assert_eq!(
            Includes::parse("gsc,lastScan").unwrap(),
            Includes {
                gsc: true,
                last_scan: true
            }
        );
        assert_eq!(
            Includes::parse("lastScan").unwrap(),
            Includes {
                gsc: false,
                last_scan: true
            }
        );
        let long = vec!["gsc"; 17].join(",");
        for bad in ["", "gsc,", "gsc,owner", " gsc", "GSC", long.as_str()] {
            assert!(Includes::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn integers_follow_json_schema() {
        let page = |json: &str| serde_json::from_str::<PageSize>(json).map(PageSize::get);
        assert_eq!(page("5").unwrap(), 5);
        assert_eq!(page("5.0").unwrap(), 5);
        assert_eq!(page("\"100\"").unwrap(), 100);
        for bad in ["0", "101", "5.5", "\"\"", "\"1e2\"", "true", "1e300", "-1"] {
            assert!(page(bad).is_err(), "{bad}");
        }
        let budget = |json: &str| serde_json::from_str::<CrawlBudget>(json).map(CrawlBudget::get);
        assert_eq!(budget("1000000000").unwrap(), 1_000_000_000);
        assert!(budget("\"5\"").is_err());
        assert!(budget("1000000001").is_err());
        assert!(budget("11089872382775549266755584").is_err());
    }
}
